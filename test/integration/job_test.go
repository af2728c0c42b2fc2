package integration

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/cronjob"
	"github.com/minik8s/minik8s/pkg/controller/job"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/ttlafterfinished"
	"github.com/minik8s/minik8s/pkg/kubelet/simulated"
)

// jobStartControllers runs the Job and TTL-after-finished controllers
// (and, with cronClock, the CronJob controller on that clock) against the
// test's cluster until the test ends. Failed Pods are replaced after a
// short back-off (200ms doubling, at most 1s) to keep the tests fast.
//
// The control plane does not run them (yet): once pkg/controlplane does,
// this must go, or two of each would fight over the same objects.
func jobStartControllers(t *testing.T, c *cluster, cronClock clock.WithTicker) {
	t.Helper()
	kc := kit.NewContext(kubernetes.NewForConfigOrDie(c.config))
	kc.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	jc, err := job.New(kc, job.Config{BackoffBase: 200 * time.Millisecond, BackoffMax: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ttl, err := ttlafterfinished.New(kc, ttlafterfinished.Config{})
	if err != nil {
		t.Fatal(err)
	}
	parts := []kit.Part{{Name: "job", Start: jc.Start}, {Name: "ttl-after-finished", Start: ttl.Start}}
	if cronClock != nil {
		// The same informers and events, on cronClock.
		onClock := *kc
		onClock.Clock = cronClock
		cc, err := cronjob.New(&onClock, cronjob.Config{})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, kit.Part{Name: "cronjob", Start: cc.Start})
	}
	runControllers(t, kc, parts...)
}

// jobNamespace creates a namespace for one test case.
func jobNamespace(t *testing.T, ctx context.Context, c *cluster, name string) string {
	t.Helper()
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// jobNew is a Job whose simulated Pods exit after exitAfter with code
// ("" runs until deleted).
func jobNew(name, exitAfter string, code int, mutate ...func(*batchv1.Job)) *batchv1.Job {
	ann := map[string]string{}
	if exitAfter != "" {
		ann[simulated.AnnotationExitAfter] = exitAfter
		ann[simulated.AnnotationExitCode] = fmt.Sprint(code)
	}
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: ann},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "work", Image: "busybox", Command: []string{"sh", "-c", "true"}}}},
		}},
	}
	for _, m := range mutate {
		m(j)
	}
	return j
}

func jobCreate(t *testing.T, ctx context.Context, c *cluster, ns string, j *batchv1.Job) {
	t.Helper()
	if _, err := c.client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// jobWait polls the Job until ok, for up to 60s.
func jobWait(t *testing.T, ctx context.Context, c *cluster, ns, name, what string, ok func(*batchv1.Job) bool) *batchv1.Job {
	t.Helper()
	var last *batchv1.Job
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		j, err := c.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = j
		return ok(j), nil
	})
	if err != nil {
		t.Fatalf("job %s/%s: waiting for %s: %v; last status %+v", ns, name, what, err, last.Status)
	}
	return last
}

// jobConditions are the Job's True conditions as type/reason.
func jobConditions(j *batchv1.Job) []string {
	var out []string
	for _, c := range j.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			out = append(out, string(c.Type)+"/"+c.Reason)
		}
	}
	return out
}

func jobHas(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func jobPods(t *testing.T, ctx context.Context, c *cluster, ns, name string) []corev1.Pod {
	t.Helper()
	list, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// jobEventReasons are the reasons of the events about one object.
func jobEventReasons(t *testing.T, ctx context.Context, c *cluster, ns, kind, name string) []string {
	t.Helper()
	list, err := c.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			out = append(out, e.Reason)
		}
	}
	return out
}

// jobWaitEvents waits until the object has events with all the reasons
// (events are written asynchronously).
func jobWaitEvents(t *testing.T, ctx context.Context, c *cluster, ns, kind, name string, reasons ...string) {
	t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got = jobEventReasons(t, ctx, c, ns, kind, name)
		for _, r := range reasons {
			if !slices.Contains(got, r) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%s %s/%s: events %v, want %v", kind, ns, name, got, reasons)
	}
}

func TestJob(t *testing.T) {
	c := startClusterWith(t, withoutControllers("job", "cronjob", "ttl-after-finished"))
	startSimulatedNodes(t, c, 2)
	jobStartControllers(t, c, nil)
	k := newKubectl(t, c)

	t.Run("completions 3 parallelism 2", func(t *testing.T) {
		ctx := ctxT(t)
		ns := jobNamespace(t, ctx, c, "job-complete")
		jobCreate(t, ctx, c, ns, jobNew("pi", "300ms", 0, func(j *batchv1.Job) {
			j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](2)
		}))
		maxActive := int32(0)
		_ = jobWait(t, ctx, c, ns, "pi", "pods running", func(j *batchv1.Job) bool {
			maxActive = max(maxActive, j.Status.Active)
			return j.Status.Active > 0 || j.Status.Succeeded > 0
		})
		k.ok(t, "wait", "-n", ns, "--for=condition=complete", "job/pi", "--timeout=60s")
		j := jobWait(t, ctx, c, ns, "pi", "complete", func(j *batchv1.Job) bool { return jobHas(j, batchv1.JobComplete) })
		if got := jobConditions(j); !slices.Equal(got, []string{"SuccessCriteriaMet/CompletionsReached", "Complete/CompletionsReached"}) {
			t.Errorf("conditions %v", got)
		}
		if j.Status.Succeeded != 3 || j.Status.Failed != 0 || j.Status.Active != 0 || j.Status.StartTime == nil || j.Status.CompletionTime == nil ||
			ptr.Deref(j.Status.Ready, -1) != 0 || len(j.Status.UncountedTerminatedPods.Succeeded) != 0 {
			t.Errorf("status %+v", j.Status)
		}
		if maxActive > 2 {
			t.Errorf("%d pods active at once, parallelism is 2", maxActive)
		}
		pods := jobPods(t, ctx, c, ns, "pi")
		if len(pods) != 3 {
			t.Errorf("%d pods, want 3", len(pods))
		}
		for _, p := range pods {
			ref := metav1.GetControllerOf(&p)
			if p.Status.Phase != corev1.PodSucceeded || slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) ||
				ref == nil || ref.UID != j.UID || p.Labels[batchv1.ControllerUidLabel] != string(j.UID) || p.Labels["job-name"] != "pi" {
				t.Errorf("pod %s: phase %s finalizers %v owner %+v labels %v", p.Name, p.Status.Phase, p.Finalizers, ref, p.Labels)
			}
		}
		if out := k.ok(t, "get", "-n", ns, "job", "pi", "-o", "jsonpath={.status.succeeded}"); out != "3" {
			t.Errorf("kubectl get succeeded = %q", out)
		}
		jobWaitEvents(t, ctx, c, ns, "Job", "pi", "SuccessfulCreate", "Completed")
	})

	t.Run("indexed", func(t *testing.T) {
		ctx := ctxT(t)
		ns := jobNamespace(t, ctx, c, "job-indexed")
		jobCreate(t, ctx, c, ns, jobNew("idx", "200ms", 0, func(j *batchv1.Job) {
			j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](3)
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		}))
		j := jobWait(t, ctx, c, ns, "idx", "complete", func(j *batchv1.Job) bool { return jobHas(j, batchv1.JobComplete) })
		if j.Status.CompletedIndexes != "0-2" || j.Status.Succeeded != 3 {
			t.Errorf("status %+v", j.Status)
		}
		var hosts []string
		for _, p := range jobPods(t, ctx, c, ns, "idx") {
			hosts = append(hosts, p.Spec.Hostname)
			if p.Annotations[batchv1.JobCompletionIndexAnnotation] != strings.TrimPrefix(p.Spec.Hostname, "idx-") {
				t.Errorf("pod %s: index annotation %q, hostname %q", p.Name, p.Annotations[batchv1.JobCompletionIndexAnnotation], p.Spec.Hostname)
			}
		}
		slices.Sort(hosts)
		if !slices.Equal(hosts, []string{"idx-0", "idx-1", "idx-2"}) {
			t.Errorf("hostnames %v", hosts)
		}
	})

	t.Run("backoff limit", func(t *testing.T) {
		ctx := ctxT(t)
		ns := jobNamespace(t, ctx, c, "job-backoff")
		jobCreate(t, ctx, c, ns, jobNew("fails", "100ms", 3, func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](2) }))
		k.ok(t, "wait", "-n", ns, "--for=condition=failed", "job/fails", "--timeout=60s")
		j := jobWait(t, ctx, c, ns, "fails", "failed", func(j *batchv1.Job) bool { return jobHas(j, batchv1.JobFailed) })
		if got := jobConditions(j); !slices.Equal(got, []string{"FailureTarget/BackoffLimitExceeded", "Failed/BackoffLimitExceeded"}) {
			t.Errorf("conditions %v", got)
		}
		if j.Status.Failed != 3 || j.Status.Succeeded != 0 || j.Status.Active != 0 || j.Status.CompletionTime != nil {
			t.Errorf("status %+v", j.Status)
		}
		if n := len(jobPods(t, ctx, c, ns, "fails")); n != 3 {
			t.Errorf("%d pods, want 3 (the first try and backoffLimit 2 retries)", n)
		}
		jobWaitEvents(t, ctx, c, ns, "Job", "fails", "BackoffLimitExceeded")
	})

	t.Run("OnFailure restarts count toward the backoff limit", func(t *testing.T) {
		ctx := ctxT(t)
		ns := jobNamespace(t, ctx, c, "job-restarts")
		// The simulated kubelet restarts the failed container in place.
		jobCreate(t, ctx, c, ns, jobNew("restarts", "100ms", 1, func(j *batchv1.Job) {
			j.Spec.BackoffLimit = ptr.To[int32](1)
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}))
		j := jobWait(t, ctx, c, ns, "restarts", "failed", func(j *batchv1.Job) bool { return jobHas(j, batchv1.JobFailed) })
		if got := jobConditions(j); !slices.Contains(got, "Failed/BackoffLimitExceeded") {
			t.Errorf("conditions %v", got)
		}
	})

	t.Run("active deadline", func(t *testing.T) {
		ctx := ctxT(t)
		ns := jobNamespace(t, ctx, c, "job-deadline")
		jobCreate(t, ctx, c, ns, jobNew("slow", "", 0, func(j *batchv1.Job) {
			j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](2), ptr.To[int32](2)
			j.Spec.ActiveDeadlineSeconds = ptr.To[int64](2)
		}))
		jobWait(t, ctx, c, ns, "slow", "2 running pods", func(j *batchv1.Job) bool { return ptr.Deref(j.Status.Ready, 0) == 2 })
		j := jobWait(t, ctx, c, ns, "slow", "failed", func(j *batchv1.Job) bool { return jobHas(j, batchv1.JobFailed) })
		if got := jobConditions(j); !slices.Equal(got, []string{"FailureTarget/DeadlineExceeded", "Failed/DeadlineExceeded"}) {
			t.Errorf("conditions %v", got)
		}
		if j.Status.Active != 0 || j.Status.Failed != 2 {
			t.Errorf("status %+v", j.Status)
		}
		if took := j.Status.Conditions[len(j.Status.Conditions)-1].LastTransitionTime.Sub(j.Status.StartTime.Time); took < 2*time.Second || took > 10*time.Second {
			t.Errorf("failed %v after start, deadline is 2s", took)
		}
		waitFor(t, "the pods to be deleted", func(ctx context.Context) (bool, error) {
			return len(jobPods(t, ctx, c, ns, "slow")) == 0, nil
		})
		jobWaitEvents(t, ctx, c, ns, "Job", "slow", "DeadlineExceeded", "SuccessfulDelete")
	})

	t.Run("ttl after finished", func(t *testing.T) {
		ctx := ctxT(t)
		ns := jobNamespace(t, ctx, c, "job-ttl")
		jobCreate(t, ctx, c, ns, jobNew("short", "100ms", 0, func(j *batchv1.Job) { j.Spec.TTLSecondsAfterFinished = ptr.To[int32](1) }))
		waitFor(t, "the finished job to be deleted", func(ctx context.Context) (bool, error) {
			_, err := c.client.BatchV1().Jobs(ns).Get(ctx, "short", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		// Its Pods lose the tracking finalizer, so they can go too.
		for _, p := range jobPods(t, ctx, c, ns, "short") {
			if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
				t.Errorf("pod %s keeps the tracking finalizer", p.Name)
			}
		}
	})

	t.Run("suspend and resume", func(t *testing.T) {
		ctx := ctxT(t)
		ns := jobNamespace(t, ctx, c, "job-suspend")
		jobCreate(t, ctx, c, ns, jobNew("later", "100ms", 0, func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }))
		jobWait(t, ctx, c, ns, "later", "suspended", func(j *batchv1.Job) bool { return jobHas(j, batchv1.JobSuspended) })
		if n := len(jobPods(t, ctx, c, ns, "later")); n != 0 {
			t.Fatalf("suspended job has %d pods", n)
		}
		k.ok(t, "patch", "-n", ns, "job", "later", "--type=merge", "-p", `{"spec":{"suspend":false}}`)
		k.ok(t, "wait", "-n", ns, "--for=condition=complete", "job/later", "--timeout=60s")
		jobWaitEvents(t, ctx, c, ns, "Job", "later", "Suspended", "Resumed", "Completed")
	})
}
