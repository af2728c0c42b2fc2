package ttlafterfinished

import (
	"context"
	"log/slog"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

func TestReconcile(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	job := func(ttl *int32, cond batchv1.JobConditionType, finished time.Time) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "u1"},
			Spec: batchv1.JobSpec{TTLSecondsAfterFinished: ttl}}
		if cond != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(finished)}}
		}
		return j
	}
	tests := []struct {
		name     string
		job      *batchv1.Job
		fresh    *batchv1.Job // the apiserver's, when it differs from the cache
		wantWait time.Duration
		wantGone bool
	}{
		{name: "no ttl", job: job(nil, batchv1.JobComplete, t0.Add(-time.Hour))},
		{name: "not finished", job: job(ptr.To[int32](0), "", t0)},
		{name: "suspended is not finished", job: job(ptr.To[int32](0), batchv1.JobSuspended, t0)},
		{name: "ttl 0 completes", job: job(ptr.To[int32](0), batchv1.JobComplete, t0), wantGone: true},
		{name: "failed expires too", job: job(ptr.To[int32](10), batchv1.JobFailed, t0.Add(-10*time.Second)), wantGone: true},
		{name: "not yet", job: job(ptr.To[int32](100), batchv1.JobComplete, t0.Add(-40*time.Second)), wantWait: 60 * time.Second},
		{name: "ttl raised since the cache saw it", job: job(ptr.To[int32](10), batchv1.JobComplete, t0.Add(-time.Minute)),
			fresh: job(ptr.To[int32](3600), batchv1.JobComplete, t0.Add(-time.Minute)), wantWait: 59 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stored := tt.job
			if tt.fresh != nil {
				stored = tt.fresh
			}
			client := fake.NewClientset(stored)
			var policy *metav1.DeletionPropagation
			client.PrependReactor("delete", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
				policy = a.(k8stesting.DeleteActionImpl).DeleteOptions.PropagationPolicy
				return false, nil, nil
			})
			factory := informers.NewSharedInformerFactory(client, 0)
			kc := &kit.Context{Client: client, Factory: factory, Clock: clocktesting.NewFakeClock(t0), Logger: slog.New(slog.DiscardHandler)}
			c, err := New(kc, Config{})
			if err != nil {
				t.Fatal(err)
			}
			_ = factory.Batch().V1().Jobs().Informer().GetIndexer().Add(tt.job)
			wait, err := c.Reconcile(context.Background(), "ns/j")
			if err != nil {
				t.Fatal(err)
			}
			if wait != tt.wantWait {
				t.Errorf("wait %v, want %v", wait, tt.wantWait)
			}
			_, err = client.BatchV1().Jobs("ns").Get(context.Background(), "j", metav1.GetOptions{})
			if gone := apierrors.IsNotFound(err); gone != tt.wantGone {
				t.Errorf("deleted = %v, want %v", gone, tt.wantGone)
			}
			if tt.wantGone && (policy == nil || *policy != metav1.DeletePropagationBackground) {
				t.Errorf("propagation %v, want Background", policy)
			}
		})
	}
}
