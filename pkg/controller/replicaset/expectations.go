package replicaset

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// expectationsTTL is how long writes that the informer never reports
// (a lost watch event) may hold a ReplicaSet back, as in Kubernetes.
const expectationsTTL = 5 * time.Minute

// expectations remembers, per ReplicaSet key, the pod creations and
// deletions this controller issued and the informer has not yet
// reported. Deletions are tracked by pod key, so a pod seen going away
// twice (marked for deletion, then removed) counts once.
type expectations struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	m     map[string]*expectation
}

type expectation struct {
	creations int
	deletions sets.Set[string]
	since     time.Time
}

func newExpectations(c clock.PassiveClock) *expectations {
	return &expectations{clock: c, m: map[string]*expectation{}}
}

// satisfied says whether the controller may act on key: nothing is
// pending, or what is pending has waited longer than expectationsTTL.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok {
		return true
	}
	if x.creations <= 0 && x.deletions.Len() == 0 {
		return true
	}
	return e.clock.Since(x.since) > expectationsTTL
}

// expectCreations records n creations about to be issued for key,
// replacing whatever was recorded before.
func (e *expectations) expectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = &expectation{creations: n, deletions: sets.New[string](), since: e.clock.Now()}
}

// expectDeletions records the deletion of podKeys about to be issued for
// key, replacing whatever was recorded before.
func (e *expectations) expectDeletions(key string, podKeys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = &expectation{deletions: sets.New(podKeys...), since: e.clock.Now()}
}

// creationObserved lowers key's pending creations by one: the informer
// reported a new pod, or a creation was never issued or failed.
func (e *expectations) creationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.creations--
	}
}

// deletionObserved marks podKey's deletion as seen.
func (e *expectations) deletionObserved(key, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.deletions.Delete(podKey)
	}
}

// forget drops key's record (its ReplicaSet is gone).
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
