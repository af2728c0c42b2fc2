package job

import (
	"fmt"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

func TestNonIndexedJobCompletes(t *testing.T) {
	e := newEnv(t, Config{})
	e.create(newJob("pi", func(j *batchv1.Job) { j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](2) }))
	e.settle("pi")

	pods := e.pods()
	if len(pods) != 2 {
		t.Fatalf("%d pods, want 2 (parallelism)", len(pods))
	}
	p := pods[0]
	wantLabels := map[string]string{"app": "pi", batchv1.ControllerUidLabel: "uid-pi", batchv1.JobNameLabel: "pi", "controller-uid": "uid-pi", "job-name": "pi"}
	for k, v := range wantLabels {
		if p.Labels[k] != v {
			t.Errorf("pod label %s = %q, want %q", k, p.Labels[k], v)
		}
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != "uid-pi" || ref.Kind != "Job" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("controller ref %+v", ref)
	}
	if !hasTrackingFinalizer(p) || p.GenerateName != "pi-" {
		t.Errorf("finalizers %v, generateName %q", p.Finalizers, p.GenerateName)
	}
	j := e.job("pi")
	if j.Status.Active != 2 || j.Status.StartTime == nil || !j.Status.StartTime.Time.Equal(t0) || ptr.Deref(j.Status.Ready, -1) != 0 {
		t.Errorf("status %+v", j.Status)
	}
	e.wantEvents("SuccessfulCreate")

	e.run(pods[0])
	e.run(pods[1])
	e.settle("pi")
	if j := e.job("pi"); ptr.Deref(j.Status.Ready, -1) != 2 {
		t.Errorf("ready %v, want 2", j.Status.Ready)
	}

	e.clock.Step(time.Minute)
	e.finish(e.pods()[0], corev1.PodSucceeded)
	e.finish(e.pods()[1], corev1.PodSucceeded)
	e.settle("pi")
	j = e.job("pi")
	if j.Status.Succeeded != 2 || j.Status.Active != 1 || len(j.Status.UncountedTerminatedPods.Succeeded) != 0 {
		t.Fatalf("after 2 successes: %+v", j.Status)
	}
	for _, p := range e.pods() {
		if p.Status.Phase == corev1.PodSucceeded && hasTrackingFinalizer(p) {
			t.Errorf("counted pod %s keeps its finalizer", p.Name)
		}
	}
	if got := len(e.pods()); got != 3 {
		t.Fatalf("%d pods, want the third one", got)
	}

	e.clock.Step(time.Minute)
	e.finish(e.activePods()[0], corev1.PodSucceeded)
	e.settle("pi")
	j = e.job("pi")
	if got := conditions(j); !slices.Equal(got, []string{"SuccessCriteriaMet/CompletionsReached", "Complete/CompletionsReached"}) {
		t.Errorf("conditions %v", got)
	}
	if j.Status.Succeeded != 3 || j.Status.Active != 0 || j.Status.CompletionTime == nil || !j.Status.CompletionTime.Time.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("final status %+v", j.Status)
	}
	e.wantEvents("Completed")

	// Counts survive the Pods' deletion.
	for _, p := range e.pods() {
		_ = e.client.CoreV1().Pods("ns").Delete(e.ctx, p.Name, metav1.DeleteOptions{})
	}
	e.settle("pi")
	if j := e.job("pi"); j.Status.Succeeded != 3 {
		t.Errorf("succeeded %d after pod deletion", j.Status.Succeeded)
	}
}

func TestIndexedJob(t *testing.T) {
	e := newEnv(t, Config{})
	e.create(newJob("idx", func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](4), ptr.To[int32](3)
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Template.Spec.Subdomain = "workers"
	}))
	e.settle("idx")
	pods := e.pods()
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3", len(pods))
	}
	byIndex := map[int]*corev1.Pod{}
	for _, p := range pods {
		ix := completionIndex(p)
		byIndex[ix] = p
		if p.Labels[batchv1.JobCompletionIndexAnnotation] != fmt.Sprint(ix) || p.Spec.Hostname != fmt.Sprintf("idx-%d", ix) ||
			p.Spec.Subdomain != "workers" || p.GenerateName != fmt.Sprintf("idx-%d-", ix) {
			t.Errorf("pod %s: labels %v hostname %q subdomain %q", p.Name, p.Labels, p.Spec.Hostname, p.Spec.Subdomain)
		}
		env := p.Spec.Containers[0].Env
		if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
			t.Errorf("env %+v", env)
		}
	}
	if len(byIndex) != 3 || byIndex[0] == nil || byIndex[1] == nil || byIndex[2] == nil {
		t.Fatalf("indexes %v, want 0..2", byIndex)
	}

	e.finish(byIndex[1], corev1.PodSucceeded)
	e.settle("idx")
	e.clock.Step(time.Second) // a failure after the last success backs off
	e.finish(byIndex[2], corev1.PodFailed)
	e.settle("idx")
	j := e.job("idx")
	if j.Status.CompletedIndexes != "1" || j.Status.Succeeded != 1 || j.Status.Failed != 1 {
		t.Fatalf("status %+v", j.Status)
	}
	// Back-off after the failure: nothing new for 10s.
	if act := e.activePods(); len(act) != 2 || completionIndex(act[0])+completionIndex(act[1]) != 3 {
		t.Fatalf("%d active pods during back-off, want indexes 0 and 3", len(act))
	}
	e.clock.Step(11 * time.Second)
	e.settle("idx")
	var active []int
	for _, p := range e.activePods() {
		active = append(active, completionIndex(p))
	}
	slices.Sort(active)
	if !slices.Equal(active, []int{0, 2, 3}) {
		t.Fatalf("active indexes %v, want [0 2 3]", active)
	}
	for _, p := range e.activePods() {
		e.finish(p, corev1.PodSucceeded)
	}
	e.settle("idx")
	j = e.job("idx")
	if j.Status.CompletedIndexes != "0-3" || j.Status.Succeeded != 4 || !kit.IsConditionTrue(j.Status.Conditions, batchv1.JobComplete) {
		t.Errorf("status %+v", j.Status)
	}
}

func TestBackoffLimitExceeded(t *testing.T) {
	e := newEnv(t, Config{BackoffBase: time.Second, BackoffMax: 4 * time.Second})
	e.create(newJob("fail", func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](2) }))
	waits := []time.Duration{time.Second, 2 * time.Second}
	for i := range 3 {
		e.settle("fail")
		act := e.activePods()
		if len(act) != 1 {
			t.Fatalf("round %d: %d active pods", i, len(act))
		}
		e.finish(act[0], corev1.PodFailed)
		e.settle("fail")
		if i == 2 {
			break
		}
		if n := len(e.activePods()); n != 0 {
			t.Fatalf("round %d: replaced before the back-off", i)
		}
		e.clock.Step(waits[i] - time.Millisecond)
		e.settle("fail")
		if n := len(e.activePods()); n != 0 {
			t.Fatalf("round %d: replaced %v early", i, time.Millisecond)
		}
		e.clock.Step(time.Millisecond)
	}
	j := e.job("fail")
	if got := conditions(j); !slices.Equal(got, []string{"FailureTarget/BackoffLimitExceeded", "Failed/BackoffLimitExceeded"}) {
		t.Errorf("conditions %v", got)
	}
	if j.Status.Failed != 3 || j.Status.Active != 0 || j.Status.CompletionTime != nil {
		t.Errorf("status %+v", j.Status)
	}
	e.wantEvents("BackoffLimitExceeded")
}

func TestBackoffLimitOnFailureRestarts(t *testing.T) {
	e := newEnv(t, Config{})
	e.create(newJob("restarts", func(j *batchv1.Job) {
		j.Spec.BackoffLimit = ptr.To[int32](2)
		j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}))
	e.settle("restarts")
	p := e.pods()[0].DeepCopy()
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 1}}
	_, _ = e.client.CoreV1().Pods("ns").UpdateStatus(e.ctx, p, metav1.UpdateOptions{})
	e.settle("restarts")
	if kit.IsConditionTrue(e.job("restarts").Status.Conditions, batchv1.JobFailureTarget) {
		t.Fatal("failed after 1 restart of 2 allowed")
	}
	p.Status.ContainerStatuses[0].RestartCount = 2
	_, _ = e.client.CoreV1().Pods("ns").UpdateStatus(e.ctx, p, metav1.UpdateOptions{})
	e.settle("restarts")
	j := e.job("restarts")
	if got := conditions(j); !slices.Equal(got, []string{"FailureTarget/BackoffLimitExceeded", "Failed/BackoffLimitExceeded"}) {
		t.Errorf("conditions %v", got)
	}
	if len(e.pods()) != 0 || j.Status.Failed != 1 {
		t.Errorf("running pod not deleted and counted: %d pods, failed %d", len(e.pods()), j.Status.Failed)
	}
}

func TestActiveDeadline(t *testing.T) {
	e := newEnv(t, Config{})
	e.create(newJob("slow", func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](3)
		j.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
	}))
	e.settle("slow")
	for _, p := range e.pods() {
		e.run(p)
	}
	e.finish(e.pods()[0], corev1.PodSucceeded)
	e.clock.Step(59 * time.Second)
	e.settle("slow")
	if j := e.job("slow"); len(conditions(j)) != 0 || j.Status.Active != 2 {
		t.Fatalf("before the deadline: %v, active %d", conditions(j), j.Status.Active)
	}
	e.clock.Step(time.Second)
	if err := e.sync("slow"); err != nil {
		t.Fatal(err)
	}
	j := e.job("slow")
	if got := conditions(j); !slices.Equal(got, []string{"FailureTarget/DeadlineExceeded"}) {
		t.Errorf("interim conditions %v", got)
	}
	e.settle("slow")
	j = e.job("slow")
	if got := conditions(j); !slices.Equal(got, []string{"FailureTarget/DeadlineExceeded", "Failed/DeadlineExceeded"}) {
		t.Errorf("conditions %v", got)
	}
	if j.Status.Active != 0 || j.Status.Failed != 2 || j.Status.Succeeded != 1 || len(e.activePods()) != 0 {
		t.Errorf("status %+v, %d active pods", j.Status, len(e.activePods()))
	}
	e.wantEvents("DeadlineExceeded", "SuccessfulDelete")
}

func TestSuspendAndResume(t *testing.T) {
	e := newEnv(t, Config{})
	e.create(newJob("s", func(j *batchv1.Job) {
		j.Spec.Suspend = ptr.To(true)
		j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](2), ptr.To[int32](2)
		j.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
	}))
	e.settle("s")
	j := e.job("s")
	if len(e.pods()) != 0 || j.Status.StartTime != nil || !slices.Equal(conditions(j), []string{"Suspended/JobSuspended"}) {
		t.Fatalf("suspended job: %d pods, status %+v", len(e.pods()), j.Status)
	}
	// Suspension does not run the deadline clock.
	e.clock.Step(time.Hour)
	j.Spec.Suspend = ptr.To(false)
	if _, err := e.client.BatchV1().Jobs("ns").Update(e.ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.settle("s")
	j = e.job("s")
	if len(e.activePods()) != 2 || j.Status.StartTime == nil || !j.Status.StartTime.Time.Equal(t0.Add(time.Hour)) || kit.IsConditionTrue(j.Status.Conditions, batchv1.JobSuspended) {
		t.Fatalf("resumed job: %d pods, status %+v", len(e.activePods()), j.Status)
	}
	e.wantEvents("Suspended", "Resumed")

	// Suspending again deletes the Pods without counting them as failed.
	j.Spec.Suspend = ptr.To(true)
	if _, err := e.client.BatchV1().Jobs("ns").Update(e.ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.settle("s")
	j = e.job("s")
	if len(e.pods()) != 0 || j.Status.Failed != 0 || j.Status.Active != 0 || !kit.IsConditionTrue(j.Status.Conditions, batchv1.JobSuspended) {
		t.Fatalf("suspended again: %d pods, status %+v", len(e.pods()), j.Status)
	}
}

func TestWorkQueueJob(t *testing.T) {
	e := newEnv(t, Config{})
	e.create(newJob("queue", func(j *batchv1.Job) { j.Spec.Completions, j.Spec.Parallelism = nil, ptr.To[int32](3) }))
	e.settle("queue")
	pods := e.pods()
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3", len(pods))
	}
	e.finish(pods[0], corev1.PodSucceeded)
	e.finish(pods[1], corev1.PodFailed)
	e.settle("queue")
	j := e.job("queue")
	if len(e.activePods()) != 1 || kit.IsConditionTrue(j.Status.Conditions, batchv1.JobComplete) || j.Status.Succeeded != 1 || j.Status.Failed != 1 {
		t.Fatalf("after one success: %d active, status %+v", len(e.activePods()), j.Status)
	}
	e.finish(pods[2], corev1.PodSucceeded)
	e.settle("queue")
	if j := e.job("queue"); !kit.IsConditionTrue(j.Status.Conditions, batchv1.JobComplete) || j.Status.Succeeded != 2 {
		t.Fatalf("all finished: status %+v", j.Status)
	}
}

func TestParallelismZeroAndScaleDown(t *testing.T) {
	e := newEnv(t, Config{})
	e.create(newJob("p", func(j *batchv1.Job) { j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](5), ptr.To[int32](0) }))
	e.settle("p")
	if len(e.pods()) != 0 || kit.IsConditionTrue(e.job("p").Status.Conditions, batchv1.JobComplete) {
		t.Fatal("parallelism 0 runs pods or completes")
	}
	j := e.job("p")
	j.Spec.Parallelism = ptr.To[int32](3)
	_, _ = e.client.BatchV1().Jobs("ns").Update(e.ctx, j, metav1.UpdateOptions{})
	e.settle("p")
	if n := len(e.activePods()); n != 3 {
		t.Fatalf("%d pods, want 3", n)
	}
	j = e.job("p")
	j.Spec.Parallelism = ptr.To[int32](1)
	_, _ = e.client.BatchV1().Jobs("ns").Update(e.ctx, j, metav1.UpdateOptions{})
	e.settle("p")
	if j := e.job("p"); len(e.pods()) != 1 || j.Status.Failed != 0 || j.Status.Active != 1 {
		t.Fatalf("scaled down: %d pods, status %+v", len(e.pods()), j.Status)
	}
}

func TestDeletedPodCountsAsFailedAndIsReplaced(t *testing.T) {
	e := newEnv(t, Config{})
	e.create(newJob("d"))
	e.settle("d")
	p := e.pods()[0]
	if err := e.client.CoreV1().Pods("ns").Delete(e.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.settle("d")
	j := e.job("d")
	if j.Status.Failed != 1 {
		t.Errorf("failed %d, want 1", j.Status.Failed)
	}
	e.clock.Step(10 * time.Second)
	e.settle("d")
	pods := e.pods()
	if len(pods) != 1 || pods[0].Name == p.Name {
		t.Errorf("pods %v: want one replacement", pods)
	}
}

func TestOrphanFinalizersRemoved(t *testing.T) {
	e := newEnv(t, Config{})
	e.create(newJob("gone"))
	e.settle("gone")
	p := e.pods()[0]
	job := e.job("gone")
	if err := e.client.BatchV1().Jobs("ns").Delete(e.ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.refresh()
	e.c.jobDeleted(job)
	if e.c.orphans.Len() != 1 {
		t.Fatalf("%d orphans queued, want 1", e.c.orphans.Len())
	}
	key, _ := e.c.orphans.Get()
	if err := e.c.releaseOrphan(e.ctx, key); err != nil {
		t.Fatal(err)
	}
	e.c.orphans.Done(key)
	got, err := e.client.CoreV1().Pods("ns").Get(e.ctx, p.Name, metav1.GetOptions{})
	if err != nil || hasTrackingFinalizer(got) {
		t.Errorf("pod %v, %v: finalizer should be gone", got.Finalizers, err)
	}
	if err := e.c.Reconcile(e.ctx, "ns/gone"); err != nil {
		t.Errorf("sync of a deleted job: %v", err)
	}
}

func TestAdoptsOrphanPods(t *testing.T) {
	e := newEnv(t, Config{})
	job := newJob("m", func(j *batchv1.Job) {
		j.Spec.ManualSelector = ptr.To(true)
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "m"}}
	})
	e.create(job)
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "ns", Labels: map[string]string{"app": "m"}},
		Spec: job.Spec.Template.Spec}
	if _, err := e.client.CoreV1().Pods("ns").Create(e.ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.settle("m")
	pods := e.pods()
	if len(pods) != 1 || pods[0].Name != "orphan" || !metav1.IsControlledBy(pods[0], job) || !hasTrackingFinalizer(pods[0]) {
		t.Fatalf("pods %+v: want the orphan adopted and nothing created", pods)
	}
	if _, ok := pods[0].Labels[batchv1.ControllerUidLabel]; ok {
		t.Error("manual selector job labels pods")
	}
}

func TestFinishedJobIsLeftAlone(t *testing.T) {
	e := newEnv(t, Config{})
	e.create(newJob("done", func(j *batchv1.Job) {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	}))
	e.settle("done")
	if len(e.pods()) != 0 {
		t.Error("finished job got pods")
	}
	e.create(newJob("other", func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("example.com/queue") }))
	e.settle("other")
	if len(e.pods()) != 0 {
		t.Error("job managed elsewhere got pods")
	}
}
