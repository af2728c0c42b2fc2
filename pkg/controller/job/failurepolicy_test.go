package job

import (
	"math"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// failWith fails a Pod the way a kubelet reports it, its container "c"
// (or, with init set, its init container "init") exiting with code, and
// the Pod carrying the extra conditions.
func (e *env) failWith(p *corev1.Pod, code int32, init bool, conds ...corev1.PodConditionType) {
	e.t.Helper()
	p = p.DeepCopy()
	now := metav1.NewTime(e.clock.Now())
	p.Status.Phase = corev1.PodFailed
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: now}}
	for _, c := range conds {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	term := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: now}}
	if init {
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: term}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
	} else {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: term}}
	}
	if _, err := e.client.CoreV1().Pods(p.Namespace).UpdateStatus(e.ctx, p, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// wantReleased: no Pod is running or holds the tracking finalizer.
func (e *env) wantReleased() {
	e.t.Helper()
	for _, p := range e.pods() {
		if podutil.IsActive(p) || hasTrackingFinalizer(p) {
			e.t.Errorf("pod %s: phase %s, finalizers %v", p.Name, p.Status.Phase, p.Finalizers)
		}
	}
}

func exitCodes(action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, container string, codes ...int32) batchv1.PodFailurePolicyRule {
	r := batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: codes}}
	if container != "" {
		r.OnExitCodes.ContainerName = ptr.To(container)
	}
	return r
}

func onCondition(action batchv1.PodFailurePolicyAction, t corev1.PodConditionType) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: t, Status: corev1.ConditionTrue}}}
}

func withRules(rules ...batchv1.PodFailurePolicyRule) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules} }
}

func TestPodFailurePolicyFailJob(t *testing.T) {
	e := newEnv(t, Config{})
	e.create(newJob("fj", withRules(exitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, "c", 42)),
		func(j *batchv1.Job) { j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](2), ptr.To[int32](2) }))
	e.settle("fj")
	act := e.activePods()
	if len(act) != 2 {
		t.Fatalf("%d active pods", len(act))
	}
	e.run(act[1])
	e.failWith(act[0], 42, false)
	// The interim FailureTarget comes first, while the other Pod still
	// terminates.
	if err := e.sync("fj"); err != nil {
		t.Fatal(err)
	}
	j := e.job("fj")
	if got := conditions(j); !slices.Equal(got, []string{"FailureTarget/PodFailurePolicy"}) {
		t.Fatalf("after one sync: conditions %v", got)
	}
	want := "Container c for pod ns/" + act[0].Name + " failed with exit code 42 matching FailJob rule at index 0"
	if msg := j.Status.Conditions[0].Message; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	e.settle("fj")
	j = e.job("fj")
	if got := conditions(j); !slices.Equal(got, []string{"FailureTarget/PodFailurePolicy", "Failed/PodFailurePolicy"}) {
		t.Errorf("conditions %v", got)
	}
	if c := j.Status.Conditions[1]; c.Message != want {
		t.Errorf("Failed message %q", c.Message)
	}
	// The killed running Pod counts as failed too.
	if j.Status.Failed != 2 || j.Status.Active != 0 {
		t.Errorf("status %+v", j.Status)
	}
	e.wantReleased()
	e.wantEvents("PodFailurePolicy")
}

func TestPodFailurePolicyInitContainerAndConditionMessage(t *testing.T) {
	e := newEnv(t, Config{})
	e.create(newJob("init", withRules(exitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, "init", 3))))
	e.settle("init")
	p := e.activePods()[0]
	e.failWith(p, 3, true)
	e.settle("init")
	j := e.job("init")
	want := "Container init for pod ns/" + p.Name + " failed with exit code 3 matching FailJob rule at index 0"
	if got := conditions(j); !slices.Equal(got, []string{"FailureTarget/PodFailurePolicy", "Failed/PodFailurePolicy"}) || j.Status.Conditions[1].Message != want {
		t.Errorf("conditions %v %+v", got, j.Status.Conditions)
	}

	e = newEnv(t, Config{})
	e.create(newJob("cond", withRules(onCondition(batchv1.PodFailurePolicyActionFailJob, corev1.DisruptionTarget))))
	e.settle("cond")
	p = e.activePods()[0]
	e.failWith(p, 137, false, corev1.DisruptionTarget)
	e.settle("cond")
	j = e.job("cond")
	want = "Pod ns/" + p.Name + " has condition DisruptionTarget matching FailJob rule at index 0"
	if got := conditions(j); !slices.Equal(got, []string{"FailureTarget/PodFailurePolicy", "Failed/PodFailurePolicy"}) || j.Status.Conditions[1].Message != want {
		t.Errorf("conditions %v %+v", got, j.Status.Conditions)
	}
}

func TestPodFailurePolicyIgnore(t *testing.T) {
	e := newEnv(t, Config{BackoffBase: time.Second, BackoffMax: time.Second})
	e.create(newJob("ign", withRules(onCondition(batchv1.PodFailurePolicyActionIgnore, corev1.DisruptionTarget)),
		func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](0) }))
	e.settle("ign")
	first := e.activePods()[0]
	e.failWith(first, 137, false, corev1.DisruptionTarget)
	e.settle("ign")
	e.clock.Step(time.Second)
	e.settle("ign")
	j := e.job("ign")
	if j.Status.Failed != 0 || len(conditions(j)) != 0 {
		t.Fatalf("an ignored failure counted: %+v", j.Status)
	}
	act := e.activePods()
	if len(act) != 1 || act[0].Name == first.Name {
		t.Fatalf("active %v: want a replacement", act)
	}
	for _, p := range e.pods() {
		if p.Name == first.Name && hasTrackingFinalizer(p) {
			t.Errorf("ignored pod keeps its finalizer")
		}
	}
	// Without the condition the failure counts: backoffLimit 0 is past.
	e.failWith(act[0], 1, false)
	e.settle("ign")
	j = e.job("ign")
	if got := conditions(j); !slices.Equal(got, []string{"FailureTarget/BackoffLimitExceeded", "Failed/BackoffLimitExceeded"}) || j.Status.Failed != 1 {
		t.Errorf("conditions %v, failed %d", got, j.Status.Failed)
	}
}

func TestPodFailurePolicyCountFirstMatchWins(t *testing.T) {
	e := newEnv(t, Config{BackoffBase: time.Second, BackoffMax: time.Second})
	e.create(newJob("cnt", withRules(
		exitCodes(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyOnExitCodesOpIn, "", 1),
		exitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpNotIn, "", 0, 2))))
	e.settle("cnt")
	e.failWith(e.activePods()[0], 1, false)
	e.settle("cnt")
	e.clock.Step(time.Second)
	e.settle("cnt")
	j := e.job("cnt")
	if j.Status.Failed != 1 || len(conditions(j)) != 0 || len(e.activePods()) != 1 {
		t.Fatalf("exit 1 (Count): %+v", j.Status)
	}
	// NotIn [0, 2] matches 5: the Job fails.
	p := e.activePods()[0]
	e.failWith(p, 5, false)
	e.settle("cnt")
	j = e.job("cnt")
	if got := conditions(j); !slices.Equal(got, []string{"FailureTarget/PodFailurePolicy", "Failed/PodFailurePolicy"}) ||
		j.Status.Conditions[0].Message != "Container c for pod ns/"+p.Name+" failed with exit code 5 matching FailJob rule at index 1" {
		t.Errorf("conditions %+v", j.Status.Conditions)
	}
}

func indexedJob(completions, parallelism int32, mutate ...func(*batchv1.Job)) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism = ptr.To(completions), ptr.To(parallelism)
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		for _, m := range mutate {
			m(j)
		}
	}
}

func perIndexLimit(limit int32) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		j.Spec.BackoffLimitPerIndex = ptr.To(limit)
		j.Spec.BackoffLimit = ptr.To[int32](math.MaxInt32)
	}
}

func podOfIndex(t *testing.T, pods []*corev1.Pod, ix int) *corev1.Pod {
	t.Helper()
	for _, p := range pods {
		if completionIndex(p) == ix {
			return p
		}
	}
	t.Fatalf("no active pod of index %d", ix)
	return nil
}

func TestBackoffLimitPerIndex(t *testing.T) {
	e := newEnv(t, Config{BackoffBase: time.Second, BackoffMax: time.Minute})
	e.create(newJob("bpi", indexedJob(2, 2, perIndexLimit(1))))
	e.settle("bpi")
	for _, p := range e.activePods() {
		if p.Annotations[batchv1.JobIndexFailureCountAnnotation] != "0" {
			t.Errorf("pod %s annotations %v", p.Name, p.Annotations)
		}
	}
	first := podOfIndex(t, e.activePods(), 0)
	e.failWith(first, 1, false)
	e.settle("bpi")
	j := e.job("bpi")
	if ptr.Deref(j.Status.FailedIndexes, "nil") != "" || j.Status.Failed != 0 {
		t.Errorf("after the first failure: failedIndexes %v failed %d", j.Status.FailedIndexes, j.Status.Failed)
	}
	// The failed Pod keeps its finalizer until the index has a new Pod,
	// which waits out the index's back-off.
	for _, p := range e.pods() {
		if p.Name == first.Name && !hasTrackingFinalizer(p) {
			t.Error("failed pod lost its finalizer before its replacement exists")
		}
	}
	if len(e.activePods()) != 1 {
		t.Fatalf("index 0 replaced before its back-off")
	}
	e.clock.Step(time.Second)
	e.settle("bpi")
	second := podOfIndex(t, e.activePods(), 0)
	if second.Name == first.Name || second.Annotations[batchv1.JobIndexFailureCountAnnotation] != "1" {
		t.Fatalf("replacement %s annotations %v", second.Name, second.Annotations)
	}
	if j := e.job("bpi"); j.Status.Failed != 1 {
		t.Errorf("failed %d, want 1", j.Status.Failed)
	}
	// The second failure uses up the index's limit: it fails, and is not
	// run again.
	e.failWith(second, 1, false)
	e.settle("bpi")
	e.clock.Step(time.Minute)
	e.settle("bpi")
	j = e.job("bpi")
	if ptr.Deref(j.Status.FailedIndexes, "") != "0" || j.Status.Failed != 2 || len(conditions(j)) != 0 {
		t.Fatalf("after the second failure: %+v", j.Status)
	}
	if act := e.activePods(); len(act) != 1 || completionIndex(act[0]) != 1 {
		t.Fatalf("active %v, want index 1 only", act)
	}
	e.finish(podOfIndex(t, e.activePods(), 1), corev1.PodSucceeded)
	e.settle("bpi")
	j = e.job("bpi")
	if got := conditions(j); !slices.Equal(got, []string{"FailureTarget/FailedIndexes", "Failed/FailedIndexes"}) {
		t.Errorf("conditions %v", got)
	}
	if j.Status.CompletedIndexes != "1" || ptr.Deref(j.Status.FailedIndexes, "") != "0" || j.Status.Succeeded != 1 {
		t.Errorf("status %+v", j.Status)
	}
}

func TestMaxFailedIndexesExceeded(t *testing.T) {
	e := newEnv(t, Config{})
	e.create(newJob("mfi", indexedJob(3, 3, perIndexLimit(0), func(j *batchv1.Job) { j.Spec.MaxFailedIndexes = ptr.To[int32](0) })))
	e.settle("mfi")
	e.failWith(podOfIndex(t, e.activePods(), 1), 1, false)
	e.settle("mfi")
	j := e.job("mfi")
	if got := conditions(j); !slices.Equal(got, []string{"FailureTarget/MaxFailedIndexesExceeded", "Failed/MaxFailedIndexesExceeded"}) {
		t.Errorf("conditions %v", got)
	}
	if ptr.Deref(j.Status.FailedIndexes, "") != "1" || j.Status.Active != 0 || j.Status.Failed != 3 {
		t.Errorf("status %+v", j.Status)
	}
	e.wantReleased()
}

func TestPodFailurePolicyFailIndex(t *testing.T) {
	e := newEnv(t, Config{})
	e.create(newJob("fi", indexedJob(2, 2, perIndexLimit(3),
		withRules(exitCodes(batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyOnExitCodesOpIn, "", 42)))))
	e.settle("fi")
	e.failWith(podOfIndex(t, e.activePods(), 0), 42, false)
	e.settle("fi")
	e.clock.Step(time.Hour)
	e.settle("fi")
	j := e.job("fi")
	if ptr.Deref(j.Status.FailedIndexes, "") != "0" || j.Status.Failed != 1 || len(conditions(j)) != 0 {
		t.Fatalf("status %+v", j.Status)
	}
	if act := e.activePods(); len(act) != 1 || completionIndex(act[0]) != 1 {
		t.Errorf("index 0 runs again: %v", act)
	}
}

func TestSuccessPolicy(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule batchv1.SuccessPolicyRule
		succ []int
		msg  string
	}{
		{"indexes", batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0,2")}, []int{0, 2}, "Matched rules at index 0"},
		{"count", batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](2)}, []int{1, 3}, "Matched rules at index 0"},
		{"indexes-and-count", batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("1-3"), SucceededCount: ptr.To[int32](1)}, []int{3}, "Matched rules at index 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			e.create(newJob("sp", indexedJob(4, 4, func(j *batchv1.Job) {
				j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{tc.rule}}
			})))
			e.settle("sp")
			for i, ix := range tc.succ {
				e.finish(podOfIndex(t, e.activePods(), ix), corev1.PodSucceeded)
				if i < len(tc.succ)-1 {
					e.settle("sp")
					if got := conditions(e.job("sp")); len(got) != 0 {
						t.Fatalf("met early: %v", got)
					}
				}
			}
			if err := e.sync("sp"); err != nil {
				t.Fatal(err)
			}
			j := e.job("sp")
			if got := conditions(j); !slices.Equal(got, []string{"SuccessCriteriaMet/SuccessPolicy"}) || j.Status.Conditions[0].Message != tc.msg {
				t.Fatalf("after one sync: %+v", j.Status.Conditions)
			}
			e.settle("sp")
			j = e.job("sp")
			if got := conditions(j); !slices.Equal(got, []string{"SuccessCriteriaMet/SuccessPolicy", "Complete/SuccessPolicy"}) {
				t.Errorf("conditions %v", got)
			}
			// The Pods still running were deleted; they did not fail.
			if j.Status.Failed != 0 || j.Status.Active != 0 || int(j.Status.Succeeded) != len(tc.succ) || j.Status.CompletionTime == nil {
				t.Errorf("status %+v", j.Status)
			}
			e.wantReleased()
		})
	}
}

func TestBackoffLimitPerIndexIgnoredFailure(t *testing.T) {
	e := newEnv(t, Config{BackoffBase: time.Second, BackoffMax: time.Minute})
	e.create(newJob("ipi", indexedJob(1, 1, perIndexLimit(0),
		withRules(exitCodes(batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyOnExitCodesOpIn, "", 42)))))
	e.settle("ipi")
	e.failWith(e.activePods()[0], 42, false)
	e.settle("ipi")
	e.clock.Step(time.Second)
	e.settle("ipi")
	j := e.job("ipi")
	if ptr.Deref(j.Status.FailedIndexes, "nil") != "" || j.Status.Failed != 0 || len(conditions(j)) != 0 {
		t.Fatalf("an ignored failure counted: %+v", j.Status)
	}
	act := e.activePods()
	if len(act) != 1 || act[0].Annotations[batchv1.JobIndexFailureCountAnnotation] != "0" ||
		act[0].Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] != "1" {
		t.Fatalf("replacement %v", act)
	}
	e.wantReleasedFailed()
}

// wantReleasedFailed: no failed Pod holds the tracking finalizer.
func (e *env) wantReleasedFailed() {
	e.t.Helper()
	for _, p := range e.pods() {
		if p.Status.Phase == corev1.PodFailed && hasTrackingFinalizer(p) {
			e.t.Errorf("failed pod %s keeps its finalizer", p.Name)
		}
	}
}
