package slurmtest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func ended(f map[string]string) bool {
	switch f["JobState"] {
	case "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING":
		return false
	}
	return f["JobState"] != ""
}

func state(s string) func(map[string]string) bool {
	return func(f map[string]string) bool { return f["JobState"] == s }
}

func submit(ctx context.Context, t *testing.T, c *Cluster, args ...string) string {
	t.Helper()
	id, err := c.Output(ctx, "sbatch", append([]string{"--parsable"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	id, _, _ = strings.Cut(id, ";") // id;cluster on multi-cluster setups
	return id
}

// TestCluster runs the job life cycles the Slurm provider maps onto pods
// against a real one-host cluster.
func TestCluster(t *testing.T) {
	c := Start(t, Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	t.Run("failed job keeps its exit code and output", func(t *testing.T) {
		out := filepath.Join(c.Dir, "hello-%j.out")
		id := submit(ctx, t, c, "--output", out, "--wrap", "echo hello; exit 3")
		f, err := c.WaitJob(ctx, id, ended)
		if err != nil {
			t.Fatal(err)
		}
		if f["JobState"] != "FAILED" || f["ExitCode"] != "3:0" {
			t.Errorf("job %s: JobState=%s ExitCode=%s, want FAILED 3:0", id, f["JobState"], f["ExitCode"])
		}
		if want := strings.ReplaceAll(out, "%j", id); f["StdOut"] != want {
			t.Errorf("StdOut=%s, want %s", f["StdOut"], want)
		}
		data, err := os.ReadFile(f["StdOut"])
		if err != nil || string(data) != "hello\n" {
			t.Errorf("output %q, %v; want hello", data, err)
		}
	})

	t.Run("successful job completes", func(t *testing.T) {
		id := submit(ctx, t, c, "--output", filepath.Join(c.Dir, "ok-%j.out"), "--wrap", "true")
		f, err := c.WaitJob(ctx, id, ended)
		if err != nil {
			t.Fatal(err)
		}
		if f["JobState"] != "COMPLETED" || f["ExitCode"] != "0:0" {
			t.Errorf("JobState=%s ExitCode=%s, want COMPLETED 0:0", f["JobState"], f["ExitCode"])
		}
	})

	// What a request beyond the partition gives is what the provider must
	// report: slurm 22.05 with the default EnforcePartLimits=NO queues too
	// many CPUs (PENDING, Reason=PartitionConfig) but refuses too much memory
	// at submission. Either answer is accepted here; the log says which.
	for _, tc := range []struct{ name, arg string }{
		{"too many CPUs", "--cpus-per-task=" + strconv.Itoa(c.CPUs*4)},
		{"too much memory", "--mem=" + strconv.Itoa(c.MemoryMiB*4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := c.Output(ctx, "sbatch", "--parsable", tc.arg, "--wrap", "true")
			if err != nil {
				t.Logf("sbatch %s refused the job: %v", tc.arg, err)
				return
			}
			f, err := c.WaitJob(ctx, id, func(f map[string]string) bool {
				return f["JobState"] != "PENDING" || (f["Reason"] != "" && f["Reason"] != "None")
			})
			if err != nil {
				t.Fatal(err)
			}
			if f["JobState"] != "PENDING" {
				t.Fatalf("job %s asking %s is %s, want PENDING with a reason", id, tc.arg, f["JobState"])
			}
			t.Logf("sbatch %s queued job %s: JobState=%s Reason=%s", tc.arg, id, f["JobState"], f["Reason"])
			if _, err := c.Output(ctx, "scancel", id); err != nil {
				t.Error(err)
			}
		})
	}

	t.Run("scancel cancels a running job", func(t *testing.T) {
		id := submit(ctx, t, c, "--output", filepath.Join(c.Dir, "sleep-%j.out"), "--time=1", "--wrap", "sleep 600")
		f, err := c.WaitJob(ctx, id, state("RUNNING"))
		if err != nil {
			t.Fatal(err)
		}
		if f["TimeLimit"] != "00:01:00" || f["NodeList"] != c.NodeName || f["Partition"] != Partition {
			t.Errorf("TimeLimit=%s NodeList=%s Partition=%s, want 00:01:00 %s %s", f["TimeLimit"], f["NodeList"], f["Partition"], c.NodeName, Partition)
		}
		if _, err := c.Output(ctx, "scancel", id); err != nil {
			t.Fatal(err)
		}
		if f, err = c.WaitJob(ctx, id, ended); err != nil {
			t.Fatal(err)
		}
		if f["JobState"] != "CANCELLED" {
			t.Errorf("JobState=%s after scancel, want CANCELLED", f["JobState"])
		}
	})
}

// TestGPUs checks the fake GPUs: --gres=gpu:N schedules and sets
// CUDA_VISIBLE_DEVICES, and more GPUs than the node has are not run.
func TestGPUs(t *testing.T) {
	c := Start(t, Config{GPUs: 2})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	node, err := c.Output(ctx, "scontrol", "show", "node", "-o", c.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	if f := ParseOneLine(node); f["Gres"] != "gpu:2" {
		t.Errorf("node Gres=%s, want gpu:2", f["Gres"])
	}
	id := submit(ctx, t, c, "--gres=gpu:1", "--output", filepath.Join(c.Dir, "gpu-%j.out"), "--wrap", "echo $CUDA_VISIBLE_DEVICES")
	f, err := c.WaitJob(ctx, id, ended)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(f["StdOut"])
	if f["JobState"] != "COMPLETED" || strings.TrimSpace(string(data)) != "0" {
		t.Errorf("gpu job: JobState=%s output %q, want COMPLETED and 0", f["JobState"], data)
	}
	if id, err := c.Output(ctx, "sbatch", "--parsable", "--gres=gpu:4", "--wrap", "true"); err != nil {
		t.Logf("sbatch --gres=gpu:4 refused: %v", err)
	} else {
		f, _ := c.Job(ctx, id)
		t.Logf("sbatch --gres=gpu:4 queued: JobState=%s Reason=%s", f["JobState"], f["Reason"])
	}
}

// TestParallelClustersAndStop runs two clusters at once, each with a job in
// flight, and checks that stopping one leaves the other working and that
// nothing of a stopped cluster keeps running.
func TestParallelClustersAndStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	clusters := make([]*Cluster, 2)
	var wg sync.WaitGroup
	for i := range clusters {
		wg.Go(func() { clusters[i] = Start(t, Config{}) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	a, b := clusters[0], clusters[1]
	if a.Name == b.Name || a.CtldPort == b.CtldPort || a.SlurmdPort == b.SlurmdPort {
		t.Fatalf("clusters share a name or port: %+v %+v", a, b)
	}
	var sleeps []string
	for _, c := range clusters {
		id := submit(ctx, t, c, "--output", filepath.Join(c.Dir, "sleep-%j.out"), "--wrap", "sleep 600")
		if _, err := c.WaitJob(ctx, id, state("RUNNING")); err != nil {
			t.Fatal(err)
		}
		sleeps = append(sleeps, id)
		if q, _ := c.Output(ctx, "squeue", "-h", "-o", "%A"); q != id {
			t.Errorf("cluster %s queue %q, want only its own job %s", c.Name, q, id)
		}
	}
	mine := a.leftovers()
	if len(mine) == 0 {
		t.Fatalf("no processes found for cluster %s's running job", a.Name)
	}
	began := time.Now()
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster %s stopped in %v", a.Name, time.Since(began).Round(time.Millisecond))
	if left := a.leftovers(); len(left) != 0 {
		t.Errorf("cluster %s left processes running: %v", a.Name, left)
	}
	for _, pid := range mine {
		if syscall.Kill(pid, 0) == nil {
			if _, zombie := stat(pid); !zombie {
				t.Errorf("process %d of stopped cluster %s still alive", pid, a.Name)
			}
		}
	}
	if f, err := b.Job(ctx, sleeps[1]); err != nil || f["JobState"] != "RUNNING" {
		t.Errorf("cluster %s's job after the other stopped: %v %v", b.Name, f["JobState"], err)
	}
}
