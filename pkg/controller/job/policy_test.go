package job

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestBackoffDelay(t *testing.T) {
	tests := []struct {
		failures int32
		want     time.Duration
	}{
		{0, 0},
		{1, 10 * time.Second},
		{2, 20 * time.Second},
		{3, 40 * time.Second},
		{5, 160 * time.Second},
		{6, 320 * time.Second},
		{7, 6 * time.Minute}, // 640s, capped
		{50, 6 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.failures), func(t *testing.T) {
			if got := backoffDelay(tt.failures, DefaultBackoffBase, DefaultBackoffMax); got != tt.want {
				t.Errorf("backoffDelay(%d) = %v, want %v", tt.failures, got, tt.want)
			}
		})
	}
}

func finishedPod(phase corev1.PodPhase, at time.Time) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(at)}},
	}}}}
}

func TestBackoffRecord(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tests := []struct {
		name      string
		start     backoffRecord
		succeeded []*corev1.Pod
		failed    []*corev1.Pod
		now       time.Time
		want      backoffRecord
		remaining time.Duration
	}{
		{name: "nothing new", start: backoffRecord{}, now: at(0), want: backoffRecord{}},
		{name: "first failure waits 10s", failed: []*corev1.Pod{finishedPod(corev1.PodFailed, at(5))}, now: at(5),
			want: backoffRecord{failures: 1, lastFailure: at(5)}, remaining: 10 * time.Second},
		{name: "counted from the failure, not from now", failed: []*corev1.Pod{finishedPod(corev1.PodFailed, at(5))}, now: at(12),
			want: backoffRecord{failures: 1, lastFailure: at(5)}, remaining: 3 * time.Second},
		{name: "third consecutive failure waits 40s", start: backoffRecord{failures: 2, lastFailure: at(0)},
			failed: []*corev1.Pod{finishedPod(corev1.PodFailed, at(30))}, now: at(30),
			want: backoffRecord{failures: 3, lastFailure: at(30)}, remaining: 40 * time.Second},
		{name: "waited long enough", start: backoffRecord{failures: 1, lastFailure: at(0)}, now: at(11),
			want: backoffRecord{failures: 1, lastFailure: at(0)}},
		{name: "a success resets", start: backoffRecord{failures: 4, lastFailure: at(0)},
			succeeded: []*corev1.Pod{finishedPod(corev1.PodSucceeded, at(20))}, now: at(20), want: backoffRecord{}},
		{name: "failures after the last success still count", start: backoffRecord{failures: 4, lastFailure: at(0)},
			succeeded: []*corev1.Pod{finishedPod(corev1.PodSucceeded, at(20))},
			failed:    []*corev1.Pod{finishedPod(corev1.PodFailed, at(10)), finishedPod(corev1.PodFailed, at(25)), finishedPod(corev1.PodFailed, at(30))},
			now:       at(30), want: backoffRecord{failures: 2, lastFailure: at(30)}, remaining: 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.start.next(tt.succeeded, tt.failed)
			if got != tt.want {
				t.Fatalf("next = %+v, want %+v", got, tt.want)
			}
			if r := got.remaining(tt.now, DefaultBackoffBase, DefaultBackoffMax); r != tt.remaining {
				t.Errorf("remaining = %v, want %v", r, tt.remaining)
			}
		})
	}
}

func TestFinishedAt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	created := metav1.NewTime(t0)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created}}
	if got := finishedAt(p); !got.Equal(t0) {
		t.Errorf("no status: %v, want creation", got)
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0.Add(time.Minute))}}
	if got := finishedAt(p); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("ready false: %v", got)
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{
		{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(t0.Add(2 * time.Minute))}}},
		{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(t0.Add(3 * time.Minute))}}},
	}
	if got := finishedAt(p); !got.Equal(t0.Add(3 * time.Minute)) {
		t.Errorf("containers: %v, want the last exit", got)
	}
}

func TestWantActiveAndCompleted(t *testing.T) {
	job := func(completions, parallelism *int32) *batchv1.Job {
		return &batchv1.Job{Spec: batchv1.JobSpec{Completions: completions, Parallelism: parallelism}}
	}
	tests := []struct {
		name              string
		job               *batchv1.Job
		active, succeeded int32
		want              int32
		done              bool
	}{
		{name: "fresh 3 of 2", job: job(ptr.To[int32](3), ptr.To[int32](2)), want: 2},
		{name: "one left", job: job(ptr.To[int32](3), ptr.To[int32](2)), active: 2, succeeded: 2, want: 1},
		{name: "all succeeded, one still running", job: job(ptr.To[int32](3), ptr.To[int32](2)), active: 1, succeeded: 3, want: 0},
		{name: "all succeeded", job: job(ptr.To[int32](3), ptr.To[int32](2)), succeeded: 3, want: 0, done: true},
		{name: "parallelism 0", job: job(ptr.To[int32](3), ptr.To[int32](0)), want: 0},
		{name: "nil parallelism is 1", job: job(ptr.To[int32](3), nil), want: 1},
		{name: "work queue starts parallelism", job: job(nil, ptr.To[int32](4)), want: 4},
		{name: "work queue after a success keeps what runs", job: job(nil, ptr.To[int32](4)), active: 2, succeeded: 1, want: 2},
		{name: "work queue done when one succeeded and all finished", job: job(nil, ptr.To[int32](4)), succeeded: 1, want: 0, done: true},
		{name: "work queue not done without success", job: job(nil, ptr.To[int32](4)), want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wantActive(tt.job, tt.active, tt.succeeded); got != tt.want {
				t.Errorf("wantActive = %d, want %d", got, tt.want)
			}
			if got := completed(tt.job, tt.active, tt.succeeded); got != tt.done {
				t.Errorf("completed = %v, want %v", got, tt.done)
			}
		})
	}
}

func TestPastBackoffLimitOnFailure(t *testing.T) {
	pod := func(phase corev1.PodPhase, restarts ...int32) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
		for _, r := range restarts {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{RestartCount: r})
		}
		return p
	}
	tests := []struct {
		name   string
		policy corev1.RestartPolicy
		limit  int32
		pods   []*corev1.Pod
		want   bool
	}{
		{name: "Never ignores restarts", policy: corev1.RestartPolicyNever, limit: 1, pods: []*corev1.Pod{pod(corev1.PodRunning, 5)}},
		{name: "below the limit", policy: corev1.RestartPolicyOnFailure, limit: 3, pods: []*corev1.Pod{pod(corev1.PodRunning, 1, 1)}},
		{name: "sum over containers and pods reaches it", policy: corev1.RestartPolicyOnFailure, limit: 3,
			pods: []*corev1.Pod{pod(corev1.PodRunning, 1, 1), pod(corev1.PodPending, 1)}, want: true},
		{name: "finished pods do not count", policy: corev1.RestartPolicyOnFailure, limit: 3,
			pods: []*corev1.Pod{pod(corev1.PodSucceeded, 5), pod(corev1.PodFailed, 5)}},
		{name: "limit 0: any restart", policy: corev1.RestartPolicyOnFailure, limit: 0, pods: []*corev1.Pod{pod(corev1.PodRunning, 1)}, want: true},
		{name: "limit 0: no restart", policy: corev1.RestartPolicyOnFailure, limit: 0, pods: []*corev1.Pod{pod(corev1.PodRunning, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := &batchv1.Job{Spec: batchv1.JobSpec{BackoffLimit: ptr.To(tt.limit),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: tt.policy}}}}
			if got := pastBackoffLimitOnFailure(job, tt.pods); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeadlineLeft(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		deadline  *int64
		start     *time.Time
		suspend   bool
		now       time.Time
		wantLeft  time.Duration
		wantApply bool
	}{
		{name: "no deadline", start: &t0, now: t0},
		{name: "not started", deadline: ptr.To[int64](60), now: t0},
		{name: "suspended", deadline: ptr.To[int64](60), start: &t0, suspend: true, now: t0.Add(time.Hour)},
		{name: "running", deadline: ptr.To[int64](60), start: &t0, now: t0.Add(45 * time.Second), wantLeft: 15 * time.Second, wantApply: true},
		{name: "exceeded", deadline: ptr.To[int64](60), start: &t0, now: t0.Add(61 * time.Second), wantLeft: -time.Second, wantApply: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := &batchv1.Job{Spec: batchv1.JobSpec{ActiveDeadlineSeconds: tt.deadline, Suspend: ptr.To(tt.suspend)}}
			if tt.start != nil {
				job.Status.StartTime = ptr.To(metav1.NewTime(*tt.start))
			}
			left, ok := deadlineLeft(job, tt.now)
			if ok != tt.wantApply || left != tt.wantLeft {
				t.Errorf("deadlineLeft = %v, %v; want %v, %v", left, ok, tt.wantLeft, tt.wantApply)
			}
		})
	}
}

func TestIndexSet(t *testing.T) {
	tests := []struct {
		in          string
		completions int
		add         []int
		want        string
		total       int
	}{
		{in: "", completions: 5, want: "", total: 0},
		{in: "1,3-5,7", completions: 10, want: "1,3-5,7", total: 5},
		{in: "1,3-5,7", completions: 5, want: "1,3-4", total: 3},
		{in: "1,2,3", completions: 5, want: "1-3", total: 3},
		{in: "x,2-1,-3,4", completions: 5, want: "4", total: 1},
		{in: "1,5", completions: 10, add: []int{2, 4, 3, 9}, want: "1-5,9", total: 6},
		{in: "", completions: 10, add: []int{0}, want: "0", total: 1},
	}
	for _, tt := range tests {
		t.Run(tt.in+fmt.Sprint(tt.add), func(t *testing.T) {
			s := parseIndexes(tt.in, tt.completions).with(tt.add)
			if got := s.String(); got != tt.want {
				t.Errorf("String = %q, want %q", got, tt.want)
			}
			if s.total() != tt.total {
				t.Errorf("total = %d, want %d", s.total(), tt.total)
			}
		})
	}
	s := parseIndexes("1,3-5,7", 10)
	for ix, want := range map[int]bool{0: false, 1: true, 2: false, 3: true, 4: true, 5: true, 6: false, 7: true, 8: false} {
		if s.has(ix) != want {
			t.Errorf("has(%d) = %v", ix, !want)
		}
	}
	if got := pendingIndexes(s, map[int]bool{0: true, 2: false, 6: true}, 3, 10); fmt.Sprint(got) != "[2 8 9]" {
		t.Errorf("pendingIndexes = %v, want [2 8 9]", got)
	}
}

func TestGenerateName(t *testing.T) {
	long := "a-very-long-job-name-that-goes-on-and-on-and-on-and-on-and-on"
	tests := []struct {
		job   string
		index int
		want  string
	}{
		{"pi", noIndex, "pi-"},
		{"pi", 3, "pi-3-"},
		{long, noIndex, long[:57] + "-"},
		{long, 12, long[:54] + "-12-"},
	}
	for _, tt := range tests {
		if got := generateName(tt.job, tt.index); got != tt.want || len(got) > maxGenerateName {
			t.Errorf("generateName(%q, %d) = %q, want %q", tt.job, tt.index, got, tt.want)
		}
	}
}

func TestIndexSetIntersectUnion(t *testing.T) {
	a, b := parseIndexes("0-3,7,9-12", 20), parseIndexes("2-8,10", 20)
	if got := a.intersect(b); got != 4 { // 2, 3, 7, 10
		t.Errorf("intersect %d, want 4", got)
	}
	if got := a.union(b).String(); got != "0-12" {
		t.Errorf("union %q", got)
	}
}
