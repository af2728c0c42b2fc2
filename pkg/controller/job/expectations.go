package job

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// expectationsTimeout is how long the controller waits for the informer
// to show Pod creations and deletions it made before it stops trusting
// the count and looks at the cache as it is.
const expectationsTimeout = 5 * time.Minute

// expectations count, per Job, the Pod creations and deletions that the
// controller made and the informer has not shown yet. While some are
// outstanding the cache is behind, and the controller must not create or
// delete more Pods from it (it would create too many).
type expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	m     map[string]*expectation
}

type expectation struct {
	adds, dels int
	at         time.Time
}

func newExpectations(c clock.PassiveClock) *expectations {
	return &expectations{clock: c, m: map[string]*expectation{}}
}

func (e *expectations) expect(key string, adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok || (x.adds <= 0 && x.dels <= 0) {
		x = &expectation{}
		e.m[key] = x
	}
	x.adds += adds
	x.dels += dels
	x.at = e.clock.Now()
}

func (e *expectations) observe(key string, adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.adds -= adds
		x.dels -= dels
	}
}

// satisfied: nothing is outstanding, or it has been outstanding too long.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok {
		return true
	}
	return (x.adds <= 0 && x.dels <= 0) || e.clock.Since(x.at) > expectationsTimeout
}

func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

// finalizerExpectations are, per Job, the Pods whose tracking finalizer
// the controller removed while the informer may still show it. Such a Pod
// is already counted in the Job status: counting it again from the cache
// would count it twice.
type finalizerExpectations struct {
	mu sync.Mutex
	m  map[string]sets.Set[string]
}

func newFinalizerExpectations() *finalizerExpectations {
	return &finalizerExpectations{m: map[string]sets.Set[string]{}}
}

func (f *finalizerExpectations) expect(key string, uids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.m[key]
	if !ok {
		s = sets.New[string]()
		f.m[key] = s
	}
	s.Insert(uids...)
}

func (f *finalizerExpectations) observe(key, uid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.m[key]; ok {
		s.Delete(uid)
		if s.Len() == 0 {
			delete(f.m, key)
		}
	}
}

// pending is a copy of the Job's outstanding removals.
func (f *finalizerExpectations) pending(key string) sets.Set[string] {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[key].Clone()
}

func (f *finalizerExpectations) forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, key)
}
