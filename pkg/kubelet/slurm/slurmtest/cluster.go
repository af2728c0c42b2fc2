package slurmtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Binaries are the programs a cluster needs, by package: the daemons and the
// commands a Slurm user (and the provider) runs.
var Binaries = []string{
	"munged", "mungekey", "munge", // munge
	"slurmctld",            // slurmctld
	"slurmd", "slurmstepd", // slurmd
	"sbatch", "squeue", "scancel", "scontrol", "sinfo", "sacct", // slurm-client
}

// Partition is the name of the cluster's one partition, the default.
const Partition = "debug"

// Config shapes the cluster. The zero value is a node with the host's CPUs and
// 90% of its memory, no GPUs.
type Config struct {
	// CPUs is the node's CPU count; zero means the host's.
	CPUs int
	// MemoryMiB is the node's RealMemory; zero means 90% of MemTotal.
	MemoryMiB int
	// GPUs, when positive, gives the node that many GPUs as GRES (gpu) without
	// device files: --gres=gpu:N schedules and counts, but nothing is bound.
	GPUs int
	// DefMemPerCPU is the memory a job gets per CPU when it does not ask
	// (--mem); zero means 256 MiB. Without it a job would take the whole
	// node's memory and jobs would run one at a time.
	DefMemPerCPU int
	// Extra lines are appended to slurm.conf.
	Extra []string
	// ReadyTimeout bounds the wait for the node to be idle; zero means 90s.
	ReadyTimeout time.Duration
}

// Cluster is a running one-host Slurm cluster.
type Cluster struct {
	// Name is the ClusterName, unique per cluster.
	Name string
	// Dir holds everything: slurm.conf, the munge key and socket, state,
	// spool, pid and log files.
	Dir string
	// Conf is the path of slurm.conf; commands find it through SLURM_CONF.
	Conf string
	// MungeSocket is munged's socket (AuthInfo=socket=...).
	MungeSocket string
	// NodeName is the one node, the host's short name.
	NodeName string
	// CPUs, MemoryMiB and GPUs are the node's configured resources.
	CPUs, MemoryMiB, GPUs int
	// CtldPort and SlurmdPort are the TCP ports the daemons listen on.
	CtldPort, SlurmdPort int
	// StartupTime is how long Start took, from the first daemon to an idle node.
	StartupTime time.Duration

	daemons []*daemon // in start order; stopped in reverse
}

type daemon struct {
	name string
	cmd  *exec.Cmd
	out  *os.File
	done chan struct{}
	err  error
}

// Env is the environment for Slurm commands against this cluster: the
// process's own with SLURM_CONF pointing at this cluster's slurm.conf.
func (c *Cluster) Env() []string {
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLURM_CONF=") {
			env = append(env, kv)
		}
	}
	return append(env, "SLURM_CONF="+c.Conf)
}

// Command is a Slurm command (sbatch, squeue, ...) for this cluster, run in Dir.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.Env()
	cmd.Dir = c.Dir
	return cmd
}

// Output runs a Slurm command and returns its standard output, trimmed; the
// error carries its standard error.
func (c *Cluster) Output(ctx context.Context, name string, args ...string) (string, error) {
	cmd := c.Command(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return strings.TrimSpace(stdout.String()), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Job returns the fields of `scontrol show job -o ID` (JobState, Reason,
// ExitCode, TimeLimit, ...).
func (c *Cluster) Job(ctx context.Context, id string) (map[string]string, error) {
	out, err := c.Output(ctx, "scontrol", "show", "job", "-o", id)
	if err != nil {
		return nil, err
	}
	return ParseOneLine(out), nil
}

// WaitJob polls the job until done returns true for its fields, or ctx ends.
func (c *Cluster) WaitJob(ctx context.Context, id string, done func(map[string]string) bool) (map[string]string, error) {
	var last map[string]string
	for {
		f, err := c.Job(ctx, id)
		if err == nil {
			last = f
			if done(f) {
				return f, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("wait for job %s (last %s %s): %w", id, last["JobState"], last["Reason"], ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ParseOneLine splits a `scontrol show ... -o` line into its Key=Value fields.
// A value may hold spaces (OS=Linux 6.1 #1 SMP): a word that does not look like
// Key=Value continues the previous value.
func ParseOneLine(line string) map[string]string {
	fields := map[string]string{}
	last := ""
	for _, w := range strings.Fields(line) {
		k, v, ok := strings.Cut(w, "=")
		if ok && k != "" && isKey(k) {
			fields[k] = v
			last = k
			continue
		}
		if last != "" {
			fields[last] += " " + w
		}
	}
	return fields
}

func isKey(k string) bool {
	for _, r := range k {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '/' || r == ':' || r == '.') {
			return false
		}
	}
	return k[0] >= 'A' && k[0] <= 'Z'
}

// CheckBinaries reports the programs of Binaries that are not on PATH.
func CheckBinaries() error {
	var missing []string
	for _, b := range Binaries {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s not found: `make deps` (hack/install-deps.sh, as root) installs munge, slurmctld, slurmd and slurm-client", strings.Join(missing, ", "))
	}
	return nil
}

// StartCluster starts a cluster in dir (which must exist; the caller removes
// it) and returns once its node is idle. ctx bounds the start only; the
// daemons run until Stop.
func StartCluster(ctx context.Context, dir string, cfg Config) (*Cluster, error) {
	if err := CheckBinaries(); err != nil {
		return nil, err
	}
	var err error
	// A free port picked here can be taken before the daemon binds it; try again then.
	for attempt := 0; attempt < 3; attempt++ {
		var c *Cluster
		c, err = start(ctx, filepath.Join(dir, fmt.Sprintf("slurm%d", attempt)), cfg)
		if err == nil {
			return c, nil
		}
		if !strings.Contains(err.Error(), "Address already in use") {
			return nil, err
		}
	}
	return nil, err
}

func start(ctx context.Context, dir string, cfg Config) (_ *Cluster, err error) {
	began := time.Now()
	// munged insists that the socket's directory is searchable by all and
	// writable by none but its owner.
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("hostname: %w", err)
	}
	host, _, _ = strings.Cut(host, ".")
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return nil, err
	}
	c := &Cluster{
		Name:        "t" + hex.EncodeToString(suffix),
		Dir:         dir,
		Conf:        filepath.Join(dir, "slurm.conf"),
		MungeSocket: filepath.Join(dir, "munge.socket"),
		NodeName:    host,
		CPUs:        cfg.CPUs,
		MemoryMiB:   cfg.MemoryMiB,
		GPUs:        cfg.GPUs,
	}
	if c.CPUs <= 0 {
		c.CPUs = runtime.NumCPU()
	}
	if c.MemoryMiB <= 0 {
		total, err := memTotalMiB()
		if err != nil {
			return nil, err
		}
		c.MemoryMiB = total * 9 / 10
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	c.CtldPort, c.SlurmdPort = ports[0], ports[1]
	for _, sub := range []string{"state", "spool"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(c.Conf, []byte(c.slurmConf(cfg)), 0o644); err != nil {
		return nil, err
	}
	if c.GPUs > 0 {
		if err := c.fakeGPUs(); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()

	key := filepath.Join(dir, "munge.key")
	if out, err := exec.CommandContext(ctx, "mungekey", "--create", "--keyfile", key).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mungekey: %w: %s", err, out)
	}
	if err := c.startDaemon("munged", "munged", "--foreground", "--force",
		"--socket", c.MungeSocket, "--key-file", key,
		"--pid-file", filepath.Join(dir, "munged.pid"),
		"--log-file", filepath.Join(dir, "munged.log"),
		"--seed-file", filepath.Join(dir, "munged.seed")); err != nil {
		return nil, err
	}
	if err := c.poll(ctx, "munged", func() bool {
		return exec.CommandContext(ctx, "munge", "--socket", c.MungeSocket, "--no-input").Run() == nil
	}); err != nil {
		return nil, err
	}
	if err := c.startDaemon("slurmctld", "slurmctld", "-D", "-f", c.Conf); err != nil {
		return nil, err
	}
	if err := c.startDaemon("slurmd", "slurmd", "-D", "-f", c.Conf, "-N", c.NodeName); err != nil {
		return nil, err
	}
	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = 90 * time.Second
	}
	readyCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var state string
	if err := c.poll(readyCtx, "slurmd", func() bool {
		out, err := c.Output(readyCtx, "sinfo", "-h", "-N", "-n", c.NodeName, "-o", "%T")
		state = out
		return err == nil && out == "idle"
	}); err != nil {
		return nil, fmt.Errorf("node %s not idle (last state %q): %w", c.NodeName, state, err)
	}
	c.StartupTime = time.Since(began)
	return c, nil
}

func (c *Cluster) slurmConf(cfg Config) string {
	defMem := cfg.DefMemPerCPU
	if defMem <= 0 {
		defMem = 256
	}
	d := c.Dir
	lines := []string{
		"# Generated by slurmtest: a one-host test cluster.",
		"ClusterName=" + c.Name,
		fmt.Sprintf("SlurmctldHost=%s(127.0.0.1)", c.NodeName),
		fmt.Sprintf("SlurmctldPort=%d", c.CtldPort),
		fmt.Sprintf("SlurmdPort=%d", c.SlurmdPort),
		"AuthType=auth/munge",
		"CredType=cred/munge",
		"AuthInfo=socket=" + c.MungeSocket,
		"SlurmUser=root",
		"SlurmdUser=root",
		"StateSaveLocation=" + filepath.Join(d, "state"),
		"SlurmdSpoolDir=" + filepath.Join(d, "spool"),
		"SlurmctldPidFile=" + filepath.Join(d, "slurmctld.pid"),
		"SlurmdPidFile=" + filepath.Join(d, "slurmd.pid"),
		"SlurmctldLogFile=" + filepath.Join(d, "slurmctld.log"),
		"SlurmdLogFile=" + filepath.Join(d, "slurmd.log"),
		// No cgroups: the host's (v1 here, gVisor in CI) may not allow them.
		"ProctrackType=proctrack/linuxproc",
		"TaskPlugin=task/none",
		"JobAcctGatherType=jobacct_gather/none",
		"AccountingStorageType=accounting_storage/none",
		"JobCompType=jobcomp/none",
		"SelectType=select/cons_tres",
		"SelectTypeParameters=CR_Core_Memory",
		fmt.Sprintf("DefMemPerCPU=%d", defMem),
		"MpiDefault=none",
		"MailProg=/bin/true",
		// Finished jobs stay visible to scontrol for 10 minutes.
		"MinJobAge=600",
		"ReturnToService=2",
		// The node's configuration wins over what slurmd finds, so a test may
		// give it more CPUs or memory than the host has.
		"SlurmdParameters=config_overrides",
		"SlurmctldTimeout=30",
		"SlurmdTimeout=30",
	}
	node := fmt.Sprintf("NodeName=%s NodeAddr=127.0.0.1 CPUs=%d RealMemory=%d State=UNKNOWN", c.NodeName, c.CPUs, c.MemoryMiB)
	if c.GPUs > 0 {
		// Not AccountingStorageTRES=gres/gpu: slurmctld needs slurmdbd for it.
		lines = append(lines, "GresTypes=gpu")
		node += fmt.Sprintf(" Gres=gpu:%d", c.GPUs)
	}
	lines = append(lines, node,
		"PartitionName="+Partition+" Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
	lines = append(lines, cfg.Extra...)
	return strings.Join(lines, "\n") + "\n"
}

// fakeGPUs makes the node's GPUs: slurmd counts a gpu GRES only with a
// character device per GPU (Count= alone registers none, and the node goes
// INVAL), so each is a copy of /dev/null in Dir, listed in gres.conf.
func (c *Cluster) fakeGPUs() error {
	for i := 0; i < c.GPUs; i++ {
		dev := filepath.Join(c.Dir, fmt.Sprintf("gpu%d", i))
		if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			return fmt.Errorf("make fake GPU device %s: %w", dev, err)
		}
	}
	file := filepath.Join(c.Dir, "gpu0")
	if c.GPUs > 1 {
		file = filepath.Join(c.Dir, fmt.Sprintf("gpu[0-%d]", c.GPUs-1))
	}
	gres := fmt.Sprintf("NodeName=%s Name=gpu File=%s\n", c.NodeName, file)
	return os.WriteFile(filepath.Join(c.Dir, "gres.conf"), []byte(gres), 0o644)
}

func (c *Cluster) startDaemon(name string, argv ...string) error {
	out, err := os.Create(filepath.Join(c.Dir, name+".out"))
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = c.Env()
	cmd.Dir = c.Dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	d := &daemon{name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		close(d.done)
	}()
	c.daemons = append(c.daemons, d)
	return nil
}

// poll calls ok until it is true, failing early when a daemon has exited.
func (c *Cluster) poll(ctx context.Context, what string, ok func() bool) error {
	for {
		if ok() {
			return nil
		}
		for _, d := range c.daemons {
			select {
			case <-d.done:
				return fmt.Errorf("%s exited (%v) while waiting for %s: %s", d.name, d.err, what, c.logTail(d.name))
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w: %s", what, ctx.Err(), c.logTail(what))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logTail is the end of a daemon's output and log, for error messages.
func (c *Cluster) logTail(name string) string {
	var b strings.Builder
	for _, f := range []string{name + ".out", name + ".log"} {
		data, err := os.ReadFile(filepath.Join(c.Dir, f))
		if err != nil || len(data) == 0 {
			continue
		}
		if len(data) > 2000 {
			data = data[len(data)-2000:]
		}
		fmt.Fprintf(&b, "\n--- %s ---\n%s", f, data)
	}
	return b.String()
}

// Stop cancels the cluster's jobs, stops its daemons (SIGTERM, then SIGKILL
// after a grace period) and kills what is left of its job steps. It leaves the
// files. Calling it again does nothing.
func (c *Cluster) Stop() error {
	if len(c.daemons) == 0 {
		return nil
	}
	const grace = 5 * time.Second
	if c.running("slurmctld") {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if ids, err := c.Output(ctx, "squeue", "-h", "-o", "%A"); err == nil && ids != "" {
			_, _ = c.Output(ctx, "scancel", strings.Fields(ids)...)
			// slurmd lingers on SIGTERM while it ends the jobs' steps: let
			// the cancellations finish first.
			_ = c.poll(ctx, "cancellations", func() bool {
				left, err := c.Output(ctx, "squeue", "-h", "-o", "%A")
				return err != nil || left == ""
			})
		}
		cancel()
	}
	var errs []error
	for i := len(c.daemons) - 1; i >= 0; i-- {
		d := c.daemons[i]
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(grace):
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.done
		}
		// Helpers in the daemon's group (slurmctld's slurmscriptd).
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		d.out.Close()
	}
	c.daemons = nil
	if err := c.killLeftovers(grace); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c *Cluster) running(name string) bool {
	for _, d := range c.daemons {
		if d.name == name {
			select {
			case <-d.done:
				return false
			default:
				return true
			}
		}
	}
	return false
}

// killLeftovers kills the processes of this cluster that outlive its daemons:
// slurmstepd (which slurmd detaches, holding this cluster's slurmd.log open,
// and which ignores SIGTERM) and the jobs under it (SLURM_CONF is this
// cluster's), with their descendants. Their jobs were cancelled and their
// daemons are gone, so they get SIGKILL at once.
func (c *Cluster) killLeftovers(grace time.Duration) error {
	deadline := time.Now().Add(grace)
	for {
		pids := c.leftovers()
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of cluster %s still running after SIGKILL: %v", c.Name, pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leftovers lists live processes that belong to this cluster.
func (c *Cluster) leftovers() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	parent := map[int]int{}
	mine := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		ppid, zombie := stat(pid)
		if zombie {
			continue
		}
		parent[pid] = ppid
		if c.belongs(pid) {
			mine[pid] = true
		}
	}
	// Add descendants of what belongs.
	for changed := true; changed; {
		changed = false
		for pid, ppid := range parent {
			if !mine[pid] && mine[ppid] {
				mine[pid] = true
				changed = true
			}
		}
	}
	var pids []int
	for pid := range mine {
		if pid != self && pid != 1 {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (c *Cluster) belongs(pid int) bool {
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	if env, err := os.ReadFile(filepath.Join(proc, "environ")); err == nil {
		for _, kv := range bytes.Split(env, []byte{0}) {
			if string(kv) == "SLURM_CONF="+c.Conf {
				return true
			}
		}
	}
	if cmdline, err := os.ReadFile(filepath.Join(proc, "cmdline")); err == nil && bytes.Contains(cmdline, []byte(c.Dir+"/")) {
		return true
	}
	fds, err := os.ReadDir(filepath.Join(proc, "fd"))
	if err != nil {
		return false
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(proc, "fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, c.Dir+"/") {
			return true
		}
	}
	return false
}

// stat returns a process's parent and whether it is a zombie.
func stat(pid int) (ppid int, zombie bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, true
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0] == "Z" || f[0] == "X"
}

func memTotalMiB() (int, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.Atoi(fields[1])
			if err != nil {
				return 0, fmt.Errorf("parse MemTotal: %w", err)
			}
			return kb / 1024, nil
		}
	}
	return 0, errors.New("no MemTotal in /proc/meminfo")
}

// freePorts returns n distinct TCP ports free at the time of the call.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
