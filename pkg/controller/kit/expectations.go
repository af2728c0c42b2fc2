package kit

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// ExpectationsTTL is how long writes that the informer never reports
// (a lost watch event) may hold a controller back, as in Kubernetes.
const ExpectationsTTL = 5 * time.Minute

// Expectations remember, per controller key, the creations and deletions
// the controller issued and the informer has not reported yet: while
// some are pending the cache is behind, and acting on it would create
// or delete too many. Deletions are tracked by the deleted object's key
// (as Kubernetes' UIDTrackingControllerExpectations), so an object seen
// going away twice (marked for deletion, then removed) counts once.
type Expectations struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	m     map[string]*expectation
}

type expectation struct {
	creations int
	deletions sets.Set[string]
	since     time.Time
}

// NewExpectations measures the TTL on clk.
func NewExpectations(clk clock.PassiveClock) *Expectations {
	return &Expectations{clock: clk, m: map[string]*expectation{}}
}

// Satisfied says whether the controller may act on key: nothing is
// pending, or what is pending has waited longer than ExpectationsTTL.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.satisfied(e.m[key])
}

func (e *Expectations) satisfied(x *expectation) bool {
	return x == nil || (x.creations <= 0 && x.deletions.Len() == 0) || e.clock.Since(x.since) > ExpectationsTTL
}

// pending is key's record for more expectations: a fresh one when the
// old one is satisfied, so that what expired is not waited for again.
func (e *Expectations) pending(key string) *expectation {
	x := e.m[key]
	if e.satisfied(x) {
		x = &expectation{deletions: sets.New[string]()}
		e.m[key] = x
	}
	x.since = e.clock.Now()
	return x
}

// ExpectCreations records n more creations about to be issued for key.
func (e *Expectations) ExpectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending(key).creations += n
}

// ExpectDeletions records the deletion of the objects with keys about
// to be issued for key.
func (e *Expectations) ExpectDeletions(key string, keys ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending(key).deletions.Insert(keys...)
}

// CreationsObserved lowers key's pending creations by n: the informer
// reported new objects, or creations were never issued or failed.
func (e *Expectations) CreationsObserved(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.creations -= n
	}
}

// CreationObserved is CreationsObserved(key, 1).
func (e *Expectations) CreationObserved(key string) { e.CreationsObserved(key, 1) }

// DeletionObserved marks the deletion of the object with objKey as
// seen (or as never to be seen: the delete call failed).
func (e *Expectations) DeletionObserved(key, objKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.deletions.Delete(objKey)
	}
}

// Forget drops key's record (its object is gone).
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
