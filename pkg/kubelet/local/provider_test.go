package local

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// slowLister is a runtime whose relist takes a while and is counted.
type slowLister struct {
	*fakeRuntime
	lists   atomic.Int32
	listing chan struct{} // closed when the first relist is under way
	once    sync.Once
	release chan struct{} // the relists return once it is closed
}

func (s *slowLister) ListContainers(ctx context.Context) ([]runtime.ContainerStatus, error) {
	s.lists.Add(1)
	s.once.Do(func() { close(s.listing) })
	<-s.release
	return s.fakeRuntime.ListContainers(ctx)
}

// TestListCache checks the shared relist: a fresh list (maxAge 0) is one
// asked for after the call, which callers waiting together share; a list
// asked for before an invalidate is never taken; maxAge > 0 reuses.
func TestListCache(t *testing.T) {
	rt := &slowLister{fakeRuntime: newFakeRuntime(testclock.NewFakeClock(epoch)), listing: make(chan struct{}), release: make(chan struct{})}
	c := &listCache{ttl: time.Hour}
	ctx := context.Background()

	// One relist under way; three callers ask for a fresh list meanwhile.
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = c.get(ctx, rt, 0) })
	<-rt.listing
	for range 3 {
		wg.Go(func() { _, _ = c.get(ctx, rt, 0) })
	}
	time.Sleep(200 * time.Millisecond) // let them queue behind the relist
	close(rt.release)
	wg.Wait()
	if n := rt.lists.Load(); n != 2 {
		t.Errorf("%d relists for four callers, three of them waiting together; want 2", n)
	}

	if _, err := c.get(ctx, rt, -1); err != nil || rt.lists.Load() != 2 {
		t.Errorf("within the ttl: %d relists, err %v; want the cached list", rt.lists.Load(), err)
	}
	c.invalidate()
	if _, err := c.get(ctx, rt, -1); err != nil || rt.lists.Load() != 3 {
		t.Errorf("after invalidate: %d relists, err %v; want a new one", rt.lists.Load(), err)
	}
	if _, err := c.get(ctx, rt, 0); err != nil || rt.lists.Load() != 4 {
		t.Errorf("fresh list asked for after the last: %d relists, err %v; want a new one", rt.lists.Load(), err)
	}
}
