package runtime

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// These tests run real containers: they need root and containerd (see
// runtimetest.Containerd), and skip, saying why, without them.

// startContainer creates and starts a container in sb.
func (e *testEnv) startContainer(sb *Sandbox, cfg ContainerConfig) string {
	e.t.Helper()
	if cfg.Image == "" {
		cfg.Image = "busybox"
	}
	id, err := e.rt.CreateContainer(context.Background(), sb, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.rt.StartContainer(context.Background(), id); err != nil {
		e.t.Fatal(err)
	}
	return id
}

func (e *testEnv) sandbox(name string, res *Resources) *Sandbox {
	e.t.Helper()
	sb, err := e.rt.CreateSandbox(context.Background(), SandboxConfig{
		Namespace: "default", Name: name, UID: "uid-" + name + "-" + newID()[:6],
		Labels: map[string]string{"app": name}, Resources: res,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return sb
}

// exec runs cmd in a container and returns its exit code and output.
func (e *testEnv) exec(id string, cmd ...string) (int, string) {
	e.t.Helper()
	var out bytes.Buffer
	code, err := e.rt.Exec(context.Background(), id, cmd, ExecStreams{Stdout: &out, Stderr: &out})
	if err != nil {
		e.t.Fatalf("exec %v: %v", cmd, err)
	}
	return code, out.String()
}

func readCgroupFile(t *testing.T, controller, cgroup, file string) string {
	t.Helper()
	dir, err := CgroupDir(controller, cgroup)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestPodSharesNamespaces is the seeds' multi-container pod: an httpd in one
// container serves a volume, the other reaches it on localhost because both
// are in the sandbox's network namespace; they share the hostname too.
func TestPodSharesNamespaces(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	www := t.TempDir()
	if err := os.WriteFile(filepath.Join(www, "index.html"), []byte("hello from c1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := env.rt.CreateSandbox(ctx, SandboxConfig{Namespace: "default", Name: "mypod", UID: "uid-mypod", Hostname: "mypod-host"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sb.NetNSPath); err != nil {
		t.Fatalf("netns: %v", err)
	}
	c1 := env.startContainer(sb, ContainerConfig{
		Name:    "c1",
		Command: []string{"httpd", "-f", "-p", "8080", "-h", "/www"},
		Mounts:  []Mount{{HostPath: www, ContainerPath: "/www", ReadOnly: true}},
	})
	c2 := env.startContainer(sb, ContainerConfig{
		Name:       "c2",
		Command:    []string{"sh", "-c"},
		Args:       []string{"sleep 3600"},
		Env:        []string{"GREETING=hi there", "PATH=/bin"},
		WorkingDir: "/tmp/work",
	})

	var out string
	waitFor(t, 10*time.Second, "httpd on localhost:8080", func() bool {
		var code int
		code, out = env.exec(c2, "wget", "-qO-", "http://localhost:8080/")
		return code == 0
	})
	if out != "hello from c1\n" {
		t.Errorf("wget localhost:8080 from c2 = %q", out)
	}
	if _, out := env.exec(c2, "hostname"); out != "mypod-host\n" {
		t.Errorf("hostname in c2 = %q, want the pod's", out)
	}
	if _, out := env.exec(c2, "sh", "-c", `echo "$GREETING|$HOSTNAME|$PATH|$(pwd)"`); out != "hi there|mypod-host|/bin|/tmp/work\n" {
		t.Errorf("env and working dir = %q", out)
	}
	// The volume is read-only.
	if code, _ := env.exec(c1, "sh", "-c", "echo x > /www/x"); code == 0 {
		t.Error("wrote to a read-only mount")
	}
	// One shim serves the pod: the shim, which reaps them, is the parent
	// of the sandbox's and the containers' processes alike.
	shim := parentPid(t, int(sb.Pid))
	for _, id := range []string{c1, c2} {
		if got := parentPid(t, int(env.status(id).Pid)); got != shim {
			t.Errorf("container %s runs under shim %d, the sandbox under %d", id, got, shim)
		}
	}
	// IPC is shared: both see the same System V IPC namespace.
	if _, a := env.exec(c1, "readlink", "/proc/self/ns/ipc"); true {
		if _, b := env.exec(c2, "readlink", "/proc/self/ns/ipc"); a != b {
			t.Errorf("ipc namespaces differ: %q %q", a, b)
		}
	}

	if err := env.rt.RemoveSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sb.NetNSPath); !os.IsNotExist(err) {
		t.Errorf("netns %s still there: %v", sb.NetNSPath, err)
	}
	if dir, _ := CgroupDir("memory", sb.CgroupParent); dir != "" {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("pod cgroup %s still there: %v", dir, err)
		}
	}
	// Idempotent.
	if err := env.rt.RemoveSandbox(ctx, sb.ID); err != nil {
		t.Errorf("second RemoveSandbox: %v", err)
	}
	if err := env.rt.RemoveContainer(ctx, c1); err != nil {
		t.Errorf("RemoveContainer after the sandbox went: %v", err)
	}
	if err := env.rt.StopContainer(ctx, c2, time.Second); err != nil {
		t.Errorf("StopContainer after the sandbox went: %v", err)
	}
}

// TestLimitsInCgroup checks that requests and limits land in the
// container's cgroup (and the pod's), and that the memory limit is
// enforced: a container that allocates more is OOM-killed.
func TestLimitsInCgroup(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	sb := env.sandbox("limits", &Resources{CPURequestMilli: 500, CPULimitMilli: 1000, MemoryLimitBytes: 256 << 20})
	res := ResourcesFor(corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: mustQuantity("250m")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: mustQuantity("500m"), corev1.ResourceMemory: mustQuantity("64Mi")},
	})
	id := env.startContainer(sb, ContainerConfig{Name: "limited", Command: []string{"sleep", "3600"}, Resources: res})
	cg := sb.CgroupParent + "/" + id

	for _, c := range []struct{ controller, file, want string }{
		{"memory", "memory.limit_in_bytes", "67108864"},
		{"cpu", "cpu.cfs_quota_us", "50000"},
		{"cpu", "cpu.cfs_period_us", "100000"},
		{"cpu", "cpu.shares", "256"},
		{"memory", "memory.limit_in_bytes", "67108864"},
	} {
		if got := readCgroupFile(t, c.controller, cg, c.file); got != c.want {
			t.Errorf("container %s = %s, want %s", c.file, got, c.want)
		}
	}
	for _, c := range []struct{ file, want string }{
		{"memory.limit_in_bytes", "268435456"},
	} {
		if got := readCgroupFile(t, "memory", sb.CgroupParent, c.file); got != c.want {
			t.Errorf("pod %s = %s, want %s", c.file, got, c.want)
		}
	}
	if got := readCgroupFile(t, "cpu", sb.CgroupParent, "cpu.cfs_quota_us"); got != "100000" {
		t.Errorf("pod cpu.cfs_quota_us = %s, want 100000", got)
	}
	// The container sees its own limit.
	if _, out := env.exec(id, "cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes"); strings.TrimSpace(out) != "67108864" {
		t.Errorf("limit as seen inside the container: %q", out)
	}

	// 100Mi in one buffer under a 64Mi limit: OOM-killed.
	hog := env.startContainer(sb, ContainerConfig{Name: "hog", Command: []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=100M", "count=1"}, Resources: res})
	waitFor(t, 20*time.Second, "the hog to be killed", func() bool { return env.status(hog).State == StateExited })
	st := env.status(hog)
	if st.ExitCode != 137 || st.Reason != "OOMKilled" {
		t.Errorf("hog exited %d reason %q, want 137 OOMKilled", st.ExitCode, st.Reason)
	}
	_ = ctx
}

// TestStopContainer checks the stop sequence: the stop signal first, and
// SIGKILL only once the grace period is over.
func TestStopContainer(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	sb := env.sandbox("stop", nil)
	polite := env.startContainer(sb, ContainerConfig{Name: "polite", Command: []string{"sh", "-c", `trap "exit 3" TERM; while true; do sleep 0.1; done`}})
	stubborn := env.startContainer(sb, ContainerConfig{Name: "stubborn", Command: []string{"sh", "-c", `trap "" TERM; while true; do sleep 0.1; done`}})
	time.Sleep(300 * time.Millisecond) // let the shells install their traps

	start := time.Now()
	if err := env.rt.StopContainer(ctx, polite, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a container that exits on SIGTERM took %s to stop", took)
	}
	if st := env.status(polite); st.State != StateExited || st.ExitCode != 3 {
		t.Errorf("polite: %s exit %d, want exited 3 (its TERM trap)", st.State, st.ExitCode)
	}

	start = time.Now()
	if err := env.rt.StopContainer(ctx, stubborn, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("stubborn was killed after %s, before its 2s grace period", took)
	}
	st := env.status(stubborn)
	if st.State != StateExited || st.ExitCode != 137 {
		t.Errorf("stubborn: %s exit %d, want exited 137 (SIGKILL)", st.State, st.ExitCode)
	}
	if st.FinishedAt.Before(st.StartedAt) || st.StartedAt.IsZero() {
		t.Errorf("started %v finished %v", st.StartedAt, st.FinishedAt)
	}
	// Idempotent, and a container runs once.
	if err := env.rt.StopContainer(ctx, stubborn, time.Second); err != nil {
		t.Errorf("second stop: %v", err)
	}
	if err := env.rt.StartContainer(ctx, stubborn); err == nil {
		t.Error("restarting an exited container should fail")
	}
	for _, id := range []string{polite, stubborn, stubborn} {
		if err := env.rt.RemoveContainer(ctx, id); err != nil {
			t.Errorf("remove: %v", err)
		}
	}
}

var criLine = regexp.MustCompile(`^(\S+) (stdout|stderr) (F|P) (.*)$`)

// readLog parses a CRI log file into "stream tag text" lines.
func readLog(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := criLine.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Fatalf("not a CRI log line: %q", sc.Text())
		}
		if _, err := time.Parse(time.RFC3339Nano, m[1]); err != nil {
			t.Fatalf("bad timestamp in %q: %v", sc.Text(), err)
		}
		lines = append(lines, m[2]+" "+m[3]+" "+m[4])
	}
	return lines
}

// TestLogsAndExitStatus checks the CRI log format and the exit status of a
// container that ran to completion.
func TestLogsAndExitStatus(t *testing.T) {
	env := newTestEnv(t)
	sb := env.sandbox("logs", nil)
	logPath := filepath.Join(t.TempDir(), "logs", "c", "0.log")
	id := env.startContainer(sb, ContainerConfig{
		Name:    "c",
		Command: []string{"sh", "-c", `echo out1; echo err1 >&2; echo; printf '%s' "$(head -c 20000 /dev/zero | tr '\0' x)"; echo; printf tail; exit 4`},
		LogPath: logPath,
	})
	waitFor(t, 10*time.Second, "the container to exit", func() bool { return env.status(id).State == StateExited })
	st := env.status(id)
	if st.ExitCode != 4 || st.Name != "c" || st.PodName != "logs" || st.LogPath != logPath {
		t.Errorf("status %+v", st)
	}
	long := strings.Repeat("x", maxLogLine)
	want := []string{"stdout F out1", "stderr F err1", "stdout F ", "stdout P " + long, "stdout F " + strings.Repeat("x", 20000-maxLogLine), "stdout P tail"}
	got := readLog(t, logPath)
	// stdout and stderr are separate pipes: only each stream's order is fixed.
	if !sameLines(got, want) {
		t.Errorf("log lines:\n%s\nwant:\n%s", short(got), short(want))
	}
}

func sameLines(got, want []string) bool {
	for _, stream := range []string{"stdout", "stderr"} {
		var g, w []string
		for _, l := range got {
			if strings.HasPrefix(l, stream) {
				g = append(g, l)
			}
		}
		for _, l := range want {
			if strings.HasPrefix(l, stream) {
				w = append(w, l)
			}
		}
		if strings.Join(g, "\n") != strings.Join(w, "\n") {
			return false
		}
	}
	return len(got) == len(want)
}

func short(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		if len(l) > 60 {
			l = fmt.Sprintf("%s... (%d)", l[:60], len(l))
		}
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// TestRestartAdopts simulates a kubelet restart: a new Containerd finds the
// running pod with its labels, keeps copying its logs, and still records
// the exit of a container that stopped while no kubelet was looking.
func TestRestartAdopts(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	sb := env.sandbox("adopt", nil)
	logPath := filepath.Join(t.TempDir(), "ticker.log")
	ticker := env.startContainer(sb, ContainerConfig{
		Name: "ticker", Command: []string{"sh", "-c", "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done"},
		LogPath: logPath, Labels: map[string]string{"restart-count": "0"},
	})
	brief := env.startContainer(sb, ContainerConfig{Name: "brief", Command: []string{"sh", "-c", "sleep 1; exit 5"}})
	waitFor(t, 5*time.Second, "log lines", func() bool { return len(readLog(t, logPath)) >= 3 })

	// The kubelet goes away; the brief container exits meanwhile.
	env.restart(1500 * time.Millisecond)

	all, err := env.rt.ListContainers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]ContainerStatus{}
	for _, c := range all {
		byID[c.ID] = c
	}
	if s := byID[sb.ID]; !s.IsSandbox || s.State != StateRunning || s.PodName != "adopt" || s.Labels["app"] != "adopt" || s.NetNSPath != sb.NetNSPath {
		t.Errorf("sandbox after restart: %+v", s)
	}
	if s := byID[ticker]; s.State != StateRunning || s.SandboxID != sb.ID || s.Name != "ticker" || s.Labels["restart-count"] != "0" || s.PodUID != byID[sb.ID].PodUID {
		t.Errorf("ticker after restart: %+v", s)
	}
	if s := byID[brief]; s.State != StateExited || s.ExitCode != 5 {
		t.Errorf("brief after restart: %+v, want exited 5", s)
	}
	// Logs keep flowing into the same file, in order.
	n := len(readLog(t, logPath))
	waitFor(t, 5*time.Second, "log lines after the restart", func() bool { return len(readLog(t, logPath)) >= n+5 })
	for i, l := range readLog(t, logPath) {
		if l != fmt.Sprintf("stdout F tick %d", i) {
			t.Fatalf("log line %d = %q: lines lost or repeated across the restart", i, l)
		}
	}
	// The adopted container's exit is noticed without a List.
	if err := env.rt.StopContainer(ctx, ticker, time.Second); err != nil {
		t.Fatal(err)
	}
	if s := env.status(ticker); s.State != StateExited || s.ExitCode != 137 {
		t.Errorf("ticker after stop: %+v", s)
	}
	// RemoveSandbox removes the containers left in it.
	if err := env.rt.RemoveSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if all, _ := env.rt.ListContainers(ctx); len(all) != 0 {
		t.Errorf("left after RemoveSandbox: %+v", all)
	}
}

// TestStats checks that a busy container's cgroup shows cpu and memory use,
// and that a sandbox's stats cover the pod.
func TestStats(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	sb := env.sandbox("stats", nil)
	busy := env.startContainer(sb, ContainerConfig{Name: "busy", Command: []string{"sh", "-c", "while :; do :; done"}})
	time.Sleep(time.Second)
	st, err := env.rt.Stats(ctx, busy)
	if err != nil {
		t.Fatal(err)
	}
	if st.CPUUsageNanos < uint64(100*time.Millisecond) || st.MemoryWorkingSetBytes == 0 || st.MemoryUsageBytes < st.MemoryWorkingSetBytes {
		t.Errorf("busy container stats: %+v", st)
	}
	pod, err := env.rt.Stats(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if pod.CPUUsageNanos < st.CPUUsageNanos || pod.MemoryUsageBytes == 0 {
		t.Errorf("pod stats %+v do not cover the container's %+v", pod, st)
	}
	time.Sleep(200 * time.Millisecond)
	later, err := env.rt.Stats(ctx, busy)
	if err != nil {
		t.Fatal(err)
	}
	if later.CPUUsageNanos <= st.CPUUsageNanos {
		t.Errorf("cpu usage is not cumulative: %d then %d", st.CPUUsageNanos, later.CPUUsageNanos)
	}
}

// TestExec checks exec's streams, exit code, stdin and terminal.
func TestExec(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	sb := env.sandbox("exec", nil)
	id := env.startContainer(sb, ContainerConfig{Name: "c", Command: []string{"sleep", "3600"}})

	if code, _ := env.exec(id, "sh", "-c", "exit 7"); code != 7 {
		t.Errorf("exit code %d, want 7", code)
	}
	var stdout, stderr bytes.Buffer
	code, err := env.rt.Exec(ctx, id, []string{"sh", "-c", "cat; echo oops >&2"}, ExecStreams{Stdin: strings.NewReader("from stdin\n"), Stdout: &stdout, Stderr: &stderr})
	if err != nil || code != 0 || stdout.String() != "from stdin\n" || stderr.String() != "oops\n" {
		t.Errorf("stdin exec: %d %v stdout %q stderr %q", code, err, stdout.String(), stderr.String())
	}
	var tty bytes.Buffer
	resize := make(chan TerminalSize, 1)
	resize <- TerminalSize{Width: 100, Height: 40}
	code, err = env.rt.Exec(ctx, id, []string{"sh", "-c", "sleep 0.3; tty; stty size"}, ExecStreams{Stdout: &tty, TTY: true, Resize: resize})
	if err != nil || code != 0 || !strings.Contains(tty.String(), "/dev/pts/") || !strings.Contains(tty.String(), "40 100") {
		t.Errorf("tty exec: %d %v %q", code, err, tty.String())
	}
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := env.rt.Exec(cctx, id, []string{"sleep", "60"}, ExecStreams{}); err == nil || time.Since(start) > 10*time.Second {
		t.Errorf("a cancelled exec returned %v after %s", err, time.Since(start))
	}
	if _, err := env.rt.Exec(ctx, "no-such-container", []string{"true"}, ExecStreams{}); err == nil {
		t.Error("exec in a missing container succeeded")
	}
}

// TestEnsureImage checks pull policies against local images and pull
// errors that name the image.
func TestEnsureImage(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	for _, policy := range []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever, ""} {
		if _, err := env.rt.EnsureImage(ctx, "busybox", policy); err != nil {
			t.Errorf("busybox with %q: %v", policy, err)
		}
	}
	if _, err := env.rt.EnsureImage(ctx, "localhost:1/missing:v1", corev1.PullNever); !errors.Is(err, ErrImageNeverPull) {
		t.Errorf("missing image with Never: %v", err)
	}
	_, err := env.rt.EnsureImage(ctx, "localhost:1/missing:v1", corev1.PullIfNotPresent)
	var pe *PullError
	if !errors.As(err, &pe) || pe.Image != "localhost:1/missing:v1" || !strings.Contains(err.Error(), `"localhost:1/missing:v1"`) {
		t.Errorf("pull from a closed port: %v", err)
	}
	if _, err := env.rt.EnsureImage(ctx, "Not A Ref", corev1.PullIfNotPresent); !errors.Is(err, ErrInvalidImageName) {
		t.Errorf("invalid name: %v", err)
	}
	sb := env.sandbox("noimage", nil)
	if _, err := env.rt.CreateContainer(ctx, sb, ContainerConfig{Name: "c", Image: "localhost:1/missing:v1"}); err == nil || !strings.Contains(err.Error(), "not present") {
		t.Errorf("container of a missing image: %v", err)
	}
}

// TestAttach attaches to containers created with stdin, as kubectl run -i
// and kubectl attach do: without and with a terminal.
func TestAttach(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	sb := env.sandbox("attach", nil)
	logPath := filepath.Join(t.TempDir(), "sh.log")
	id := env.startContainer(sb, ContainerConfig{Name: "sh", Command: []string{"sh"}, Stdin: true, StdinOnce: true, LogPath: logPath})
	time.Sleep(300 * time.Millisecond)
	if st := env.status(id); st.State != StateRunning {
		t.Fatalf("a shell with an open stdin should wait for input: %+v", st)
	}
	var stdout, stderr bytes.Buffer
	err := env.rt.Attach(ctx, id, ExecStreams{Stdin: strings.NewReader("echo hello; echo oops >&2\n"), Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	// The end of the session's stdin closed the shell's (StdinOnce): it exited.
	waitFor(t, 5*time.Second, "the shell to exit", func() bool { return env.status(id).State == StateExited })
	if stdout.String() != "hello\n" || stderr.String() != "oops\n" {
		t.Errorf("attached stdout %q stderr %q", stdout.String(), stderr.String())
	}
	if got := readLog(t, logPath); !sameLines(got, []string{"stdout F hello", "stderr F oops"}) {
		t.Errorf("log %q", got)
	}

	// With a terminal: the raw output (the prompt has no newline) and resizes.
	tty := env.startContainer(sb, ContainerConfig{Name: "tty", Command: []string{"sh"}, Stdin: true, TTY: true, LogPath: filepath.Join(t.TempDir(), "tty.log")})
	stdinR, stdinW := io.Pipe()
	out := &lockedBuffer{}
	resize := make(chan TerminalSize, 1)
	done := make(chan error, 1)
	go func() {
		done <- env.rt.Attach(ctx, tty, ExecStreams{Stdin: stdinR, Stdout: out, TTY: true, Resize: resize})
	}()
	resize <- TerminalSize{Width: 90, Height: 30}
	time.Sleep(200 * time.Millisecond)
	fmt.Fprintf(stdinW, "echo $((6*7)); stty size\n")
	waitFor(t, 5*time.Second, "the shell's answer", func() bool { return strings.Contains(out.String(), "42") && strings.Contains(out.String(), "30 90") })
	fmt.Fprintf(stdinW, "exit 9\n")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("attach did not return when the container exited")
	}
	stdinW.Close()
	if st := env.status(tty); st.ExitCode != 9 {
		t.Errorf("tty shell: %+v", st)
	}
	if err := env.rt.Attach(ctx, tty, ExecStreams{Stdout: out}); err == nil {
		t.Error("attached to an exited container")
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestHostNetworkAndSecurity runs a hostNetwork/hostPID pod, and the
// privileged and read-only-rootfs settings of securityContext.
func TestHostNetworkAndSecurity(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	sb, err := env.rt.CreateSandbox(ctx, SandboxConfig{Namespace: "kube-system", Name: "hostnet", UID: "uid-hostnet-" + newID()[:6], HostNetwork: true, HostPID: true})
	if err != nil {
		t.Fatal(err)
	}
	if sb.NetNSPath != "" {
		t.Errorf("a hostNetwork sandbox has netns %q", sb.NetNSPath)
	}
	id := env.startContainer(sb, ContainerConfig{Name: "c", Command: []string{"sleep", "60"}, ReadOnlyRootfs: true})
	hostNet, _ := os.Readlink("/proc/self/ns/net")
	hostPID, _ := os.Readlink("/proc/self/ns/pid")
	hostname, _ := os.Hostname()
	if _, out := env.exec(id, "sh", "-c", "readlink /proc/self/ns/net; readlink /proc/self/ns/pid"); out != hostNet+"\n"+hostPID+"\n" {
		t.Errorf("namespaces %q, want the host's %s %s", out, hostNet, hostPID)
	}
	if _, out := env.exec(id, "hostname"); out != hostname+"\n" {
		t.Errorf("hostname %q, want the node's %q", out, hostname)
	}
	if code, _ := env.exec(id, "touch", "/x"); code == 0 {
		t.Error("wrote to a read-only root filesystem")
	}

	sb2 := env.sandbox("privileged", nil)
	plain := env.startContainer(sb2, ContainerConfig{Name: "plain", Command: []string{"sleep", "60"}})
	priv := env.startContainer(sb2, ContainerConfig{Name: "priv", Command: []string{"sleep", "60"}, Privileged: true})
	// Adding an address needs CAP_NET_ADMIN.
	if code, _ := env.exec(plain, "ip", "addr", "add", "10.99.0.1/32", "dev", "lo"); code == 0 {
		t.Error("an unprivileged container could configure the network")
	}
	if code, out := env.exec(priv, "ip", "addr", "add", "10.99.0.1/32", "dev", "lo"); code != 0 {
		t.Errorf("a privileged container could not configure the network: %s", out)
	}
	if err := env.rt.RemoveSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if v, err := env.rt.Version(ctx); err != nil || !strings.HasPrefix(v, "containerd://1.") {
		t.Errorf("version %q %v", v, err)
	}
}

// TestAttachNetwork checks that CreateSandbox attaches the pod network on
// the sandbox's namespace while the pause container starts, and that a
// failed attachment fails the sandbox and leaves nothing behind.
func TestAttachNetwork(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	var gotID, gotNS string
	sb, err := env.rt.CreateSandbox(ctx, SandboxConfig{Namespace: "default", Name: "attached", UID: "uid-attached-" + newID()[:6],
		AttachNetwork: func(_ context.Context, id, netns string) error {
			gotID, gotNS = id, netns
			if _, err := os.Stat(netns); err != nil {
				return fmt.Errorf("the namespace is not there yet: %w", err)
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if gotID != sb.ID || gotNS != sb.NetNSPath {
		t.Errorf("attached %s in %s, want %s in %s", gotID, gotNS, sb.ID, sb.NetNSPath)
	}
	if err := env.rt.RemoveSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}

	failed, err := env.rt.CreateSandbox(ctx, SandboxConfig{Namespace: "default", Name: "unattached", UID: "uid-unattached-" + newID()[:6],
		AttachNetwork: func(_ context.Context, id, netns string) error {
			gotID, gotNS = id, netns
			return errors.New("no bridge")
		}})
	if err == nil || !strings.Contains(err.Error(), "no bridge") || failed != nil {
		t.Fatalf("CreateSandbox with a failing attachment = %v, %v", failed, err)
	}
	if _, err := os.Stat(gotNS); !os.IsNotExist(err) {
		t.Errorf("netns %s of the failed sandbox still there: %v", gotNS, err)
	}
	if all, err := env.rt.ListContainers(ctx); err != nil || len(all) != 0 {
		t.Errorf("left after a failed sandbox: %v %v", all, err)
	}
}
