package slurm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// cannedRunner answers each command line with fixed output or an error.
type cannedRunner struct {
	out   map[string]string
	err   map[string]error
	calls []string
	stdin map[string]string
}

func (r *cannedRunner) Run(_ context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	cmd := shellJoin(name, args)
	r.calls = append(r.calls, cmd)
	if r.stdin == nil {
		r.stdin = map[string]string{}
	}
	r.stdin[cmd] = string(stdin)
	if err, ok := r.err[cmd]; ok {
		return []byte(r.out[cmd]), err
	}
	out, ok := r.out[cmd]
	if !ok {
		return nil, fail(name, args, "unexpected command "+cmd)
	}
	return []byte(out), nil
}

func TestParseJobs(t *testing.T) {
	running := &fakeJob{id: 12, name: "default_matmul-abc", comment: "minik8s:1234", workdir: "/tmp/x", state: "RUNNING", reason: "None",
		partition: "debug", nodes: "node2", start: "2026-11-26T12:00:05"}
	failed := &fakeJob{id: 13, name: "default_fail", comment: "minik8s:5678", workdir: "/tmp/y", state: "TIMEOUT", reason: "TimeLimit",
		partition: "gpu", nodes: "node[1-2]", start: "2026-11-26T12:00:05", end: "2026-11-26T12:05:05", exit: "0:15"}
	spaces := &fakeJob{id: 14, name: "default_odd", comment: "minik8s:9 extra=words here", workdir: "/tmp/z", state: "PENDING",
		reason: "ReqNodeNotAvail,_UnavailableNodes:node1", partition: "debug"}
	c := NewClient(&cannedRunner{out: map[string]string{
		"scontrol show job -o": running.line() + "\n" + failed.line() + "\n" + spaces.line() + "\n",
	}}, time.UTC)
	jobs, err := c.Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 {
		t.Fatalf("got %d jobs, want 3: %+v", len(jobs), jobs)
	}
	for _, tc := range []struct {
		got, want JobInfo
	}{
		{jobs[0], JobInfo{ID: "12", Name: "default_matmul-abc", State: "RUNNING", Reason: "None", Partition: "debug", NodeList: "node2",
			Submit: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), Start: time.Date(2026, 11, 26, 12, 0, 5, 0, time.UTC),
			StdOut: "/tmp/x/12.out", StdErr: "/tmp/x/12.out", WorkDir: "/tmp/x", Comment: "minik8s:1234", TimeLimit: "UNLIMITED"}},
		{jobs[1], JobInfo{ID: "13", Name: "default_fail", State: "TIMEOUT", Reason: "TimeLimit", Partition: "gpu", NodeList: "node[1-2]",
			ExitCode: 0, Signal: 15, Submit: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), Start: time.Date(2026, 11, 26, 12, 0, 5, 0, time.UTC),
			End: time.Date(2026, 11, 26, 12, 5, 5, 0, time.UTC), StdOut: "/tmp/y/13.out", StdErr: "/tmp/y/13.out", WorkDir: "/tmp/y",
			Comment: "minik8s:5678", TimeLimit: "UNLIMITED"}},
		{jobs[2], JobInfo{ID: "14", Name: "default_odd", State: "PENDING", Reason: "ReqNodeNotAvail,_UnavailableNodes:node1", Partition: "debug",
			Submit: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), StdOut: "/tmp/z/14.out", StdErr: "/tmp/z/14.out", WorkDir: "/tmp/z",
			Comment: "minik8s:9 extra=words here", TimeLimit: "UNLIMITED"}},
	} {
		if tc.got != tc.want {
			t.Errorf("job %s:\n got %+v\nwant %+v", tc.want.ID, tc.got, tc.want)
		}
	}
	if !jobs[1].Terminal() || jobs[0].Terminal() {
		t.Errorf("Terminal: TIMEOUT %v, RUNNING %v", jobs[1].Terminal(), jobs[0].Terminal())
	}
}

func TestClientCommands(t *testing.T) {
	ctx := context.Background()
	r := &cannedRunner{
		out: map[string]string{
			"mkdir -p /w/default/p-1":      "",
			"sbatch --parsable":            "sbatch: warning: something\n42;cluster\n",
			"scontrol show job -o 99":      "",
			"scancel 7":                    "",
			"scancel 8":                    "",
			"scancel 9":                    "",
			"scontrol ping":                "Slurmctld(primary) at login is DOWN\n",
			"scontrol show job -o":         "No jobs in the system\n",
			"scontrol show partition -o":   partitionLine,
			"scontrol show partition -o x": "",
			"scontrol show node -o":        nodeLines,
		},
		err: map[string]error{
			"scontrol show job -o 99": fail("scontrol", nil, "slurm_load_jobs error: Invalid job id specified"),
			"scancel 8":               fail("scancel", nil, "scancel: error: Kill job error on job id 8: Job/step already completing or completed"),
			"scancel 9":               fail("scancel", nil, "scancel: error: Kill job error on job id 9: Invalid job id specified"),
			"scontrol ping":           fail("scontrol", nil, ""),
		},
	}
	c := NewClient(r, time.UTC)

	id, err := c.Submit(ctx, Job{Name: "default_p", WorkDir: "/w/default/p-1", Script: "#!/bin/bash\ntrue\n"})
	if err != nil || id != "42" {
		t.Errorf("Submit = %q, %v; want 42", id, err)
	}
	if got := r.stdin["sbatch --parsable"]; got != "#!/bin/bash\ntrue\n" {
		t.Errorf("sbatch stdin = %q", got)
	}
	if _, err := c.Job(ctx, "99"); !IsNotFound(err) {
		t.Errorf("Job(99) = %v, want not found", err)
	}
	var nf *NotFoundError
	if err := c.Cancel(ctx, "9"); !errors.As(err, &nf) || nf.JobID != "9" {
		t.Errorf("Cancel(9) = %v, want *NotFoundError", err)
	}
	for _, id := range []string{"7", "8"} {
		if err := c.Cancel(ctx, id); err != nil {
			t.Errorf("Cancel(%s) = %v", id, err)
		}
	}
	if err := c.Ping(ctx); err == nil {
		t.Error("Ping of a DOWN slurmctld succeeded")
	}
	if jobs, err := c.JobsByPrefix(ctx, "default_"); err != nil || len(jobs) != 0 {
		t.Errorf("JobsByPrefix on no jobs = %v, %v", jobs, err)
	}

	part, err := c.Partition(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if part.Name != "debug" || !part.Default || !part.Up || len(part.Nodes) != 2 {
		t.Errorf("default partition = %+v", part)
	}
	for res, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "12", corev1.ResourceMemory: "23800Mi", ResourceGPU: "2"} {
		if q := part.Capacity[res]; q.String() != want {
			t.Errorf("capacity %s = %s, want %s", res, q.String(), want)
		}
	}
	if n := part.Nodes[0]; n.Name != "node1" || n.CPUs != 4 || n.MemoryMiB != 7900 || n.GPUs != 0 || n.State != "IDLE" {
		t.Errorf("node1 = %+v", n)
	}
	if _, err := c.Partition(ctx, "x"); err == nil {
		t.Error("Partition(x) found a partition")
	}
}

func TestNodeStateAndGres(t *testing.T) {
	for state, up := range map[string]bool{
		"IDLE": true, "MIXED": true, "ALLOCATED": true, "IDLE+CLOUD+POWERED_DOWN": true, "COMPLETING": true,
		"DOWN": false, "IDLE*": false, "IDLE+DRAIN": false, "MIXED+DRAIN": false, "DOWN+NOT_RESPONDING": false, "FUTURE": false, "": false,
	} {
		if got := (NodeInfo{State: state}).NodeUp(); got != up {
			t.Errorf("NodeUp(%q) = %v, want %v", state, got, up)
		}
	}
	for gres, want := range map[string]int64{
		"(null)": 0, "gpu:2": 2, "gpu:a100:4(S:0-1)": 4, "gpu:1,mps:100": 1, "gpu:a100:2,gpu:v100:1": 3, "mps:100": 0, "gpu:a100:2(S:0,1)": 2,
	} {
		if got := gresGPUs(gres); got != want {
			t.Errorf("gresGPUs(%q) = %d, want %d", gres, got, want)
		}
	}
}

func TestShell(t *testing.T) {
	for in, want := range map[string]string{"abc": "abc", "": "''", "a b": "'a b'", "it's": `'it'\''s'`, "--mem=1G": "--mem=1G", "$HOME": "'$HOME'"} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{
		`--a=1 --b="x y"`:        "--a=1|--b=x y",
		`--c='q "r"' \ d`:        `--c=q "r"| d`,
		"  --e  \t --f=\"\\\"\"": `--e|--f="`,
	} {
		got, err := splitShell(in)
		if err != nil || strings.Join(got, "|") != want {
			t.Errorf("splitShell(%q) = %q, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{`--a='x`, `--b="y`, `--c\`} {
		if _, err := splitShell(bad); err == nil {
			t.Errorf("splitShell(%q) succeeded", bad)
		}
	}
	r := &SSHRunner{cfg: SSHConfig{Env: []string{"SLURM_CONF=/etc/slurm x/slurm.conf"}, Dir: "/home/u"}}
	if got, want := r.Command("scontrol", []string{"show", "job", "-o", "1"}), "cd /home/u && env 'SLURM_CONF=/etc/slurm x/slurm.conf' scontrol show job -o 1"; got != want {
		t.Errorf("ssh command = %s, want %s", got, want)
	}
}

func TestNewSSHRunner(t *testing.T) {
	if _, err := NewSSHRunner(SSHConfig{Addr: "login", User: "u", PrivateKey: []byte("not a key")}); err == nil {
		t.Error("a bad key was accepted")
	}
	if _, err := NewSSHRunner(SSHConfig{Addr: "login"}); err == nil {
		t.Error("no user was accepted")
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
