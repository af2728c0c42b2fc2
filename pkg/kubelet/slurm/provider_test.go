package slurm

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet"
)

type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) Eventf(_ runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, eventtype+" "+reason+" "+fmt.Sprintf(messageFmt, args...))
}

func newTestProvider(t *testing.T, f *fakeSlurm, rec EventRecorder) *Provider {
	t.Helper()
	p, err := New(Config{NodeName: "slurm-gpu", Runner: f, Location: time.UTC, WorkRoot: "/shared/minik8s",
		Recorder: rec, LogPollInterval: time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func simplePod(name, uid string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + uid + "-0000")},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{
			{Name: "main", Image: "busybox", Command: []string{"sh", "-c", "echo hello"}}}},
	}
}

// notified collects the pods a provider reports.
type notified struct {
	mu   sync.Mutex
	pods []*corev1.Pod
}

func (n *notified) add(p *corev1.Pod) { n.mu.Lock(); n.pods = append(n.pods, p); n.mu.Unlock() }
func (n *notified) last() *corev1.Pod {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.pods) == 0 {
		return nil
	}
	return n.pods[len(n.pods)-1]
}
func (n *notified) count() int { n.mu.Lock(); defer n.mu.Unlock(); return len(n.pods) }

func TestProviderLifecycle(t *testing.T) {
	ctx := context.Background()
	f := newFakeSlurm()
	rec := &events{}
	p := newTestProvider(t, f, rec)
	var n notified
	p.NotifyPods(ctx, n.add)

	pod := simplePod("hello", "a1b2c3d4")
	if err := p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := f.count("sbatch"); got != 1 {
		t.Fatalf("sbatch ran %d times, want 1", got)
	}
	j := f.job(12)
	if j.name != "default_hello" || j.comment != "minik8s:uid-a1b2c3d4-0000" || j.workdir != "/shared/minik8s/default/hello-uid-a1b2" {
		t.Errorf("submitted %+v", j)
	}
	if f.count("mkdir -p /shared/minik8s/default/hello-uid-a1b2") != 1 {
		t.Errorf("work dir not created: %q", f.calls)
	}
	if want := []string{
		"Normal ImageNotRun image busybox not run: the command runs on the Slurm node",
		"Normal Submitted Slurm job 12 submitted to partition debug",
	}; strings.Join(rec.list, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(rec.list, "\n"), strings.Join(want, "\n"))
	}
	if n.count() != 1 || n.last().Status.Phase != corev1.PodPending {
		t.Fatalf("notified %d times, last %v", n.count(), n.last())
	}

	f.set(12, func(j *fakeJob) { j.reason = "Priority" })
	steps := []struct {
		mutate func(j *fakeJob)
		phase  corev1.PodPhase
		check  func(t *testing.T, st *corev1.PodStatus)
	}{
		{func(j *fakeJob) { j.reason = "Resources" }, corev1.PodPending, func(t *testing.T, st *corev1.PodStatus) {
			if w := st.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "Resources" {
				t.Errorf("waiting = %+v", w)
			}
		}},
		{func(j *fakeJob) {
			j.state, j.reason, j.nodes, j.start = "RUNNING", "None", "node2", "2026-11-26T12:01:00"
		}, corev1.PodRunning,
			func(t *testing.T, st *corev1.PodStatus) {
				r := st.ContainerStatuses[0].State.Running
				if r == nil || !r.StartedAt.Equal(ptr.To(metav1.NewTime(time.Date(2026, 11, 26, 12, 1, 0, 0, time.UTC)))) {
					t.Errorf("running = %+v", r)
				}
			}},
		{func(j *fakeJob) { j.state, j.end = "COMPLETED", "2026-11-26T12:02:00" }, corev1.PodSucceeded, func(t *testing.T, st *corev1.PodStatus) {
			if term := st.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
				t.Errorf("terminated = %+v", term)
			}
		}},
	}
	for i, s := range steps {
		before := n.count()
		f.set(12, s.mutate)
		if err := p.Poll(ctx); err != nil {
			t.Fatal(err)
		}
		if n.count() != before+1 {
			t.Errorf("step %d: notified %d times, want once", i, n.count()-before)
		}
		st, _ := p.GetPodStatus(ctx, "default", "hello")
		if st == nil || st.Phase != s.phase {
			t.Fatalf("step %d: status %+v, want phase %s", i, st, s.phase)
		}
		s.check(t, st)
		// A poll that sees no change reports nothing.
		if err := p.Poll(ctx); err != nil || n.count() != before+1 {
			t.Errorf("step %d: unchanged poll notified (%v)", i, err)
		}
	}
	info, ok := p.JobInfo("default", "hello")
	if !ok || info.ID != "12" || info.NodeList != "node2" {
		t.Errorf("JobInfo = %+v, %v", info, ok)
	}
	if a := info.Annotations(); a[AnnotationJobID] != "12" || a[AnnotationSubmitTime] != "2026-11-26T12:00:00Z" || a[AnnotationNodeList] != "node2" {
		t.Errorf("annotations = %v", a)
	}
}

func TestPodStatusMapping(t *testing.T) {
	pod := simplePod("m", "1")
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Command: []string{"true"}}}
	base := JobInfo{ID: "12", Partition: "debug", Submit: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC),
		Start: time.Date(2026, 11, 26, 12, 1, 0, 0, time.UTC), End: time.Date(2026, 11, 26, 12, 2, 0, 0, time.UTC)}
	for _, tc := range []struct {
		state, reason string
		exit, sig     int
		lost          bool
		phase         corev1.PodPhase
		podReason     string
		waiting       string // container waiting reason
		termReason    string
		termCode      int32
	}{
		{state: "PENDING", reason: "Priority", phase: corev1.PodPending, waiting: "Priority"},
		{state: "PENDING", reason: "Resources", phase: corev1.PodPending, waiting: "Resources"},
		{state: "CONFIGURING", reason: "None", phase: corev1.PodPending, waiting: "CONFIGURING"},
		{state: "REQUEUED", reason: "BeginTime", phase: corev1.PodPending, waiting: "BeginTime"},
		{state: "RUNNING", reason: "None", phase: corev1.PodRunning},
		{state: "COMPLETING", reason: "None", phase: corev1.PodRunning},
		{state: "COMPLETED", reason: "None", phase: corev1.PodSucceeded, termReason: "Completed"},
		{state: "FAILED", reason: "NonZeroExitCode", exit: 3, phase: corev1.PodFailed, podReason: "FAILED", termReason: "FAILED", termCode: 3},
		{state: "TIMEOUT", reason: "TimeLimit", sig: 15, phase: corev1.PodFailed, podReason: "TIMEOUT", termReason: "TIMEOUT", termCode: 143},
		{state: "OUT_OF_MEMORY", reason: "OutOfMemory", exit: 0, sig: 9, phase: corev1.PodFailed, podReason: "OUT_OF_MEMORY", termReason: "OUT_OF_MEMORY", termCode: 137},
		{state: "NODE_FAIL", reason: "NodeDown", exit: 1, phase: corev1.PodFailed, podReason: "NODE_FAIL", termReason: "NODE_FAIL", termCode: 1},
		{state: "CANCELLED", reason: "None", sig: 15, phase: corev1.PodFailed, podReason: "CANCELLED", termReason: "CANCELLED", termCode: 143},
		{state: "PREEMPTED", reason: "None", phase: corev1.PodFailed, podReason: "PREEMPTED", termReason: "PREEMPTED"},
		{state: "BOOT_FAIL", reason: "None", phase: corev1.PodFailed, podReason: "BOOT_FAIL", termReason: "BOOT_FAIL"},
		{state: "DEADLINE", reason: "None", phase: corev1.PodFailed, podReason: "DEADLINE", termReason: "DEADLINE"},
		{state: "RUNNING", reason: "None", lost: true, phase: corev1.PodFailed, podReason: "ContainerStatusUnknown", termReason: "ContainerStatusUnknown", termCode: 137},
	} {
		t.Run(tc.state+"_"+tc.reason, func(t *testing.T) {
			j := base
			j.State, j.Reason, j.ExitCode, j.Signal = tc.state, tc.reason, tc.exit, tc.sig
			st := podStatus(pod, &entry{pod: pod, job: j, lost: tc.lost})
			if st.Phase != tc.phase || st.Reason != tc.podReason {
				t.Errorf("phase %s reason %q, want %s %q", st.Phase, st.Reason, tc.phase, tc.podReason)
			}
			if !strings.Contains(st.Message, "Slurm job 12, partition debug, state "+tc.state) {
				t.Errorf("message %q", st.Message)
			}
			conds := map[corev1.PodConditionType]corev1.PodCondition{}
			for _, c := range st.Conditions {
				conds[c.Type] = c
			}
			if c := conds[corev1.PodScheduled]; c.Status != corev1.ConditionTrue {
				t.Errorf("PodScheduled = %+v", c)
			}
			if c := conds[ConditionJob]; c.Reason != tc.state || !strings.Contains(c.Message, "submitted 2026-11-26T12:00:00Z") {
				t.Errorf("job condition = %+v", c)
			}
			wantReady := corev1.ConditionFalse
			if tc.phase == corev1.PodRunning {
				wantReady = corev1.ConditionTrue
			}
			if c := conds[corev1.PodReady]; c.Status != wantReady {
				t.Errorf("Ready = %+v, want %s", c, wantReady)
			}
			if len(st.ContainerStatuses) != 1 || len(st.InitContainerStatuses) != 1 {
				t.Fatalf("container statuses %+v / %+v", st.ContainerStatuses, st.InitContainerStatuses)
			}
			cs := st.ContainerStatuses[0]
			switch {
			case tc.waiting != "":
				if cs.State.Waiting == nil || cs.State.Waiting.Reason != tc.waiting || *cs.Started {
					t.Errorf("container state %+v, want waiting %s", cs.State, tc.waiting)
				}
				if c := conds[corev1.PodReady]; c.Reason != tc.waiting {
					t.Errorf("Ready reason %q, want %s", c.Reason, tc.waiting)
				}
			case tc.termReason != "":
				term := cs.State.Terminated
				if term == nil || term.Reason != tc.termReason || term.ExitCode != tc.termCode || !term.FinishedAt.Time.Equal(base.End) {
					t.Errorf("container state %+v, want terminated %s %d", term, tc.termReason, tc.termCode)
				}
			default:
				if cs.State.Running == nil || !cs.Ready || st.InitContainerStatuses[0].State.Terminated == nil {
					t.Errorf("container %+v init %+v, want running after init", cs.State, st.InitContainerStatuses[0].State)
				}
			}
		})
	}
}

func TestProviderReattach(t *testing.T) {
	ctx := context.Background()
	f := newFakeSlurm()
	p1 := newTestProvider(t, f, nil)
	pod := simplePod("hello", "a1b2c3d4")
	if err := p1.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	f.set(12, func(j *fakeJob) { j.state, j.start, j.nodes = "RUNNING", "2026-11-26T12:01:00", "node1" })
	// A job that is not ours is left alone.
	f.jobs[40] = &fakeJob{id: 40, name: "someone_else", state: "RUNNING", partition: "debug", workdir: "/home/u"}

	// The provider restarts: the kubelet asks for the pods first.
	p2 := newTestProvider(t, f, nil)
	pods, err := p2.GetPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || pods[0].Namespace != "default" || pods[0].Name != "hello" || pods[0].UID != pod.UID ||
		pods[0].Status.Phase != corev1.PodRunning {
		t.Fatalf("adopted %+v", pods)
	}
	if err := p2.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := p2.UpdatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	got, _ := p2.GetPod(ctx, "default", "hello")
	if len(got.Status.ContainerStatuses) != 1 || got.Status.ContainerStatuses[0].State.Running == nil {
		t.Errorf("after UpdatePod: %+v", got.Status.ContainerStatuses)
	}
	// A third run that has not polled yet finds the job on CreatePod.
	p3 := newTestProvider(t, f, nil)
	if err := p3.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := f.count("sbatch"); got != 1 {
		t.Errorf("sbatch ran %d times, want 1", got)
	}
	if info, ok := p3.JobInfo("default", "hello"); !ok || info.ID != "12" {
		t.Errorf("p3 job = %+v", info)
	}
}

func TestProviderDelete(t *testing.T) {
	ctx := context.Background()
	f := newFakeSlurm()
	p := newTestProvider(t, f, nil)
	pod := simplePod("hello", "a1b2c3d4")
	if err := p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := p.DeletePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if f.count("scancel 12") != 1 || f.job(12).state != "CANCELLED" {
		t.Errorf("job not cancelled: %q", f.calls)
	}
	// Slurm still lists the cancelled job: it must not come back.
	if err := p.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.GetPod(ctx, "default", "hello"); got != nil {
		t.Errorf("deleted pod came back: %+v", got)
	}
	// A finished job is not cancelled again; a job Slurm forgot is no error.
	pod2 := simplePod("done", "2")
	_ = p.CreatePod(ctx, pod2)
	f.set(13, func(j *fakeJob) { j.state = "COMPLETED" })
	_ = p.Poll(ctx)
	if err := p.DeletePod(ctx, pod2); err != nil || f.count("scancel 13") != 0 {
		t.Errorf("delete of a completed job: %v, %q", err, f.calls)
	}
	pod3 := simplePod("forgotten", "3")
	_ = p.CreatePod(ctx, pod3)
	f.mu.Lock()
	delete(f.jobs, 14)
	f.mu.Unlock()
	if err := p.DeletePod(ctx, pod3); err != nil {
		t.Errorf("delete of a forgotten job: %v", err)
	}
}

func TestProviderBadPod(t *testing.T) {
	ctx := context.Background()
	f := newFakeSlurm()
	rec := &events{}
	p := newTestProvider(t, f, rec)
	pod := simplePod("bad", "1")
	pod.Spec.Containers[0].Command = nil
	if err := p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	st, _ := p.GetPodStatus(ctx, "default", "bad")
	if st.Phase != corev1.PodPending || st.ContainerStatuses[0].State.Waiting.Reason != "CreateContainerConfigError" {
		t.Errorf("status %+v", st)
	}
	if f.count("sbatch") != 0 || len(rec.list) != 1 || !strings.Contains(rec.list[0], "Warning FailedToSubmit") {
		t.Errorf("calls %q events %q", f.calls, rec.list)
	}
}

func TestConfigureNode(t *testing.T) {
	ctx := context.Background()
	f := newFakeSlurm()
	p := newTestProvider(t, f, nil)
	ready := func(n *corev1.Node) corev1.NodeCondition {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c
			}
		}
		t.Fatalf("no Ready condition in %+v", n.Status.Conditions)
		return corev1.NodeCondition{}
	}
	node := &corev1.Node{}
	p.ConfigureNode(ctx, node)
	if node.Labels["type"] != "virtual-kubelet" || node.Labels["minik8s.io/provider"] != "slurm" {
		t.Errorf("labels %v", node.Labels)
	}
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0] != (corev1.Taint{Key: "virtual-kubelet.io/provider", Value: "slurm", Effect: corev1.TaintEffectNoSchedule}) {
		t.Errorf("taints %v", node.Spec.Taints)
	}
	for res, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "12", corev1.ResourceMemory: "23800Mi", ResourceGPU: "2", corev1.ResourcePods: "1k"} {
		if q := node.Status.Capacity[res]; q.String() != want {
			t.Errorf("capacity %s = %s, want %s", res, q.String(), want)
		}
		if q := node.Status.Allocatable[res]; q.String() != want {
			t.Errorf("allocatable %s = %s, want %s", res, q.String(), want)
		}
	}
	if c := ready(node); c.Status != corev1.ConditionTrue || c.Message != "slurmctld answers; partition debug has 2 of 2 nodes up" {
		t.Errorf("Ready = %+v", c)
	}

	f.down = true
	node = &corev1.Node{}
	p.ConfigureNode(ctx, node)
	if c := ready(node); c.Status != corev1.ConditionFalse || c.Reason != "SlurmUnreachable" || !strings.Contains(c.Message, "Unable to contact slurm controller") {
		t.Errorf("Ready while down = %+v", c)
	}
	if q := node.Status.Capacity[ResourceGPU]; q.String() != "2" {
		t.Errorf("capacity while down lost: %v", node.Status.Capacity)
	}

	f.down = false
	f.nodes = strings.ReplaceAll(strings.ReplaceAll(nodeLines, "State=IDLE", "State=DOWN+NOT_RESPONDING"), "State=MIXED", "State=IDLE+DRAIN")
	node = &corev1.Node{}
	p.ConfigureNode(ctx, node)
	if c := ready(node); c.Status != corev1.ConditionFalse || c.Reason != "SlurmPartitionDown" {
		t.Errorf("Ready with no node up = %+v", c)
	}

	gpu, _ := New(Config{NodeName: "n", Runner: newFakeSlurm(), WorkRoot: "/w", Partition: "gpu"})
	node = &corev1.Node{}
	gpu.ConfigureNode(ctx, node)
	if q := node.Status.Capacity[corev1.ResourceCPU]; q.String() != "8" || node.Status.NodeInfo.OSImage != "Slurm partition gpu" {
		t.Errorf("gpu partition capacity %v, os %q", node.Status.Capacity, node.Status.NodeInfo.OSImage)
	}
}

func TestLogs(t *testing.T) {
	ctx := context.Background()
	f := newFakeSlurm()
	p := newTestProvider(t, f, nil)
	pod := simplePod("hello", "a1b2c3d4")
	if err := p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	out := "/shared/minik8s/default/hello-uid-a1b2/12.out"
	read := func(opts kubelet.LogOptions) string {
		t.Helper()
		r, err := p.GetContainerLogs(ctx, "default", "hello", "main", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(kubelet.LogOptions{}); got != "" {
		t.Errorf("logs before the file exists = %q", got)
	}
	f.mu.Lock()
	f.files[out] = "line 1\nline 2\nline 3\n"
	f.mu.Unlock()
	if got := read(kubelet.LogOptions{}); got != "line 1\nline 2\nline 3\n" {
		t.Errorf("logs = %q", got)
	}
	if got := read(kubelet.LogOptions{TailLines: ptr.To[int64](2)}); got != "line 2\nline 3\n" {
		t.Errorf("tail 2 = %q", got)
	}
	if _, err := p.GetContainerLogs(ctx, "default", "hello", "main", kubelet.LogOptions{Previous: true}); err == nil {
		t.Error("previous logs served")
	}
	if _, err := p.GetContainerLogs(ctx, "default", "nope", "main", kubelet.LogOptions{}); err == nil {
		t.Error("logs of an unknown pod served")
	}

	// Follow: new output arrives until the job completes.
	f.set(12, func(j *fakeJob) { j.state = "RUNNING" })
	_ = p.Poll(ctx)
	r, err := p.GetContainerLogs(ctx, "default", "hello", "main", kubelet.LogOptions{Follow: true, TailLines: ptr.To[int64](1)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 100)
	got := ""
	for !strings.HasSuffix(got, "line 3\n") {
		n, err := r.Read(buf)
		if err != nil {
			t.Fatalf("read: %v (got %q)", err, got)
		}
		got += string(buf[:n])
	}
	f.mu.Lock()
	f.files[out] += "result: OK\n"
	f.mu.Unlock()
	for !strings.HasSuffix(got, "result: OK\n") {
		n, err := r.Read(buf)
		if err != nil {
			t.Fatalf("read: %v (got %q)", err, got)
		}
		got += string(buf[:n])
	}
	f.mu.Lock()
	f.files[out] += "done\n"
	f.jobs[12].state = "COMPLETED"
	f.mu.Unlock()
	_ = p.Poll(ctx)
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if got += string(rest); got != "line 3\nresult: OK\ndone\n" {
		t.Errorf("followed %q", got)
	}
}
