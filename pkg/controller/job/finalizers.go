package job

import (
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
)

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
