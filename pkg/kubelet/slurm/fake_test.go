package slurm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// fakeSlurm answers the commands the provider runs as a Slurm 22.05
// cluster with one partition would, from jobs it keeps in memory.
type fakeSlurm struct {
	mu     sync.Mutex
	jobs   map[int]*fakeJob
	nextID int
	files  map[string]string // output files, by path
	down   bool              // slurmctld does not answer
	calls  []string
	// nodes is `scontrol show node -o` output.
	nodes string
}

type fakeJob struct {
	id                                          int
	name, comment, workdir, state, reason, exit string
	partition, nodes, start, end                string
	script                                      string
}

func newFakeSlurm() *fakeSlurm {
	return &fakeSlurm{jobs: map[int]*fakeJob{}, nextID: 12, files: map[string]string{}, nodes: nodeLines}
}

const partitionLine = `PartitionName=debug AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL Default=YES QoS=N/A DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED Nodes=node[1-2] PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE PreemptMode=OFF State=UP TotalCPUs=12 TotalNodes=2 SelectTypeParameters=NONE JobDefaults=(null) DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED TRES=cpu=12,mem=23800M,node=2,billing=12
PartitionName=gpu AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL Default=NO QoS=N/A DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED Nodes=node2 PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE PreemptMode=OFF State=UP TotalCPUs=8 TotalNodes=1 SelectTypeParameters=NONE JobDefaults=(null) DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED
`

const nodeLines = `NodeName=node1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUEfctv=4 CPUTot=4 CPULoad=0.05 AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=node1 NodeHostName=node1 Version=22.05.8 OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01) RealMemory=7900 AllocMem=0 FreeMem=6120 Sockets=4 Boards=1 State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=debug BootTime=2026-11-26T08:00:00 SlurmdStartTime=2026-11-26T08:01:00 LastBusyTime=2026-11-26T11:00:00 CfgTRES=cpu=4,mem=7900M,billing=4 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s
NodeName=node2 Arch=x86_64 CoresPerSocket=4 CPUAlloc=2 CPUEfctv=8 CPUTot=8 CPULoad=1.50 AvailableFeatures=a100 ActiveFeatures=a100 Gres=gpu:a100:2(S:0-1) NodeAddr=node2 NodeHostName=node2 Version=22.05.8 OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01) RealMemory=15900 AllocMem=1024 FreeMem=12000 Sockets=2 Boards=1 State=MIXED ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=debug,gpu BootTime=2026-11-26T08:00:00 SlurmdStartTime=2026-11-26T08:01:00 LastBusyTime=2026-11-26T11:00:00 CfgTRES=cpu=8,mem=15900M,billing=8,gres/gpu=2 AllocTRES=cpu=2,mem=1G,gres/gpu=1 CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s
`

func orNull(s string) string {
	if s == "" {
		return "(null)"
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}

// line is the job as `scontrol show job -o` prints it in Slurm 22.05.
func (j *fakeJob) line() string {
	exit := j.exit
	if exit == "" {
		exit = "0:0"
	}
	return fmt.Sprintf("JobId=%d JobName=%s UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901748 Nice=0 Account=(null) QOS=(null) "+
		"JobState=%s Reason=%s Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=%s RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A "+
		"SubmitTime=2026-11-26T12:00:00 EligibleTime=2026-11-26T12:00:00 AccrueTime=2026-11-26T12:00:00 StartTime=%s EndTime=%s Deadline=N/A "+
		"SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-26T12:00:01 Scheduler=Main Partition=%s AllocNode:Sid=login:4242 "+
		"ReqNodeList=(null) ExcNodeList=(null) NodeList=%s NumNodes=1 NumCPUs=2 NumTasks=1 CPUs/Task=2 ReqB:S:C:T=0:0:*:* "+
		"TRES=cpu=2,mem=1G,node=1,billing=2 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=2 MinMemoryNode=1G MinTmpDiskNode=0 "+
		"Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) Comment=%s "+
		"WorkDir=%s StdErr=%s/%d.out StdIn=/dev/null StdOut=%s/%d.out Power=",
		j.id, j.name, j.state, j.reason, exit, orUnknown(j.start), orUnknown(j.end), j.partition, orNull(j.nodes), orNull(j.comment),
		j.workdir, j.workdir, j.id, j.workdir, j.id)
}

func (f *fakeSlurm) job(id int) *fakeJob {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.jobs[id]
}

func (f *fakeSlurm) set(id int, fn func(j *fakeJob)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f.jobs[id])
}

func (f *fakeSlurm) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

func fail(name string, args []string, stderr string) error {
	return &CommandError{Name: name, Args: args, Stderr: stderr, Err: errors.New("exit status 1")}
}

func (f *fakeSlurm) Run(_ context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cmd := shellJoin(name, args)
	f.calls = append(f.calls, cmd)
	if f.down && name != "mkdir" && name != "tar" && name != "tail" {
		return nil, fail(name, args, "slurm_load_jobs error: Unable to contact slurm controller (connect failure)")
	}
	switch {
	case cmd == "mkdir -p "+strings.Join(args[1:], " "):
		return nil, nil
	case name == "tar" && len(args) > 0 && args[0] == "-x":
		return nil, nil // the staged files: stage_test.go extracts them for real
	case cmd == "sbatch --parsable":
		j := &fakeJob{id: f.nextID, state: "PENDING", reason: "None", partition: "debug", script: string(stdin)}
		f.nextID++
		for _, l := range strings.Split(string(stdin), "\n") {
			opt, ok := strings.CutPrefix(l, "#SBATCH ")
			if !ok {
				continue
			}
			k, v, _ := strings.Cut(opt, "=")
			switch k {
			case "--job-name":
				j.name = v
			case "--comment":
				j.comment = v
			case "--chdir":
				j.workdir = v
			case "--partition":
				j.partition = v
			}
		}
		f.jobs[j.id] = j
		return []byte(strconv.Itoa(j.id) + "\n"), nil
	case name == "scancel":
		id, _ := strconv.Atoi(args[0])
		j, ok := f.jobs[id]
		switch {
		case !ok:
			return nil, fail(name, args, "scancel: error: Kill job error on job id "+args[0]+": Invalid job id specified")
		case j.state == "COMPLETED" || j.state == "FAILED" || j.state == "CANCELLED":
			return nil, fail(name, args, "scancel: error: Kill job error on job id "+args[0]+": Job/step already completing or completed")
		}
		j.state, j.reason, j.exit = "CANCELLED", "None", "0:15"
		return nil, nil
	case cmd == "scontrol show job -o":
		if len(f.jobs) == 0 {
			return []byte("No jobs in the system\n"), nil
		}
		var ids []int
		for id := range f.jobs {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(f.jobs[id].line() + "\n")
		}
		return []byte(b.String()), nil
	case strings.HasPrefix(cmd, "scontrol show job -o "):
		id, _ := strconv.Atoi(args[3])
		j, ok := f.jobs[id]
		if !ok {
			return nil, fail(name, args, "slurm_load_jobs error: Invalid job id specified")
		}
		return []byte(j.line() + "\n"), nil
	case cmd == "scontrol ping":
		return []byte("Slurmctld(primary) at login is UP\n"), nil
	case cmd == "scontrol show partition -o" || cmd == "scontrol show partition -o debug":
		return []byte(partitionLine), nil
	case cmd == "scontrol show partition -o gpu":
		return []byte(strings.Split(partitionLine, "\n")[1] + "\n"), nil
	case cmd == "scontrol show node -o":
		return []byte(f.nodes), nil
	case name == "tail" && len(args) == 3 && args[0] == "-c":
		data, ok := f.files[args[2]]
		if !ok {
			return nil, fail(name, args, "tail: cannot open '"+args[2]+"' for reading: No such file or directory")
		}
		from, _ := strconv.Atoi(strings.TrimPrefix(args[1], "+"))
		if from-1 >= len(data) {
			return nil, nil
		}
		return []byte(data[from-1:]), nil
	}
	return nil, fail(name, args, "fake slurm: unexpected command: "+cmd)
}
