package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/kubelet/slurm"
	"github.com/minik8s/minik8s/pkg/kubelet/slurm/slurmtest"
	"github.com/minik8s/minik8s/test/testutil"
)

// A user runs batch Jobs on a Slurm cluster through minik8s: `minik8s
// agent --provider slurm` (a process of its own) joins a control plane
// with the node token and registers the Slurm partition as a virtual node;
// the user's Jobs, scheduled onto it, become Slurm batch jobs on a real
// one-host Slurm cluster (slurmtest). With kubectl the user sees the node,
// runs the examples/gpu CPU example from its ConfigMap of sources, and
// sees Slurm's side of each pod: a job that cannot start stays Pending
// with Slurm's reason, a failing one fails with its exit code and is
// retried as the Job says, the time limit ends one as TIMEOUT, deleting a
// Job cancels its Slurm job, and an agent killed while a job runs picks
// it up again when it comes back, without submitting it twice.
func TestSlurmJobs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the Slurm test cluster runs its daemons as root; run the test as root")
	}
	if err := slurmtest.CheckBinaries(); err != nil {
		t.Skipf("needs Slurm: %v", err)
	}
	bin := minik8sBinary(t)
	sc := slurmtest.Start(t, slurmtest.Config{CPUs: 8})
	c := controlPlaneOnly(t, nil)
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	tag := hex.EncodeToString(b)
	nodeName, ns := "slurm-"+tag, "slurm-"+tag
	agent := startSlurmAgent(t, bin, c, sc, nodeName)
	t.Cleanup(func() {
		if t.Failed() {
			tail, _ := exec.Command("tail", "-n", "60", c.logs.Name()).Output()
			t.Logf("last lines of the control plane's log:\n%s", tail)
		}
	})
	k := &syncKubectl{k: c.kubectl}
	ctx := context.Background()

	slurmWaitFor(t, time.Minute, "node "+nodeName+" Ready with its capacity from Slurm", func(ctx context.Context) (bool, error) {
		if !agent.running() {
			return false, fmt.Errorf("the agent exited:\n%s", agent.tail(60))
		}
		n, err := c.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		return err == nil && nodeReady(n) && !n.Status.Capacity.Cpu().IsZero(), nil
	})
	k.OK(t, "create", "namespace", ns)

	t.Run("kubectl shows the Slurm node", func(t *testing.T) {
		found := false
		for _, line := range strings.Split(k.OK(t, "get", "nodes"), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == nodeName {
				found = true
				if f[1] != "Ready" {
					t.Errorf("kubectl get nodes: %q, want %s Ready", line, nodeName)
				}
			}
		}
		if !found {
			t.Errorf("kubectl get nodes does not list %s", nodeName)
		}
		var n corev1.Node
		if err := json.Unmarshal([]byte(k.OK(t, "get", "node", nodeName, "-o", "json")), &n); err != nil {
			t.Fatal(err)
		}
		if n.Labels[slurm.LabelType] != "virtual-kubelet" || n.Labels[slurm.LabelProvider] != "slurm" {
			t.Errorf("labels %v, want %s=virtual-kubelet and %s=slurm", n.Labels, slurm.LabelType, slurm.LabelProvider)
		}
		want := corev1.Taint{Key: slurm.TaintKey, Value: "slurm", Effect: corev1.TaintEffectNoSchedule}
		if !slices.ContainsFunc(n.Spec.Taints, func(taint corev1.Taint) bool { return taint.MatchTaint(&want) && taint.Value == want.Value }) {
			t.Errorf("taints %v, want %s=slurm:NoSchedule", n.Spec.Taints, slurm.TaintKey)
		}
		if got := n.Status.Capacity.Cpu().Value(); got != int64(sc.CPUs) {
			t.Errorf("cpu capacity %d, want the Slurm partition's %d", got, sc.CPUs)
		}
		if got, want := n.Status.Capacity.Memory().Value(), int64(sc.MemoryMiB)<<20; got != want {
			t.Errorf("memory capacity %d, want the Slurm node's RealMemory %d MiB", got, sc.MemoryMiB)
		}
	})

	// Each scenario its own Job; they share the node and the Slurm cluster
	// (8 CPUs), so they run side by side. The time limit takes longest:
	// Slurm ends a job a minute at least after it starts.
	t.Run("jobs", func(t *testing.T) {
		t.Run("the matmul-cpu example from kubectl apply -k", func(t *testing.T) {
			t.Parallel()
			examples := filepath.Join("..", "..", "examples", "gpu")
			k.OK(t, "apply", "-n", ns, "-k", examples)
			k.OK(t, "apply", "-n", ns, "-f", filepath.Join(examples, "matmul-cpu-job.yaml"))
			slurmWaitJob(t, c.client, ns, "matmul-cpu", 3*time.Minute, "Complete", func(j *batchv1.Job) bool {
				if jobCondition(j, batchv1.JobFailed) {
					logs, _, _ := k.Run(t, "logs", "-n", ns, "job/matmul-cpu")
					t.Fatalf("job matmul-cpu failed: %+v\nlogs:\n%s", j.Status.Conditions, logs)
				}
				return jobCondition(j, batchv1.JobComplete)
			})
			logs := k.OK(t, "logs", "-n", ns, "job/matmul-cpu")
			if !strings.Contains(logs, "max error:") || !slices.Contains(strings.Split(logs, "\n"), "OK") {
				t.Errorf("kubectl logs job/matmul-cpu:\n%s\nwant a max error line and a line OK", logs)
			}
			pods := slurmJobPods(t, c.client, ns, "matmul-cpu")
			if len(pods) != 1 {
				t.Fatalf("%d pods, want 1", len(pods))
			}
			pod := pods[0]
			id := pod.Annotations[slurm.AnnotationJobID]
			if pod.Spec.NodeName != nodeName || pod.Status.Phase != corev1.PodSucceeded || id == "" {
				t.Fatalf("pod %s on %q, phase %s, job id %q; want %s, Succeeded and a Slurm job id", pod.Name, pod.Spec.NodeName, pod.Status.Phase, id, nodeName)
			}
			desc := k.OK(t, "describe", "pod", "-n", ns, "-l", "app=matmul-cpu")
			for _, want := range []string{slurm.AnnotationJobID + ": " + id, string(slurm.ConditionJob)} {
				if !strings.Contains(desc, want) {
					t.Errorf("kubectl describe pod -l app=matmul-cpu does not show %q:\n%s", want, desc)
				}
			}
			if f, err := sc.Job(ctx, id); err != nil || f["JobState"] != "COMPLETED" || f["JobName"] != slurm.JobName(ns, pod.Name) {
				t.Errorf("slurm job %s: %v (%v), want %s COMPLETED", id, f, err, slurm.JobName(ns, pod.Name))
			}
			slurmWaitEvents(t, c.client, ns, pod.Name, "Submitted", "ImageNotRun")
		})

		t.Run("more CPUs than the partition has stays Pending until deleted", func(t *testing.T) {
			t.Parallel()
			// Bound to the node by name: the scheduler would keep a pod
			// asking more than the node's capacity off it ("Insufficient
			// cpu"), so this is how such a job reaches Slurm.
			k.Apply(t, ns, slurmJobYAML("too-big", "true", 0,
				"nodeName: "+nodeName,
				fmt.Sprintf("resources: {limits: {cpu: %q}}", strconv.Itoa(sc.CPUs+1))))
			pod := slurmWaitJobPod(t, c.client, ns, "too-big", time.Minute, "Pending in Slurm with reason PartitionConfig", func(p *corev1.Pod) bool {
				cs := p.Status.ContainerStatuses
				return p.Status.Phase == corev1.PodPending && p.Annotations[slurm.AnnotationJobID] != "" &&
					len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "PartitionConfig"
			})
			id := pod.Annotations[slurm.AnnotationJobID]
			var seen corev1.Pod
			if err := json.Unmarshal([]byte(k.OK(t, "get", "pod", "-n", ns, pod.Name, "-o", "json")), &seen); err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(seen.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Status == corev1.ConditionFalse && c.Reason == "PartitionConfig"
			}) {
				t.Errorf("kubectl get pod -o json: conditions %+v, want one False with reason PartitionConfig", seen.Status.Conditions)
			}
			if cs := seen.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Waiting == nil || cs[0].State.Waiting.Reason != "PartitionConfig" {
				t.Errorf("kubectl get pod -o json: container statuses %+v, want waiting with reason PartitionConfig", cs)
			}
			if f, err := sc.Job(ctx, id); err != nil || f["JobState"] != "PENDING" || f["Reason"] != "PartitionConfig" {
				t.Errorf("slurm job %s: state %q reason %q (%v), want PENDING PartitionConfig", id, f["JobState"], f["Reason"], err)
			}
			k.OK(t, "delete", "job", "-n", ns, "too-big")
			slurmWaitPodGone(t, c.client, ns, pod.Name)
			slurmWaitCancelled(t, sc, id)
		})

		t.Run("a failing Job is retried, then fails", func(t *testing.T) {
			t.Parallel()
			k.Apply(t, ns, slurmJobYAML("exit3", "echo failing; exit 3", 1, "", ""))
			slurmWaitJob(t, c.client, ns, "exit3", 2*time.Minute, "Failed", func(j *batchv1.Job) bool { return jobCondition(j, batchv1.JobFailed) })
			var j batchv1.Job
			if err := json.Unmarshal([]byte(k.OK(t, "get", "job", "-n", ns, "exit3", "-o", "json")), &j); err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
				return c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue && c.Reason == "BackoffLimitExceeded"
			}) {
				t.Errorf("job exit3: conditions %+v, want Failed with reason BackoffLimitExceeded", j.Status.Conditions)
			}
			pods := slurmJobPods(t, c.client, ns, "exit3")
			if len(pods) != 2 {
				t.Fatalf("%d pods, want 2 (backoffLimit 1)", len(pods))
			}
			for _, p := range pods {
				cs := p.Status.ContainerStatuses
				if p.Status.Phase != corev1.PodFailed || len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 3 {
					t.Errorf("pod %s: %s, want Failed with exit code 3", p.Name, describeStatus(&p))
				}
			}
		})

		t.Run("the pod's activeDeadlineSeconds is Slurm's time limit", func(t *testing.T) {
			t.Parallel()
			k.Apply(t, ns, slurmJobYAML("deadline", "sleep 600", 0, "activeDeadlineSeconds: 60", ""))
			// Slurm looks at time limits about every 30s, then signals the job.
			pod := slurmWaitJobPod(t, c.client, ns, "deadline", 4*time.Minute, "Failed", func(p *corev1.Pod) bool {
				return p.Status.Phase == corev1.PodFailed
			})
			cs := pod.Status.ContainerStatuses
			if pod.Status.Reason != "TIMEOUT" || len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.Reason != "TIMEOUT" {
				t.Errorf("pod %s: reason %q, %s; want TIMEOUT for the pod and its container", pod.Name, pod.Status.Reason, describeStatus(pod))
			}
			id := pod.Annotations[slurm.AnnotationJobID]
			if f, err := sc.Job(ctx, id); err != nil || f["JobState"] != "TIMEOUT" || f["TimeLimit"] != "00:01:00" {
				t.Errorf("slurm job %s: state %q time limit %q (%v), want TIMEOUT after 00:01:00", id, f["JobState"], f["TimeLimit"], err)
			}
			slurmWaitJob(t, c.client, ns, "deadline", time.Minute, "Failed", func(j *batchv1.Job) bool { return jobCondition(j, batchv1.JobFailed) })
		})

		t.Run("kubectl delete job cancels the running Slurm job", func(t *testing.T) {
			t.Parallel()
			k.Apply(t, ns, slurmJobYAML("sleeper", "sleep 600", 0, "", ""))
			pod := slurmWaitJobPod(t, c.client, ns, "sleeper", time.Minute, "Running in Slurm", func(p *corev1.Pod) bool {
				return p.Status.Phase == corev1.PodRunning && p.Annotations[slurm.AnnotationJobState] == "RUNNING"
			})
			id := pod.Annotations[slurm.AnnotationJobID]
			k.OK(t, "delete", "job", "-n", ns, "sleeper")
			slurmWaitPodGone(t, c.client, ns, pod.Name)
			slurmWaitCancelled(t, sc, id)
		})
	})

	// Alone, as the agent's restart reaches every pod of the node.
	t.Run("an agent killed while the job runs picks it up again", func(t *testing.T) {
		k.Apply(t, ns, slurmJobYAML("survivor", "sleep 20; echo done", 0, "", ""))
		pod := slurmWaitJobPod(t, c.client, ns, "survivor", time.Minute, "Running in Slurm", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && p.Annotations[slurm.AnnotationJobState] == "RUNNING"
		})
		id := pod.Annotations[slurm.AnnotationJobID]
		agent.kill()
		agent.start()
		pod = slurmWaitJobPod(t, c.client, ns, "survivor", 2*time.Minute, "Succeeded", func(p *corev1.Pod) bool {
			if !agent.running() {
				t.Fatalf("the agent exited after its restart:\n%s", agent.tail(60))
			}
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		})
		if pod.Status.Phase != corev1.PodSucceeded || pod.Annotations[slurm.AnnotationJobID] != id {
			t.Errorf("pod %s: %s, job id %q; want Succeeded, still job %s", pod.Name, describeStatus(pod), pod.Annotations[slurm.AnnotationJobID], id)
		}
		name := slurm.JobName(ns, pod.Name)
		if jobs := slurmJobsNamed(t, sc, name); len(jobs) != 1 || jobs[0]["JobId"] != id || jobs[0]["JobState"] != "COMPLETED" {
			t.Errorf("slurm jobs named %s: %v, want job %s alone, COMPLETED", name, jobs, id)
		}
		if logs := k.OK(t, "logs", "-n", ns, pod.Name); !slices.Contains(strings.Split(logs, "\n"), "done") {
			t.Errorf("kubectl logs %s: %q, want done", pod.Name, logs)
		}
	})
}

// slurmJobYAML is a Job for the Slurm node, as a user writes it: its
// nodeSelector and toleration, pods never restarted, one container
// running sh -c script. podSpec and container, when not empty, are one
// more line each in the pod's spec and in the container.
func slurmJobYAML(name, script string, backoffLimit int, podSpec, container string) string {
	indent := func(line, by string) string {
		if line == "" {
			return ""
		}
		return by + line + "\n"
	}
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: %s}
spec:
  backoffLimit: %d
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {minik8s.io/provider: slurm}
      tolerations:
      - {key: virtual-kubelet.io/provider, operator: Equal, value: slurm, effect: NoSchedule}
%s      containers:
      - name: work
        image: busybox
        command: [sh, -c, %q]
%s`, name, backoffLimit, indent(podSpec, "      "), script, indent(container, "        "))
}

// syncKubectl is the test's kubectl, one command at a time: the subtests
// run in parallel, and kubectl's command tree, run in the test process,
// swaps process-wide state (os.Stdin, the fatal-error handler) as it runs.
type syncKubectl struct {
	mu sync.Mutex
	k  *testutil.Kubectl
}

func (s *syncKubectl) OK(t *testing.T, args ...string) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.k.OK(t, args...)
}

func (s *syncKubectl) Run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.k.Run(t, args...)
}

// Apply is `kubectl apply -n ns -f -` of manifest.
func (s *syncKubectl) Apply(t *testing.T, ns, manifest string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, stderr, err := s.k.RunWithInput(t, manifest, "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s\nmanifest:\n%s", err, stderr, manifest)
	}
}

// startSlurmAgent starts the agent for node name: it joins the control
// plane with the node token, runs the Slurm commands here against sc
// (--slurm-conf), polls every 300ms and serves logs on 127.0.0.1. It is
// stopped when the test ends.
func startSlurmAgent(t *testing.T, bin string, c *cluster, sc *slurmtest.Cluster, name string) *process {
	t.Helper()
	dir := t.TempDir()
	a := &process{t: t, name: "minik8s agent", bin: bin, args: []string{"agent", "--provider", "slurm", "--node-name", name,
		"--server", c.cp.URL, "--token", c.cp.NodeToken, "--root-dir", filepath.Join(dir, "root"),
		"--node-ip", "127.0.0.1", "--kubelet-address", ":" + strconv.Itoa(freePort(t)),
		"--slurm-conf", sc.Conf, "--slurm-partition", slurmtest.Partition,
		"--slurm-work-root", filepath.Join(dir, "work"), "--slurm-poll", "300ms"}}
	var err error
	if a.logs, err = os.Create(filepath.Join(dir, "agent.log")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.stop()
		if t.Failed() {
			t.Logf("last lines of the agent's log:\n%s", a.tail(60))
		}
		_ = a.logs.Close()
	})
	a.start()
	return a
}

func slurmWaitFor(t *testing.T, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func jobCondition(j *batchv1.Job, typ batchv1.JobConditionType) bool {
	return slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
		return c.Type == typ && c.Status == corev1.ConditionTrue
	})
}

// slurmWaitJob waits until the Job satisfies done.
func slurmWaitJob(t *testing.T, client kubernetes.Interface, ns, name string, timeout time.Duration, what string, done func(*batchv1.Job) bool) {
	t.Helper()
	var last *batchv1.Job
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		j, err := client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = j
		return done(j), nil
	})
	if err != nil {
		status := "(never read)"
		if last != nil {
			status = fmt.Sprintf("%+v", last.Status)
		}
		pods := ""
		for _, p := range slurmJobPods(t, client, ns, name) {
			pods += fmt.Sprintf("\n  pod %s: %s %v", p.Name, describeStatus(&p), p.Annotations)
		}
		t.Fatalf("job %s/%s: waiting for %s: %v\nlast status: %s%s", ns, name, what, err, status, pods)
	}
}

// slurmJobPods are the Job's pods.
func slurmJobPods(t *testing.T, client kubernetes.Interface, ns, job string) []corev1.Pod {
	t.Helper()
	list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// slurmWaitJobPod waits until the Job has one pod and it satisfies ok.
func slurmWaitJobPod(t *testing.T, client kubernetes.Interface, ns, job string, timeout time.Duration, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
		if err != nil || len(list.Items) != 1 {
			return false, nil
		}
		last = &list.Items[0]
		return ok(last), nil
	})
	if err != nil {
		annotations := map[string]string{}
		if last != nil {
			annotations = last.Annotations
		}
		t.Fatalf("job %s/%s: waiting for its pod %s: %v\nlast status: %s %v", ns, job, what, err, describeStatus(last), annotations)
	}
	return last
}

func slurmWaitPodGone(t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	slurmWaitFor(t, time.Minute, "pod "+name+" gone", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// slurmWaitCancelled waits until Slurm has cancelled the job (or
// forgotten it).
func slurmWaitCancelled(t *testing.T, sc *slurmtest.Cluster, id string) {
	t.Helper()
	var state string
	slurmWaitFor(t, time.Minute, "slurm job "+id+" CANCELLED (or gone)", func(ctx context.Context) (bool, error) {
		f, err := sc.Job(ctx, id)
		if err != nil {
			return strings.Contains(err.Error(), "Invalid job id"), nil
		}
		state = f["JobState"]
		return state == "CANCELLED", nil
	})
	if state != "" && state != "CANCELLED" {
		t.Errorf("slurm job %s %s, want CANCELLED", id, state)
	}
}

// slurmJobsNamed are the fields of every job slurmctld knows (finished
// ones included) with the job name.
func slurmJobsNamed(t *testing.T, sc *slurmtest.Cluster, name string) []map[string]string {
	t.Helper()
	out, err := sc.Output(context.Background(), "scontrol", "show", "job", "-o")
	if err != nil {
		t.Fatal(err)
	}
	var jobs []map[string]string
	for _, line := range strings.Split(out, "\n") {
		if f := slurmtest.ParseOneLine(line); f["JobName"] == name {
			jobs = append(jobs, f)
		}
	}
	return jobs
}

// slurmWaitEvents waits until the pod has events with all the reasons
// (the agent records them asynchronously).
func slurmWaitEvents(t *testing.T, client kubernetes.Interface, ns, pod string, reasons ...string) {
	t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		got = got[:0]
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == pod {
				got = append(got, e.Reason)
			}
		}
		for _, r := range reasons {
			if !slices.Contains(got, r) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("pod %s/%s: events %v, want %v", ns, pod, got, reasons)
	}
}
