package loop

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"
)

func TestProcessNext(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name         string
		after        time.Duration
		err          error
		wantRequeues int
		wantLater    bool // back in the queue once the delay has passed
	}{
		{name: "success forgets the back-off"},
		{name: "error backs off further", err: errBoom, wantRequeues: 2, wantLater: true},
		{name: "delay forgets the back-off and requeues later", after: time.Minute, wantLater: true},
		{name: "error wins over a delay", after: time.Minute, err: errBoom, wantRequeues: 2, wantLater: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			q := NewQueue[string]("test", clk)
			defer q.ShutDown()
			var got []string
			l := &Loop[string]{Queue: q, Logger: quiet, ReconcileAfter: func(_ context.Context, key string) (time.Duration, error) {
				got = append(got, key)
				return tc.after, tc.err
			}}
			q.AddRateLimited("k") // a back-off from an earlier failure
			clk.Step(time.Second)
			waitLen(t, q, 1)
			if !l.processNext(context.Background()) {
				t.Fatal("processNext: queue shut down")
			}
			if len(got) != 1 || got[0] != "k" {
				t.Fatalf("reconciled %v, want [k]", got)
			}
			if n := q.NumRequeues("k"); n != tc.wantRequeues {
				t.Errorf("NumRequeues = %d, want %d", n, tc.wantRequeues)
			}
			clk.Step(2 * time.Minute)
			if tc.wantLater {
				waitLen(t, q, 1)
			} else if q.Len() != 0 {
				t.Errorf("queue has %d keys, want none", q.Len())
			}
		})
	}
}

func TestProcessNextShutDown(t *testing.T) {
	q := NewQueue[string]("test", nil)
	q.ShutDown()
	l := &Loop[string]{Queue: q, Reconcile: func(context.Context, string) error { return nil }}
	if l.processNext(context.Background()) {
		t.Error("processNext after shutdown: true, want false")
	}
}

func TestRun(t *testing.T) {
	t.Run("caches never sync", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		q := NewQueue[string]("test", nil)
		l := &Loop[string]{Queue: q, Reconcile: func(context.Context, string) error { return nil },
			Synced: []cache.InformerSynced{func() bool { return false }}}
		if err := l.Run(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Run = %v, want %v", err, context.DeadlineExceeded)
		}
		if !q.ShuttingDown() {
			t.Error("queue not shut down")
		}
	})
	t.Run("ready fails", func(t *testing.T) {
		errReady := errors.New("not ready")
		l := &Loop[string]{Queue: NewQueue[string]("test", nil), Reconcile: func(context.Context, string) error { return nil },
			Ready: func(context.Context) error { return errReady }}
		if err := l.Run(context.Background()); !errors.Is(err, errReady) {
			t.Errorf("Run = %v, want %v", err, errReady)
		}
	})
	t.Run("no reconcile", func(t *testing.T) {
		l := &Loop[string]{Queue: NewQueue[string]("test", nil)}
		if err := l.Run(context.Background()); err == nil {
			t.Error("Run without a Reconcile: nil error")
		}
	})
	t.Run("reconciles and runs also until ctx ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		q, other := NewQueue[string]("test", nil), NewQueue[string]("other", nil)
		done := make(chan string, 2)
		reconcile := func(_ context.Context, key string) error { done <- key; return nil }
		otherLoop := &Loop[string]{Queue: other, Reconcile: reconcile}
		alsoReturned := false
		l := &Loop[string]{Queue: q, Reconcile: reconcile, Workers: 3, Logger: quiet,
			Also: []func(context.Context){otherLoop.Work, func(ctx context.Context) { <-ctx.Done(); alsoReturned = true }}}
		q.Add("a")
		other.Add("b")
		errc := make(chan error)
		go func() { errc <- l.Run(ctx) }()
		seen := map[string]bool{}
		for range 2 {
			select {
			case k := <-done:
				seen[k] = true
			case <-time.After(5 * time.Second):
				t.Fatalf("reconciled %v, want a and b", seen)
			}
		}
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		if !alsoReturned || !q.ShuttingDown() {
			t.Errorf("after Run: also returned %v, queue shut down %v", alsoReturned, q.ShuttingDown())
		}
		if other.ShuttingDown() {
			t.Error("Run shut down the queue of Also's Loop: that is its owner's")
		}
		other.ShutDown()
	})
}

func TestHandlers(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}
	q := workqueue.NewTyped[string]()
	defer q.ShutDown()
	h := KeyHandler(q)
	h.OnAdd(pod, false)
	h.OnUpdate(nil, pod)
	h.OnDelete(tomb)
	if q.Len() != 1 {
		t.Fatalf("queue has %d keys, want 1", q.Len())
	}
	if k, _ := q.Get(); k != "ns/p" {
		t.Errorf("key %q, want ns/p", k)
	}
	for _, obj := range []any{pod, tomb} {
		if got, ok := As[*corev1.Pod](obj); !ok || got != pod {
			t.Errorf("As(%T) = %v, %v; want the pod", obj, got, ok)
		}
	}
	if _, ok := As[*corev1.Node](tomb); ok {
		t.Error("As[*Node] of a pod's tombstone: ok")
	}
}

var quiet = slog.New(slog.DiscardHandler)

func waitLen(t *testing.T, q workqueue.TypedRateLimitingInterface[string], n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for q.Len() != n {
		if time.Now().After(deadline) {
			t.Fatalf("queue has %d keys, want %d", q.Len(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
