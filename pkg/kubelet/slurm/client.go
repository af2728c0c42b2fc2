package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ResourceGPU is the extended resource a GPU is counted in.
const ResourceGPU corev1.ResourceName = "nvidia.com/gpu"

// ErrNotFound is what a missing job's error matches (errors.Is).
var ErrNotFound = errors.New("slurm job not found")

// NotFoundError is a job Slurm does not know (any more: Slurm forgets
// finished jobs after MinJobAge).
type NotFoundError struct{ JobID string }

func (e *NotFoundError) Error() string        { return fmt.Sprintf("slurm job %s not found", e.JobID) }
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// IsNotFound says whether err is a missing job.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// Client runs the Slurm commands the provider needs through a Runner.
type Client struct {
	runner Runner
	// loc is the time zone of slurmctld's timestamps.
	loc *time.Location
}

// NewClient returns a client whose Slurm prints times in loc (nil: time.Local).
func NewClient(r Runner, loc *time.Location) *Client {
	if loc == nil {
		loc = time.Local
	}
	return &Client{runner: r, loc: loc}
}

// Job is one batch job to submit: the script carries every option as an
// #SBATCH line, so sbatch needs no other argument.
type Job struct {
	// Name is the --job-name, <namespace>_<pod name>.
	Name string
	// Comment is the --comment, minik8s:<pod UID>.
	Comment string
	// WorkDir is the --chdir; Submit creates it first.
	WorkDir string
	// Script is the whole batch script.
	Script string
	// Files are staged into WorkDir (with tar) before the job is submitted.
	Files []StagedFile
	// Images are the containers' images, named in the script but not run:
	// the commands run on the Slurm node as they are.
	Images []string
}

// JobInfo is what `scontrol show job` says of a job.
type JobInfo struct {
	ID        string
	Name      string
	State     string // PENDING, RUNNING, COMPLETED, FAILED, ...
	Reason    string // why it is pending or failed: Priority, Resources, None, ...
	ExitCode  int    // the batch script's exit status
	Signal    int    // the signal that ended it, 0 if none
	Submit    time.Time
	Start     time.Time // zero until it starts (or an estimate while PENDING)
	End       time.Time
	NodeList  string
	Partition string
	StdOut    string
	StdErr    string
	WorkDir   string
	Comment   string
	TimeLimit string
}

// Terminal says whether the job has ended.
func (j JobInfo) Terminal() bool {
	switch j.State {
	case "COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "CANCELLED",
		"PREEMPTED", "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED":
		return true
	}
	return false
}

// Stage creates the job's work directory and writes its Files into it,
// as one tar stream (one command, also over SSH).
func (c *Client) Stage(ctx context.Context, job Job) error {
	if job.WorkDir == "" {
		if len(job.Files) > 0 {
			return errors.New("files to stage but no work dir")
		}
		return nil
	}
	if _, err := c.runner.Run(ctx, "mkdir", []string{"-p", job.WorkDir}, nil); err != nil {
		return fmt.Errorf("create work dir: %w", err)
	}
	if len(job.Files) == 0 {
		return nil
	}
	data, err := Tar(job.Files)
	if err != nil {
		return fmt.Errorf("stage files: %w", err)
	}
	// -p keeps the staged modes (Secrets in a 0700 directory) whoever
	// submits; the files belong to that user.
	if _, err := c.runner.Run(ctx, "tar", []string{"-x", "-p", "--no-same-owner", "-f", "-", "-C", job.WorkDir}, data); err != nil {
		return fmt.Errorf("stage files into %s: %w", job.WorkDir, err)
	}
	return nil
}

// Submit stages the job's work directory and submits its script with
// `sbatch --parsable`, returning the job id.
func (c *Client) Submit(ctx context.Context, job Job) (string, error) {
	if err := c.Stage(ctx, job); err != nil {
		return "", err
	}
	out, err := c.runner.Run(ctx, "sbatch", []string{"--parsable"}, []byte(job.Script))
	if err != nil {
		return "", fmt.Errorf("sbatch %s: %w", job.Name, err)
	}
	// "12" or "12;cluster"; sbatch may print warnings before it.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	id, _, _ := strings.Cut(strings.TrimSpace(lines[len(lines)-1]), ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", fmt.Errorf("sbatch %s: unexpected output %q", job.Name, out)
	}
	return id, nil
}

// SubmitRefused says whether err is sbatch refusing the job itself
// (resources no node has, an unknown partition, an invalid option), so
// that submitting it again would fail again, rather than failing to
// reach slurmctld; msg is sbatch's error, one line.
func SubmitRefused(err error) (msg string, refused bool) {
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Name != "sbatch" {
		return "", false
	}
	stderr := strings.TrimSpace(ce.Stderr)
	for _, transient := range []string{"Unable to contact slurm controller", "Socket timed out", "temporarily", "Zero Bytes were transmitted",
		"Communication connection failure", "Connection refused", "Connection timed out"} {
		if strings.Contains(stderr, transient) {
			return "", false
		}
	}
	if !strings.Contains(stderr, "Batch job submission failed:") && !strings.Contains(stderr, "sbatch: error: Invalid") {
		return "", false
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(stderr, "\n", "; ")), " "), true
}

// Cancel cancels a job; a job that has already ended is no error, a job
// Slurm does not know is a *NotFoundError.
func (c *Client) Cancel(ctx context.Context, id string) error {
	_, err := c.runner.Run(ctx, "scancel", []string{id}, nil)
	var ce *CommandError
	if errors.As(err, &ce) {
		switch {
		case strings.Contains(ce.Stderr, "already completing or completed"):
			return nil
		case strings.Contains(ce.Stderr, "Invalid job id"):
			return &NotFoundError{JobID: id}
		}
	}
	if err != nil {
		return fmt.Errorf("scancel %s: %w", id, err)
	}
	return nil
}

// Job returns one job.
func (c *Client) Job(ctx context.Context, id string) (JobInfo, error) {
	out, err := c.runner.Run(ctx, "scontrol", []string{"show", "job", "-o", id}, nil)
	var ce *CommandError
	if errors.As(err, &ce) && strings.Contains(ce.Stderr+string(out), "Invalid job id") {
		return JobInfo{}, &NotFoundError{JobID: id}
	}
	if err != nil {
		return JobInfo{}, fmt.Errorf("scontrol show job %s: %w", id, err)
	}
	jobs := c.parseJobs(out)
	for _, j := range jobs {
		if j.ID == id {
			return j, nil
		}
	}
	return JobInfo{}, &NotFoundError{JobID: id}
}

// Jobs lists every job slurmctld still holds.
func (c *Client) Jobs(ctx context.Context) ([]JobInfo, error) {
	out, err := c.runner.Run(ctx, "scontrol", []string{"show", "job", "-o"}, nil)
	if err != nil {
		return nil, fmt.Errorf("scontrol show job: %w", err)
	}
	return c.parseJobs(out), nil
}

// JobsByPrefix lists the jobs whose name starts with namePrefix.
func (c *Client) JobsByPrefix(ctx context.Context, namePrefix string) ([]JobInfo, error) {
	all, err := c.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	var out []JobInfo
	for _, j := range all {
		if strings.HasPrefix(j.Name, namePrefix) {
			out = append(out, j)
		}
	}
	return out, nil
}

// Ping checks that slurmctld answers.
func (c *Client) Ping(ctx context.Context) error {
	out, err := c.runner.Run(ctx, "scontrol", []string{"ping"}, nil)
	if err != nil {
		return fmt.Errorf("scontrol ping: %w", err)
	}
	if s := string(out); strings.Contains(s, "DOWN") || !strings.Contains(s, "UP") {
		return fmt.Errorf("scontrol ping: %s", strings.TrimSpace(s))
	}
	return nil
}

// PartitionInfo is a partition and its nodes.
type PartitionInfo struct {
	Name    string
	State   string // UP, DOWN, DRAIN, INACTIVE
	Default bool
	Nodes   []NodeInfo
	// Capacity sums the nodes': cpu, memory, nvidia.com/gpu.
	Capacity corev1.ResourceList
	// Up says whether the partition is UP with at least one node up.
	Up bool
}

// NodeInfo is one node as `scontrol show node` says.
type NodeInfo struct {
	Name       string
	CPUs       int64
	MemoryMiB  int64
	GPUs       int64
	State      string
	Partitions []string
}

// NodeUp says whether the node can run jobs: not down, drained, failed or
// not responding.
func (n NodeInfo) NodeUp() bool {
	s := strings.ToUpper(n.State)
	if s == "" || strings.Contains(s, "*") {
		return false
	}
	for _, part := range strings.Split(s, "+") {
		switch part {
		case "DOWN", "DRAIN", "DRAINING", "DRAINED", "FAIL", "FAILING", "NOT_RESPONDING", "FUTURE", "UNKNOWN",
			"MAINT", "RESERVED", "INVAL", "POWERING_DOWN", "REBOOT_ISSUED":
			return false
		}
	}
	return true
}

// Partition describes the partition called name, or the default
// partition if name is empty.
func (c *Client) Partition(ctx context.Context, name string) (PartitionInfo, error) {
	args := []string{"show", "partition", "-o"}
	if name != "" {
		args = append(args, name)
	}
	out, err := c.runner.Run(ctx, "scontrol", args, nil)
	if err != nil {
		return PartitionInfo{}, fmt.Errorf("scontrol show partition %s: %w", name, err)
	}
	var part *PartitionInfo
	for _, kv := range parseRecords(out, partitionKeys) {
		p := PartitionInfo{Name: kv["PartitionName"], State: kv["State"], Default: kv["Default"] == "YES"}
		if (name != "" && p.Name == name) || (name == "" && (p.Default || part == nil)) {
			part = &p
		}
	}
	if part == nil {
		return PartitionInfo{}, fmt.Errorf("slurm partition %q not found", name)
	}
	out, err = c.runner.Run(ctx, "scontrol", []string{"show", "node", "-o"}, nil)
	if err != nil {
		return PartitionInfo{}, fmt.Errorf("scontrol show node: %w", err)
	}
	var cpus, mem, gpus int64
	anyUp := false
	for _, kv := range parseRecords(out, nodeKeys) {
		n := NodeInfo{Name: kv["NodeName"], State: kv["State"], GPUs: gresGPUs(kv["Gres"])}
		n.CPUs, _ = strconv.ParseInt(kv["CPUTot"], 10, 64)
		n.MemoryMiB, _ = strconv.ParseInt(kv["RealMemory"], 10, 64)
		if p := kv["Partitions"]; p != "" && p != "(null)" {
			n.Partitions = strings.Split(p, ",")
		}
		in := false
		for _, p := range n.Partitions {
			in = in || p == part.Name
		}
		if !in {
			continue
		}
		part.Nodes = append(part.Nodes, n)
		cpus += n.CPUs
		mem += n.MemoryMiB
		gpus += n.GPUs
		anyUp = anyUp || n.NodeUp()
	}
	part.Capacity = corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(cpus, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem<<20, resource.BinarySI),
		ResourceGPU:           *resource.NewQuantity(gpus, resource.DecimalSI),
	}
	part.Up = strings.HasPrefix(part.State, "UP") && anyUp
	return *part, nil
}

var gresParen = regexp.MustCompile(`\([^)]*\)`)

// gresGPUs counts the GPUs in a Gres field: gpu:2, gpu:a100:4(S:0-1),
// gpu:1,mps:100, (null).
func gresGPUs(gres string) int64 {
	var n int64
	for _, item := range strings.Split(gresParen.ReplaceAllString(gres, ""), ",") {
		parts := strings.Split(item, ":")
		if parts[0] != "gpu" || len(parts) < 2 {
			continue
		}
		if v, err := strconv.ParseInt(parts[len(parts)-1], 10, 64); err == nil {
			n += v
		}
	}
	return n
}

func (c *Client) parseJobs(out []byte) []JobInfo {
	var jobs []JobInfo
	for _, kv := range parseRecords(out, jobKeys) {
		id := kv["JobId"]
		if id == "" {
			continue
		}
		j := JobInfo{
			ID: id, Name: kv["JobName"], State: kv["JobState"], Reason: kv["Reason"],
			Submit: c.parseTime(kv["SubmitTime"]), Start: c.parseTime(kv["StartTime"]), End: c.parseTime(kv["EndTime"]),
			NodeList: nullable(kv["NodeList"]), Partition: nullable(kv["Partition"]), StdOut: nullable(kv["StdOut"]),
			StdErr: nullable(kv["StdErr"]), WorkDir: nullable(kv["WorkDir"]), Comment: nullable(kv["Comment"]),
			TimeLimit: kv["TimeLimit"],
		}
		// A state may carry flags in newer versions: "CANCELLED+..." or "CANCELLED by 0".
		if i := strings.IndexAny(j.State, "+ "); i > 0 {
			j.State = j.State[:i]
		}
		if code, sig, ok := strings.Cut(kv["ExitCode"], ":"); ok {
			j.ExitCode, _ = strconv.Atoi(code)
			j.Signal, _ = strconv.Atoi(sig)
		}
		jobs = append(jobs, j)
	}
	return jobs
}

func nullable(s string) string {
	if s == "(null)" {
		return ""
	}
	return s
}

func (c *Client) parseTime(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02T15:04:05", s, c.loc)
	if err != nil {
		return time.Time{} // Unknown, None, N/A
	}
	return t
}

// parseRecords parses `scontrol show ... -o` output: one record a line,
// space-separated Key=Value fields. Values may hold spaces (OS=Linux 6.1.0
// #1 SMP ..., Comment=a b) and '=' (TRES=cpu=1,mem=1G): a word starts a
// new field only when it begins with a key we know, or, after a field
// whose value is not free text, with anything shaped like a key.
func parseRecords(out []byte, known map[string]bool) []map[string]string {
	var recs []map[string]string
	for _, line := range bytes.Split(out, []byte("\n")) {
		s := strings.TrimSpace(string(line))
		if s == "" || !strings.Contains(s, "=") {
			continue // "No jobs in the system"
		}
		kv := map[string]string{}
		key := ""
		for _, word := range strings.Split(s, " ") {
			k, v, isKV := strings.Cut(word, "=")
			newField := isKV && keyShape.MatchString(k) && (known[k] || (key != "" && !freeText[key]) || key == "")
			if newField {
				key = k
				kv[key] = v
				continue
			}
			if key != "" {
				kv[key] += " " + word
			}
		}
		// Slurm pads some fields with a second space
		// ("Comment=minik8s:uid  StdErr=..."): not part of the value.
		for k, v := range kv {
			kv[k] = strings.TrimRight(v, " ")
		}
		recs = append(recs, kv)
	}
	return recs
}

var keyShape = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_:/]*$`)

// freeText are the fields whose values may hold spaces and "k=v" words.
var freeText = map[string]bool{"Comment": true, "AdminComment": true, "SystemComment": true, "Command": true, "OS": true, "Reason": true, "WorkDir": true, "StdOut": true, "StdErr": true, "StdIn": true, "JobName": true}

func keySet(keys string) map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Fields(keys) {
		m[k] = true
	}
	return m
}

// The fields of Slurm 22.05-23.x records.
var (
	jobKeys = keySet(`JobId ArrayJobId ArrayTaskId HetJobId HetJobOffset JobName UserId GroupId MCS_label Priority Nice Account QOS
		JobState Reason Dependency Requeue Restarts BatchFlag Reboot ExitCode DerivedExitCode RunTime TimeLimit TimeMin
		SubmitTime EligibleTime AccrueTime StartTime EndTime Deadline SuspendTime SecsPreSuspend LastSchedEval Scheduler
		Partition AllocNode:Sid ReqNodeList ExcNodeList NodeList BatchHost NumNodes NumCPUs NumTasks CPUs/Task ReqB:S:C:T
		TRES ReqTRES AllocTRES Socks/Node NtasksPerN:B:S:C CoreSpec MinCPUsNode MinMemoryNode MinMemoryCPU MinTmpDiskNode
		Features DelayBoot OverSubscribe Contiguous Licenses Network Command Comment AdminComment SystemComment WorkDir
		StdErr StdIn StdOut Power TresPerNode TresPerJob TresPerTask MemPerTres CpusPerTres NtasksPerTRES Reservation
		MailUser MailType CPU_IDs Mem GRES Nodes KillOInInvalidDependent Container ContainerID Prolog Epilog ResvPorts`)
	nodeKeys = keySet(`NodeName Arch CoresPerSocket CPUAlloc CPUEfctv CPUTot CPULoad AvailableFeatures ActiveFeatures Gres
		GresDrain GresUsed NodeAddr NodeHostName Port Version OS RealMemory AllocMem FreeMem Sockets Boards
		MemSpecLimit State ThreadsPerCore TmpDisk Weight Owner MCS_label Partitions BootTime SlurmdStartTime
		LastBusyTime ResumeAfterTime CfgTRES AllocTRES CapWatts CurrentWatts AveWatts ExtSensorsJoules
		ExtSensorsWatts ExtSensorsTemp Reason Comment InstanceId InstanceType`)
	partitionKeys = keySet(`PartitionName AllowGroups AllowAccounts AllowQos AllocNodes Default QoS DefaultTime
		DisableRootJobs ExclusiveUser GraceTime Hidden MaxNodes MaxTime MinNodes LLN MaxCPUsPerNode Nodes
		PriorityJobFactor PriorityTier RootOnly ReqResv OverSubscribe OverTimeLimit PreemptMode State TotalCPUs
		TotalNodes SelectTypeParameters JobDefaults DefMemPerNode DefMemPerCPU MaxMemPerNode MaxMemPerCPU TRES
		TRESBillingWeights DenyAccounts DenyQos PowerDownOnIdle ResumeTimeout SuspendTimeout SuspendTime`)
)
