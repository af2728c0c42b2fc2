package integration

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/simulated"
)

// cronClock is the CronJob controller's clock in these tests: it follows
// real time (so the controller's retries and back-offs run), and the test
// makes it jump to the next minute instead of waiting for it.
type cronClock struct{ *clocktesting.FakeClock }

func cronNewClock(t *testing.T) cronClock {
	c := cronClock{clocktesting.NewFakeClock(time.Now())}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				c.Step(now.Sub(last))
				last = now
			}
		}
	}()
	return c
}

// nextMinute jumps to 1s past the next whole minute and returns that
// minute: the time a `* * * * *` CronJob is due.
func (c cronClock) nextMinute() time.Time {
	due := c.Now().Truncate(time.Minute).Add(time.Minute)
	c.Step(due.Add(time.Second).Sub(c.Now()))
	return due
}

func cronNew(name, policy string, exitAfter string) *batchv1.CronJob {
	ann := map[string]string{}
	if exitAfter != "" {
		ann[simulated.AnnotationExitAfter] = exitAfter
	}
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.CronJobSpec{
			Schedule: "* * * * *", TimeZone: ptr.To("UTC"), ConcurrencyPolicy: batchv1.ConcurrencyPolicy(policy),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: ann},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "hello", Image: "busybox", Command: []string{"echo", "hello"}}}},
			}}},
		},
	}
}

// cronJobName is the name of the Job a CronJob runs for a due time.
func cronJobName(cj string, due time.Time) string {
	return cj + "-" + strconv.FormatInt(due.Unix()/60, 10)
}

// cronJobs are the names of the Jobs in ns.
func cronJobs(t *testing.T, ctx context.Context, c *cluster, ns string) []string {
	t.Helper()
	list, err := c.client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, j := range list.Items {
		out = append(out, j.Name)
	}
	slices.Sort(out)
	return out
}

// cronWait polls the CronJob until ok.
func cronWait(t *testing.T, ctx context.Context, c *cluster, ns, name, what string, ok func(*batchv1.CronJob) bool) *batchv1.CronJob {
	t.Helper()
	var last *batchv1.CronJob
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cj, err := c.client.BatchV1().CronJobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = cj
		return ok(cj), nil
	})
	if err != nil {
		t.Fatalf("cronjob %s/%s: waiting for %s: %v; last status %+v; jobs %v", ns, name, what, err, last.Status, cronJobs(t, ctx, c, ns))
	}
	return last
}

func cronActive(cj *batchv1.CronJob) []string {
	var out []string
	for _, r := range cj.Status.Active {
		out = append(out, r.Name)
	}
	slices.Sort(out)
	return out
}

func TestCronJob(t *testing.T) {
	c := startClusterWith(t, withoutControllers("job", "cronjob", "ttl-after-finished"))
	startSimulatedNodes(t, c, 2)
	clk := cronNewClock(t)
	jobStartControllers(t, c, clk)
	k := newKubectl(t, c)

	t.Run("runs on schedule and keeps the history limit", func(t *testing.T) {
		ctx := ctxT(t)
		ns := jobNamespace(t, ctx, c, "cron-history")
		cj := cronNew("hello", "Allow", "100ms")
		cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](2)
		if _, err := c.client.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var names []string
		for i := range 3 {
			due := clk.nextMinute()
			name := cronJobName("hello", due)
			names = append(names, name)
			jobWait(t, ctx, c, ns, name, "complete", func(j *batchv1.Job) bool { return jobHas(j, batchv1.JobComplete) })
			got := cronWait(t, ctx, c, ns, "hello", "the job seen completed", func(cj *batchv1.CronJob) bool {
				return len(cj.Status.Active) == 0 && cj.Status.LastSuccessfulTime != nil && cj.Status.LastScheduleTime != nil &&
					cj.Status.LastScheduleTime.Time.Equal(due)
			})
			if i == 0 {
				j, err := c.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if ts := j.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; ts != due.UTC().Format(time.RFC3339) {
					t.Errorf("scheduled timestamp %q, want %s", ts, due.UTC().Format(time.RFC3339))
				}
				if ref := metav1.GetControllerOf(j); ref == nil || ref.Kind != "CronJob" || ref.UID != got.UID {
					t.Errorf("job owner %+v", ref)
				}
			}
		}
		// The newest two stay (the clock runs ahead of the apiserver's, so
		// an even older one may have run at creation: it is gone too).
		waitFor(t, "the oldest jobs to be deleted", func(ctx context.Context) (bool, error) {
			return slices.Equal(cronJobs(t, ctx, c, ns), names[1:]), nil
		})
		jobWaitEvents(t, ctx, c, ns, "CronJob", "hello", "SuccessfulCreate", "SawCompletedJob", "SuccessfulDelete")

		// A Job made by hand from the CronJob runs like any other.
		k.ok(t, "create", "job", "-n", ns, "manual", "--from=cronjob/hello")
		k.ok(t, "wait", "-n", ns, "--for=condition=complete", "job/manual", "--timeout=60s")
	})

	t.Run("forbid skips while a job runs, replace replaces it", func(t *testing.T) {
		ctx := ctxT(t)
		ns := jobNamespace(t, ctx, c, "cron-concurrency")
		if _, err := c.client.BatchV1().CronJobs(ns).Create(ctx, cronNew("busy", "Forbid", ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The clock runs ahead of the apiserver's: the CronJob may have
		// been due already when it was created. Either way one Job runs.
		clk.nextMinute()
		first := cronWait(t, ctx, c, ns, "busy", "a job active", func(cj *batchv1.CronJob) bool {
			return len(cj.Status.Active) == 1
		}).Status.Active[0].Name
		jobWait(t, ctx, c, ns, first, "a running pod", func(j *batchv1.Job) bool { return ptr.Deref(j.Status.Ready, 0) == 1 })

		skipped := clk.nextMinute()
		jobWaitEvents(t, ctx, c, ns, "CronJob", "busy", "JobAlreadyActive")
		if got := cronJobs(t, ctx, c, ns); !slices.Equal(got, []string{first}) {
			t.Fatalf("jobs %v with Forbid, want only %s", got, first)
		}
		if cj, _ := c.client.BatchV1().CronJobs(ns).Get(ctx, "busy", metav1.GetOptions{}); cj.Status.LastScheduleTime.Time.Equal(skipped) {
			t.Error("the skipped time became the last schedule time")
		}

		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cj, err := c.client.BatchV1().CronJobs(ns).Get(ctx, "busy", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cj.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
			_, err = c.client.BatchV1().CronJobs(ns).Update(ctx, cj, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		// The skipped time is still unmet: with Replace it runs now, in
		// place of the first job.
		second := cronJobName("busy", skipped)
		cronWait(t, ctx, c, ns, "busy", "the replacement active", func(cj *batchv1.CronJob) bool {
			return slices.Equal(cronActive(cj), []string{second})
		})
		waitFor(t, "the replaced job to be deleted", func(ctx context.Context) (bool, error) {
			_, err := c.client.BatchV1().Jobs(ns).Get(ctx, first, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		third := cronJobName("busy", clk.nextMinute())
		cronWait(t, ctx, c, ns, "busy", "the next replacement active", func(cj *batchv1.CronJob) bool {
			return slices.Equal(cronActive(cj), []string{third})
		})
		if got := cronJobs(t, ctx, c, ns); !slices.Equal(got, []string{third}) {
			t.Errorf("jobs %v, want only %s", got, third)
		}
		jobWaitEvents(t, ctx, c, ns, "CronJob", "busy", "SuccessfulDelete")
	})

	t.Run("suspended cronjob creates nothing", func(t *testing.T) {
		ctx := ctxT(t)
		ns := jobNamespace(t, ctx, c, "cron-suspended")
		cj := cronNew("idle", "Allow", "100ms")
		cj.Spec.Suspend = ptr.To(true)
		if _, err := c.client.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		clk.nextMinute()
		time.Sleep(time.Second)
		if got := cronJobs(t, ctx, c, ns); len(got) != 0 {
			t.Errorf("suspended cronjob created %v", got)
		}
	})
}
