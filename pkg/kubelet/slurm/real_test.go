package slurm

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/slurm/slurmtest"
)

// realNamespace is the namespace of the pods the real-Slurm tests run.
const realNamespace = "real"

// newRealProvider is a provider of the virtual node "slurm" on cluster c,
// with its work directories in a temporary directory. It does not poll
// until started.
func newRealProvider(t *testing.T, c *slurmtest.Cluster, workRoot string) *Provider {
	t.Helper()
	p, err := New(Config{
		NodeName: "slurm", Runner: LocalRunner{Env: c.Env()}, WorkRoot: workRoot,
		PollInterval: 200 * time.Millisecond, LogPollInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startProvider runs p.Start until the test ends.
func startProvider(t *testing.T, p *Provider) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("provider Start: %v", err)
		}
	})
}

func container(name string, script string, env ...corev1.EnvVar) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox", Command: []string{"sh", "-c", script}, Env: env}
}

func realPod(name string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: realNamespace, Name: name, UID: uuid.NewUUID()},
		Spec:       corev1.PodSpec{NodeName: "slurm", Containers: containers},
	}
}

// waitPod polls the provider's status of the pod until ok holds; it
// returns the last status.
func waitPod(ctx context.Context, t *testing.T, p *Provider, name, what string, ok func(*corev1.PodStatus) bool) *corev1.PodStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last *corev1.PodStatus
	for {
		st, err := p.GetPodStatus(ctx, realNamespace, name)
		if err != nil {
			t.Fatalf("pod %s: status: %v", name, err)
		}
		if st != nil {
			last = st
			if ok(st) {
				return st
			}
		}
		select {
		case <-ctx.Done():
			if last == nil {
				t.Fatalf("pod %s: not %s: the provider does not know it", name, what)
			}
			t.Fatalf("pod %s: not %s: phase %s, reason %q, message %q", name, what, last.Phase, last.Reason, last.Message)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func phaseIs(ph corev1.PodPhase) func(*corev1.PodStatus) bool {
	return func(st *corev1.PodStatus) bool { return st.Phase == ph }
}

// jobsNamed are the ids of the jobs slurmctld lists with this name.
func jobsNamed(ctx context.Context, t *testing.T, c *slurmtest.Cluster, name string) []string {
	t.Helper()
	out, err := c.Output(ctx, "scontrol", "show", "job", "-o")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(out, "\n") {
		if f := slurmtest.ParseOneLine(line); f["JobName"] == name {
			ids = append(ids, f["JobId"])
		}
	}
	return ids
}

func logs(ctx context.Context, t *testing.T, p *Provider, pod, container string) string {
	t.Helper()
	r, err := p.GetContainerLogs(ctx, realNamespace, pod, container, kubelet.LogOptions{})
	if err != nil {
		t.Fatalf("logs of %s/%s: %v", pod, container, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("logs of %s/%s: %v", pod, container, err)
	}
	return string(data)
}

func cancelled(f map[string]string) bool { return f["JobState"] == "CANCELLED" }

// TestReal runs the provider against a real one-host Slurm 22.05 cluster:
// the pod life cycles, deletion, re-attach by a new provider, and the node.
func TestReal(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	workRoot := t.TempDir()
	p := newRealProvider(t, c, workRoot)
	startProvider(t, p)

	t.Run("two containers succeed", func(t *testing.T) {
		pod := realPod("two",
			container("first", "echo one $GREETING", corev1.EnvVar{Name: "GREETING", Value: "hello"}),
			container("second", "echo two; exit 0"))
		if err := p.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		var phases []corev1.PodPhase
		waitPod(ctx, t, p, pod.Name, "Succeeded", func(st *corev1.PodStatus) bool {
			if len(phases) == 0 || phases[len(phases)-1] != st.Phase {
				phases = append(phases, st.Phase)
			}
			return st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed
		})
		if first := phases[0]; len(phases) < 2 || (first != corev1.PodPending && first != corev1.PodRunning) ||
			phases[len(phases)-1] != corev1.PodSucceeded {
			t.Errorf("phases %v, want Pending or Running, then Succeeded", phases)
		}
		st, _ := p.GetPodStatus(ctx, realNamespace, pod.Name)
		for _, cs := range st.ContainerStatuses {
			if term := cs.State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
				t.Errorf("container %s: state %+v, want terminated Completed with exit code 0", cs.Name, cs.State)
			}
		}
		for _, ctr := range []string{"first", "second"} {
			out := logs(ctx, t, p, pod.Name, ctr)
			i, j := strings.Index(out, "one hello\n"), strings.Index(out, "two\n")
			if i < 0 || j < i {
				t.Errorf("logs of %s: %q, want \"one hello\" then \"two\"", ctr, out)
			}
		}
		job, ok := p.JobInfo(realNamespace, pod.Name)
		if !ok || job.ID == "" || job.Partition != slurmtest.Partition || job.NodeList != c.NodeName || job.State != "COMPLETED" {
			t.Errorf("job %+v, want an id, partition %s, node list %s, COMPLETED", job, slurmtest.Partition, c.NodeName)
		}
		if a := job.Annotations(); a[AnnotationJobID] != job.ID || a[AnnotationNodeList] != c.NodeName || a[AnnotationSubmitTime] == "" {
			t.Errorf("annotations %v", a)
		}
		if ids := jobsNamed(ctx, t, c, JobName(realNamespace, pod.Name)); len(ids) != 1 || ids[0] != job.ID {
			t.Errorf("jobs named %s: %v, want [%s]", JobName(realNamespace, pod.Name), ids, job.ID)
		}
	})

	t.Run("exit code 3 fails the pod", func(t *testing.T) {
		pod := realPod("exit3", container("main", "echo failing; exit 3"))
		if err := p.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		st := waitPod(ctx, t, p, pod.Name, "Failed", phaseIs(corev1.PodFailed))
		if st.Reason != "FAILED" {
			t.Errorf("reason %q, want FAILED", st.Reason)
		}
		term := st.ContainerStatuses[0].State.Terminated
		if term == nil || term.ExitCode != 3 || term.Reason != "FAILED" {
			t.Errorf("container state %+v, want terminated FAILED with exit code 3", st.ContainerStatuses[0].State)
		}
		if out := logs(ctx, t, p, pod.Name, "main"); !strings.Contains(out, "failing\n") || !strings.Contains(out, "exited with code 3") {
			t.Errorf("logs %q, want the output and the exit code", out)
		}
	})

	t.Run("too many CPUs stays pending", func(t *testing.T) {
		pod := realPod("cpus", container("main", "true"))
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(c.CPUs*4), resource.DecimalSI)}
		if err := p.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		st := waitPod(ctx, t, p, pod.Name, "pending with PartitionConfig", func(st *corev1.PodStatus) bool {
			return st.Phase == corev1.PodPending && len(st.ContainerStatuses) == 1 &&
				st.ContainerStatuses[0].State.Waiting != nil && st.ContainerStatuses[0].State.Waiting.Reason == "PartitionConfig"
		})
		ready := false
		for _, cond := range st.Conditions {
			if cond.Type == corev1.PodReady {
				ready = true
				if cond.Status != corev1.ConditionFalse || cond.Reason != "PartitionConfig" || !strings.Contains(cond.Message, "PartitionConfig") {
					t.Errorf("Ready condition %+v, want False with reason PartitionConfig", cond)
				}
			}
		}
		if !ready || !strings.Contains(st.Message, "reason PartitionConfig") {
			t.Errorf("status message %q and conditions %+v, want the Slurm reason", st.Message, st.Conditions)
		}
		// Still pending a few polls later.
		time.Sleep(time.Second)
		if st, _ := p.GetPodStatus(ctx, realNamespace, pod.Name); st.Phase != corev1.PodPending {
			t.Errorf("phase %s, want Pending", st.Phase)
		}
		job, _ := p.JobInfo(realNamespace, pod.Name)
		if err := p.DeletePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if f, err := c.WaitJob(ctx, job.ID, cancelled); err != nil {
			t.Fatalf("job %s after DeletePod: %v (%v)", job.ID, err, f)
		}
		if got, _ := p.GetPod(ctx, realNamespace, pod.Name); got != nil {
			t.Errorf("pod still listed after DeletePod: %+v", got.Status)
		}
	})

	t.Run("too much memory fails the submission", func(t *testing.T) {
		pod := realPod("mem", container("main", "true"))
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(strconv.Itoa(c.MemoryMiB*4) + "Mi")}
		if err := p.CreatePod(ctx, pod); err != nil {
			t.Fatalf("CreatePod: %v; want the pod failed, not a retry", err)
		}
		st, err := p.GetPodStatus(ctx, realNamespace, pod.Name)
		if err != nil || st == nil {
			t.Fatalf("status %v, %v", st, err)
		}
		if st.Phase != corev1.PodFailed || st.Reason != "SlurmSubmitFailed" || !strings.Contains(st.Message, "sbatch") {
			t.Errorf("phase %s, reason %q, message %q; want Failed, SlurmSubmitFailed and sbatch's message", st.Phase, st.Reason, st.Message)
		}
		if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Terminated == nil ||
			st.ContainerStatuses[0].State.Terminated.Reason != "SlurmSubmitFailed" || *st.ContainerStatuses[0].Started {
			t.Errorf("container statuses %+v, want terminated SlurmSubmitFailed, not started", st.ContainerStatuses)
		}
		t.Logf("pod status message: %s", st.Message)
		// Slurm 22.05 records the refused job as FAILED (BadConstraints).
		ids := jobsNamed(ctx, t, c, JobName(realNamespace, pod.Name))
		job, hasJob := p.JobInfo(realNamespace, pod.Name)
		switch {
		case len(ids) > 1:
			t.Errorf("jobs %v, want at most one", ids)
		case len(ids) == 1 && (!hasJob || job.ID != ids[0] || !job.Terminal()):
			t.Errorf("slurmctld lists job %s; the provider has %+v, want it, ended", ids[0], job)
		}
		// Polls leave it failed; deleting it needs no Slurm.
		time.Sleep(500 * time.Millisecond)
		if st, _ := p.GetPodStatus(ctx, realNamespace, pod.Name); st == nil || st.Phase != corev1.PodFailed {
			t.Errorf("status after polls %+v, want Failed", st)
		}
		if err := p.DeletePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		// Nor do later polls adopt the refused job as a pod.
		time.Sleep(500 * time.Millisecond)
		if got, _ := p.GetPod(ctx, realNamespace, pod.Name); got != nil {
			t.Errorf("pod listed after DeletePod: %s %s", got.Status.Phase, got.Status.Message)
		}
	})

	t.Run("delete cancels a running pod", func(t *testing.T) {
		pod := realPod("long", container("main", "sleep 600"))
		if err := p.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		waitPod(ctx, t, p, pod.Name, "Running", phaseIs(corev1.PodRunning))
		job, _ := p.JobInfo(realNamespace, pod.Name)
		if err := p.DeletePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if f, err := c.WaitJob(ctx, job.ID, cancelled); err != nil {
			t.Fatalf("job %s after DeletePod: %v (%v)", job.ID, err, f)
		}
		// Polls while slurmctld still lists the cancelled job must not adopt it again.
		time.Sleep(time.Second)
		pods, err := p.GetPods(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range pods {
			if got.Name == pod.Name {
				t.Errorf("pod %s listed after DeletePod: %s", pod.Name, got.Status.Phase)
			}
		}
	})

	t.Run("a new provider re-attaches", func(t *testing.T) {
		pod := realPod("reattach", container("main", "sleep 30"))
		if err := p.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		waitPod(ctx, t, p, pod.Name, "Running", phaseIs(corev1.PodRunning))
		job, _ := p.JobInfo(realNamespace, pod.Name)
		t.Cleanup(func() { _ = p.DeletePod(context.Background(), pod) })
		name := JobName(realNamespace, pod.Name)

		// A restarted kubelet lists its pods first.
		p2 := newRealProvider(t, c, workRoot)
		pods, err := p2.GetPods(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var found *corev1.Pod
		for _, got := range pods {
			if got.Name == pod.Name {
				found = got
			}
		}
		if found == nil || found.Namespace != realNamespace || found.UID != pod.UID || found.Status.Phase != corev1.PodRunning {
			t.Fatalf("new provider's pods %v, want %s/%s uid %s Running", podNames(pods), realNamespace, pod.Name, pod.UID)
		}
		if err := p2.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if err := p2.UpdatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		st, _ := p2.GetPodStatus(ctx, realNamespace, pod.Name)
		if st == nil || st.Phase != corev1.PodRunning || len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Running == nil {
			t.Errorf("status %+v, want Running with its container running", st)
		}
		if got, _ := p2.JobInfo(realNamespace, pod.Name); got.ID != job.ID {
			t.Errorf("new provider's job %s, want %s", got.ID, job.ID)
		}

		// One that is given the pod before it lists finds the job too.
		p3 := newRealProvider(t, c, workRoot)
		if err := p3.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if got, _ := p3.JobInfo(realNamespace, pod.Name); got.ID != job.ID {
			t.Errorf("third provider's job %s, want %s", got.ID, job.ID)
		}
		if st, _ := p3.GetPodStatus(ctx, realNamespace, pod.Name); st == nil || st.Phase != corev1.PodRunning {
			t.Errorf("third provider's status %+v, want Running", st)
		}
		if ids := jobsNamed(ctx, t, c, name); len(ids) != 1 || ids[0] != job.ID {
			t.Errorf("jobs named %s: %v, want only %s", name, ids, job.ID)
		}
	})

	t.Run("activeDeadlineSeconds is the time limit", func(t *testing.T) {
		pod := realPod("deadline", container("main", "sleep 600"))
		pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
		if err := p.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.DeletePod(context.Background(), pod) })
		job, ok := p.JobInfo(realNamespace, pod.Name)
		if !ok {
			t.Fatal("no job")
		}
		f, err := c.Job(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if f["TimeLimit"] != "00:01:00" || job.TimeLimit != "00:01:00" {
			t.Errorf("TimeLimit %s (provider %s), want 00:01:00", f["TimeLimit"], job.TimeLimit)
		}
	})

	t.Run("node", func(t *testing.T) {
		node := &corev1.Node{}
		p.ConfigureNode(ctx, node)
		want := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(int64(c.CPUs), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(c.MemoryMiB)<<20, resource.BinarySI),
			ResourceGPU:           resource.MustParse("0"),
		}
		checkCapacity(t, node, want)
		checkReady(t, node, corev1.ConditionTrue, "SlurmReady")
	})
}

func podNames(pods []*corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Namespace+"/"+p.Name+"("+string(p.UID)+","+string(p.Status.Phase)+")")
	}
	return names
}

func checkCapacity(t *testing.T, node *corev1.Node, want corev1.ResourceList) {
	t.Helper()
	for name, q := range want {
		if got, ok := node.Status.Capacity[name]; !ok || got.Cmp(q) != 0 {
			t.Errorf("capacity %s = %s, want %s", name, got.String(), q.String())
		}
		if got := node.Status.Allocatable[name]; got.Cmp(q) != 0 {
			t.Errorf("allocatable %s = %s, want %s", name, got.String(), q.String())
		}
	}
}

func checkReady(t *testing.T, node *corev1.Node, status corev1.ConditionStatus, reason string) {
	t.Helper()
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status != status || cond.Reason != reason {
				t.Errorf("Ready %s %s (%s), want %s %s", cond.Status, cond.Reason, cond.Message, status, reason)
			}
			return
		}
	}
	t.Errorf("no Ready condition in %+v", node.Status.Conditions)
}

// TestRealNodeGPUs gives the node its GPUs from the partition, and
// reports it not ready once slurmctld is gone.
func TestRealNodeGPUs(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Config{GPUs: 2})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	p := newRealProvider(t, c, t.TempDir())
	want := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(c.CPUs), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(c.MemoryMiB)<<20, resource.BinarySI),
		ResourceGPU:           *resource.NewQuantity(2, resource.DecimalSI),
	}
	node := &corev1.Node{}
	p.ConfigureNode(ctx, node)
	checkCapacity(t, node, want)
	checkReady(t, node, corev1.ConditionTrue, "SlurmReady")

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	node = &corev1.Node{}
	began := time.Now()
	p.ConfigureNode(ctx, node)
	t.Logf("ConfigureNode with slurmctld stopped took %v", time.Since(began).Round(time.Millisecond))
	checkReady(t, node, corev1.ConditionFalse, "SlurmUnreachable")
	// The capacity stays what the partition last had.
	checkCapacity(t, node, want)
}
