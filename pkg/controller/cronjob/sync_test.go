package cronjob

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/cronschedule"
)

// created is when the test CronJobs were created: 12:00:00 UTC.
var created = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type env struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	clock    *clocktesting.FakeClock
	c        *Controller
	recorder *record.FakeRecorder
	cjIdx    cache.Indexer
	jobIdx   cache.Indexer
	uid      int
}

func newEnv(t *testing.T, now time.Time) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), client: fake.NewClientset(), clock: clocktesting.NewFakeClock(now)}
	e.client.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		j := a.(k8stesting.CreateAction).GetObject().(*batchv1.Job)
		e.uid++
		j.UID = types.UID(fmt.Sprintf("job-uid-%d", e.uid))
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(e.client, 0)
	e.recorder = record.NewFakeRecorder(1000)
	kc := &kit.Context{Client: e.client, Factory: factory, Clock: e.clock, Logger: slog.New(slog.DiscardHandler), Recorder: e.recorder}
	c, err := New(kc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	e.cjIdx = factory.Batch().V1().CronJobs().Informer().GetIndexer()
	e.jobIdx = factory.Batch().V1().Jobs().Informer().GetIndexer()
	t.Cleanup(c.Queue.ShutDown)
	return e
}

func newCronJob(mutate ...func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "ns", UID: "cj-uid", CreationTimestamp: metav1.NewTime(created)},
		Spec: batchv1.CronJobSpec{
			Schedule: "* * * * *", TimeZone: ptr.To("UTC"), ConcurrencyPolicy: batchv1.AllowConcurrent, Suspend: ptr.To(false),
			SuccessfulJobsHistoryLimit: ptr.To[int32](3), FailedJobsHistoryLimit: ptr.To[int32](1),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "hello"}, Annotations: map[string]string{"note": "x"}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
			},
		},
	}
	for _, m := range mutate {
		m(cj)
	}
	return cj
}

func (e *env) create(objs ...runtime.Object) {
	e.t.Helper()
	for _, o := range objs {
		if err := e.client.Tracker().Add(o); err != nil {
			e.t.Fatal(err)
		}
	}
}

// sync refreshes the caches from the fake API and syncs the CronJob.
func (e *env) sync() time.Duration {
	e.t.Helper()
	cjs, _ := e.client.BatchV1().CronJobs("").List(e.ctx, metav1.ListOptions{})
	var objs []any
	for i := range cjs.Items {
		objs = append(objs, &cjs.Items[i])
	}
	_ = e.cjIdx.Replace(objs, "")
	jobs, _ := e.client.BatchV1().Jobs("").List(e.ctx, metav1.ListOptions{})
	objs = nil
	for i := range jobs.Items {
		objs = append(objs, &jobs.Items[i])
	}
	_ = e.jobIdx.Replace(objs, "")
	requeue, err := e.c.Reconcile(e.ctx, "ns/hello")
	if err != nil {
		e.t.Fatalf("sync: %v", err)
	}
	return requeue
}

func (e *env) cronJob() *batchv1.CronJob {
	e.t.Helper()
	cj, err := e.client.BatchV1().CronJobs("ns").Get(e.ctx, "hello", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return cj
}

func (e *env) jobNames() []string {
	e.t.Helper()
	jobs, err := e.client.BatchV1().Jobs("ns").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, j := range jobs.Items {
		out = append(out, j.Name)
	}
	slices.Sort(out)
	return out
}

func (e *env) finishJob(name string, cond batchv1.JobConditionType) {
	e.t.Helper()
	j, err := e.client.BatchV1().Jobs("ns").Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	now := metav1.NewTime(e.clock.Now())
	j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: cond, Status: corev1.ConditionTrue, LastTransitionTime: now})
	if cond == batchv1.JobComplete {
		j.Status.CompletionTime = &now
	}
	if _, err := e.client.BatchV1().Jobs("ns").UpdateStatus(e.ctx, j, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.recorder.Events:
			out = append(out, strings.Fields(ev)[1])
		default:
			return out
		}
	}
}

func minuteName(t time.Time) string { return fmt.Sprintf("hello-%d", t.Unix()/60) }

func activeNames(cj *batchv1.CronJob) []string {
	var out []string
	for _, r := range cj.Status.Active {
		out = append(out, r.Name)
	}
	slices.Sort(out)
	return out
}

func TestCreatesJobWhenDue(t *testing.T) {
	e := newEnv(t, created.Add(30*time.Second))
	e.create(newCronJob())
	if requeue := e.sync(); requeue != 30*time.Second+cronschedule.NextDelta {
		t.Errorf("requeue %v, want 30.1s", requeue)
	}
	if names := e.jobNames(); len(names) != 0 {
		t.Fatalf("jobs %v before the first due time", names)
	}
	e.clock.Step(30 * time.Second)
	if requeue := e.sync(); requeue != time.Minute+cronschedule.NextDelta {
		t.Errorf("requeue %v, want 1m0.1s", requeue)
	}
	due := created.Add(time.Minute)
	want := minuteName(due)
	if names := e.jobNames(); !slices.Equal(names, []string{want}) {
		t.Fatalf("jobs %v, want [%s]", names, want)
	}
	job, _ := e.client.BatchV1().Jobs("ns").Get(e.ctx, want, metav1.GetOptions{})
	if job.Annotations[batchv1.CronJobScheduledTimestampAnnotation] != "2026-03-01T12:01:00Z" || job.Annotations["note"] != "x" || job.Labels["app"] != "hello" {
		t.Errorf("job metadata %v %v", job.Labels, job.Annotations)
	}
	if ref := metav1.GetControllerOf(job); ref == nil || ref.Kind != "CronJob" || ref.UID != "cj-uid" {
		t.Errorf("controller ref %+v", ref)
	}
	cj := e.cronJob()
	if !slices.Equal(activeNames(cj), []string{want}) || cj.Status.LastScheduleTime == nil || !cj.Status.LastScheduleTime.Time.Equal(due) {
		t.Errorf("status %+v", cj.Status)
	}
	if ev := e.events(); !slices.Equal(ev, []string{"SuccessfulCreate"}) {
		t.Errorf("events %v", ev)
	}
	// Syncing again at the same time does nothing.
	e.sync()
	if len(e.jobNames()) != 1 {
		t.Error("a due time ran twice")
	}

	// The Job completes: it leaves the active list, and its completion is
	// the last success.
	e.clock.Step(20 * time.Second)
	e.finishJob(want, batchv1.JobComplete)
	e.sync()
	cj = e.cronJob()
	if len(cj.Status.Active) != 0 || cj.Status.LastSuccessfulTime == nil || !cj.Status.LastSuccessfulTime.Time.Equal(e.clock.Now()) {
		t.Errorf("status after completion %+v", cj.Status)
	}
	if ev := e.events(); !slices.Contains(ev, "SawCompletedJob") {
		t.Errorf("events %v", ev)
	}
}

func TestConcurrencyPolicy(t *testing.T) {
	first, second := created.Add(time.Minute), created.Add(2*time.Minute)
	tests := []struct {
		policy     batchv1.ConcurrencyPolicy
		wantJobs   []string
		wantActive []string
		wantEvent  string
	}{
		{policy: batchv1.AllowConcurrent, wantJobs: []string{minuteName(first), minuteName(second)},
			wantActive: []string{minuteName(first), minuteName(second)}, wantEvent: "SuccessfulCreate"},
		{policy: batchv1.ForbidConcurrent, wantJobs: []string{minuteName(first)}, wantActive: []string{minuteName(first)}, wantEvent: "JobAlreadyActive"},
		{policy: batchv1.ReplaceConcurrent, wantJobs: []string{minuteName(second)}, wantActive: []string{minuteName(second)}, wantEvent: "SuccessfulDelete"},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			e := newEnv(t, first)
			e.create(newCronJob(func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = tt.policy }))
			e.sync()
			e.events()
			e.clock.Step(time.Minute)
			e.sync()
			if got := e.jobNames(); !slices.Equal(got, tt.wantJobs) {
				t.Errorf("jobs %v, want %v", got, tt.wantJobs)
			}
			cj := e.cronJob()
			if got := activeNames(cj); !slices.Equal(got, tt.wantActive) {
				t.Errorf("active %v, want %v", got, tt.wantActive)
			}
			if ev := e.events(); !slices.Contains(ev, tt.wantEvent) {
				t.Errorf("events %v lack %s", ev, tt.wantEvent)
			}
			// Forbid, as in Kubernetes: the skipped time stays unmet, so it
			// runs (late) once the active Job finished.
			if tt.policy == batchv1.ForbidConcurrent {
				e.clock.Step(10 * time.Second)
				e.finishJob(minuteName(first), batchv1.JobComplete)
				e.sync()
				if got := e.jobNames(); !slices.Equal(got, []string{minuteName(first), minuteName(second)}) {
					t.Errorf("jobs %v after the active one finished", got)
				}
			}
		})
	}
}

func TestHistoryLimits(t *testing.T) {
	e := newEnv(t, created.Add(time.Minute))
	e.create(newCronJob(func(cj *batchv1.CronJob) {
		cj.Spec.SuccessfulJobsHistoryLimit, cj.Spec.FailedJobsHistoryLimit = ptr.To[int32](2), ptr.To[int32](1)
	}))
	var names []string
	for i := range 6 {
		e.sync()
		name := minuteName(e.clock.Now().Truncate(time.Minute))
		names = append(names, name)
		j, _ := e.client.BatchV1().Jobs("ns").Get(e.ctx, name, metav1.GetOptions{})
		j.Status.StartTime = ptr.To(metav1.NewTime(e.clock.Now()))
		_, _ = e.client.BatchV1().Jobs("ns").UpdateStatus(e.ctx, j, metav1.UpdateOptions{})
		cond := batchv1.JobComplete
		if i%2 == 1 {
			cond = batchv1.JobFailed
		}
		e.finishJob(name, cond)
		e.clock.Step(time.Minute)
	}
	e.sync() // creates the 7th, cleans up
	got := e.jobNames()
	// Kept: the 2 newest successes (#2, #4), the newest failure (#5), and the new one.
	want := []string{names[2], names[4], names[5], minuteName(e.clock.Now().Truncate(time.Minute))}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("jobs %v, want %v", got, want)
	}
	if ev := e.events(); !slices.Contains(ev, "SuccessfulDelete") {
		t.Errorf("events %v", ev)
	}
}

func TestMissedSchedules(t *testing.T) {
	t.Run("too many missed: warn, run the latest", func(t *testing.T) {
		e := newEnv(t, created.Add(5*time.Hour+30*time.Second))
		e.create(newCronJob())
		e.sync()
		if got := e.jobNames(); !slices.Equal(got, []string{minuteName(created.Add(5 * time.Hour))}) {
			t.Errorf("jobs %v", got)
		}
		if ev := e.events(); !slices.Contains(ev, "TooManyMissedTimes") {
			t.Errorf("events %v", ev)
		}
	})
	t.Run("starting deadline passed: nothing runs", func(t *testing.T) {
		e := newEnv(t, created.Add(90*time.Minute+30*time.Second))
		e.create(newCronJob(func(cj *batchv1.CronJob) {
			cj.Spec.Schedule = "@hourly"
			cj.Spec.StartingDeadlineSeconds = ptr.To[int64](10)
		}))
		if requeue := e.sync(); requeue != 29*time.Minute+30*time.Second+cronschedule.NextDelta {
			t.Errorf("requeue %v", requeue)
		}
		if got := e.jobNames(); len(got) != 0 {
			t.Errorf("jobs %v: the 13:00 run is 30m late, past its 10s deadline", got)
		}
		if ev := e.events(); slices.Contains(ev, "TooManyMissedTimes") {
			t.Errorf("events %v", ev)
		}
	})
	t.Run("within the starting deadline", func(t *testing.T) {
		e := newEnv(t, created.Add(60*time.Minute+5*time.Second))
		e.create(newCronJob(func(cj *batchv1.CronJob) {
			cj.Spec.Schedule = "@hourly"
			cj.Spec.StartingDeadlineSeconds = ptr.To[int64](10)
		}))
		e.sync()
		if got := e.jobNames(); !slices.Equal(got, []string{minuteName(created.Add(time.Hour))}) {
			t.Errorf("jobs %v", got)
		}
	})
}

func TestTimeZone(t *testing.T) {
	mustLoad(t, "Asia/Tokyo")
	// 00:00:30 UTC is 09:00:30 in Tokyo.
	e := newEnv(t, time.Date(2026, 3, 2, 0, 0, 30, 0, time.UTC))
	e.create(newCronJob(func(cj *batchv1.CronJob) {
		cj.Spec.Schedule = "0 9 * * *"
		cj.Spec.TimeZone = ptr.To("Asia/Tokyo")
	}))
	e.sync()
	due := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	job, err := e.client.BatchV1().Jobs("ns").Get(e.ctx, minuteName(due), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no job for 09:00 Tokyo: %v (jobs %v)", err, e.jobNames())
	}
	if ts := job.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; ts != "2026-03-02T09:00:00+09:00" {
		t.Errorf("scheduled timestamp %q", ts)
	}
}

func TestInvalidSpecsAndSuspend(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(*batchv1.CronJob)
		wantEvent string
	}{
		{name: "TZ in schedule", mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC * * * * *" }, wantEvent: "UnparseableSchedule"},
		{name: "CRON_TZ in schedule", mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "CRON_TZ=UTC * * * * *" }, wantEvent: "UnparseableSchedule"},
		{name: "bad schedule", mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "* * *" }, wantEvent: "UnparseableSchedule"},
		{name: "unknown time zone", mutate: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("Mars/Olympus") }, wantEvent: "UnknownTimeZone"},
		{name: "suspended", mutate: func(cj *batchv1.CronJob) { cj.Spec.Suspend = ptr.To(true) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, created.Add(time.Hour))
			e.create(newCronJob(tt.mutate))
			if requeue := e.sync(); requeue != 0 {
				t.Errorf("requeue %v, want none", requeue)
			}
			if got := e.jobNames(); len(got) != 0 {
				t.Errorf("jobs %v", got)
			}
			ev := e.events()
			if tt.wantEvent != "" && !slices.Contains(ev, tt.wantEvent) {
				t.Errorf("events %v lack %s", ev, tt.wantEvent)
			}
		})
	}
}

func TestActiveListRepair(t *testing.T) {
	e := newEnv(t, created.Add(90*time.Second))
	// A Job created by an earlier sync whose status update was lost.
	cj := newCronJob()
	lost := jobFromTemplate(cj, created.Add(time.Minute), time.UTC)
	lost.UID = "lost-uid"
	// An active Job that no longer exists.
	cj.Status.Active = []corev1.ObjectReference{{Kind: "Job", Namespace: "ns", Name: "hello-gone", UID: "gone-uid"}}
	e.create(cj, lost)
	e.sync()
	got := e.cronJob()
	if names := activeNames(got); !slices.Equal(names, []string{lost.Name}) {
		t.Errorf("active %v, want [%s]", names, lost.Name)
	}
	if got.Status.LastScheduleTime == nil || !got.Status.LastScheduleTime.Time.Equal(created.Add(time.Minute)) {
		t.Errorf("lastScheduleTime %v", got.Status.LastScheduleTime)
	}
	if ev := e.events(); !slices.Contains(ev, "SawCompletedJob") || slices.Contains(ev, "SuccessfulCreate") {
		t.Errorf("events %v", ev)
	}

	// A Job made by kubectl create job --from=cronjob/hello: warned about,
	// never adopted into the active list nor deleted.
	manual := jobFromTemplate(cj, created, time.UTC)
	manual.Name, manual.UID = "manual", "manual-uid"
	e.create(manual)
	e.sync()
	if ev := e.events(); !slices.Contains(ev, "UnexpectedJob") {
		t.Errorf("events %v", ev)
	}
	if _, err := e.client.BatchV1().Jobs("ns").Get(e.ctx, "manual", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Error("manual job deleted")
	}
}

func TestForbidWithStartingDeadline(t *testing.T) {
	first, second := created.Add(time.Minute), created.Add(2*time.Minute)
	e := newEnv(t, first)
	e.create(newCronJob(func(cj *batchv1.CronJob) {
		cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
		cj.Spec.StartingDeadlineSeconds = ptr.To[int64](5)
	}))
	e.sync()
	e.clock.Step(time.Minute)
	e.sync() // second is skipped: first is active
	e.clock.Step(10 * time.Second)
	e.finishJob(minuteName(first), batchv1.JobComplete)
	e.sync()
	if got := e.jobNames(); !slices.Equal(got, []string{minuteName(first)}) {
		t.Errorf("jobs %v: the skipped %v is past its 5s starting deadline", got, second)
	}
	e.clock.Step(50 * time.Second)
	e.sync()
	if got := e.jobNames(); !slices.Equal(got, []string{minuteName(first), minuteName(created.Add(3 * time.Minute))}) {
		t.Errorf("jobs %v at the next due time", got)
	}
}
