package etcd

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/storage"
)

// While etcd is away a Store answers at once with ErrUnavailable instead of
// waiting for it; once etcd is back (restarted on the same data and port)
// writes succeed again within a couple of seconds, and a watch opened
// before the outage delivers what is written after it.
func TestStoreOutage(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := StartEmbedded(ctx, EmbedConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Dial(ctx, []string{e.Endpoint})
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	defer s.Close()
	rev, err := s.Create(ctx, "/registry/o/a", []byte("1"))
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := s.Watch(wctx, "/registry/o/", rev)

	e.Close()
	// The first call waits for the health checks to notice; the next ones
	// fail at once. None waits for the caller's deadline.
	for i := range 3 {
		cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
		start := time.Now()
		_, err := s.Get(cctx, "/registry/o/a")
		ccancel()
		if !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("get %d with etcd stopped: %v, want ErrUnavailable", i, err)
		}
		t.Logf("get %d with etcd stopped: ErrUnavailable after %s", i, time.Since(start).Round(time.Millisecond))
	}
	if _, err := s.Revision(ctx); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("revision with etcd stopped: %v", err)
	}

	e, err = StartEmbedded(ctx, EmbedConfig{Dir: dir, ClientURL: e.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	back := time.Now()
	for {
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := s.Create(cctx, "/registry/o/b", []byte("2"))
		ccancel()
		if err == nil || errors.Is(err, storage.ErrExists) {
			break
		}
		if time.Since(back) > 30*time.Second {
			t.Fatalf("no write succeeded 30s after etcd restarted: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("a write succeeded %s after etcd restarted", time.Since(back).Round(time.Millisecond))
	timeout := time.After(30 * time.Second)
	for {
		select {
		case r := <-events:
			if r.Err != nil {
				t.Fatalf("watch across the outage ended: %v", r.Err)
			}
			if r.Event == nil {
				continue
			}
			if r.Event.Key != "/registry/o/b" || string(r.Event.Value) != "2" {
				t.Fatalf("watch across the outage delivered %+v, want the create of /registry/o/b", r.Event)
			}
			t.Logf("the watch delivered it %s after etcd restarted", time.Since(back).Round(time.Millisecond))
			return
		case <-timeout:
			t.Fatal("the watch opened before the outage delivered nothing 30s after etcd restarted")
		}
	}
}

// A call in flight when etcd stops answering ends with ErrUnavailable when
// the health checks notice, not when its own deadline passes.
func TestGuardCancelsCallsInFlight(t *testing.T) {
	s, _ := startStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gctx, done, err := s.health.guard(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	s.health.markDown(errors.New("test"))
	<-gctx.Done()
	if err := mapErr(gctx, gctx.Err()); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("call in flight: %v, want ErrUnavailable", err)
	}
	if _, err := s.Get(ctx, "/registry/x"); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("call while down: %v", err)
	}
	// The next answered check brings it back.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, err := s.Get(ctx, "/registry/x")
		if errors.Is(err, storage.ErrNotFound) {
			return
		}
		if !errors.Is(err, storage.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("get after etcd answers again: %v", err)
		}
	}
}
