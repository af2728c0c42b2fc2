package apiserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/minik8s/minik8s/pkg/storage"
)

// fakeStore is a revisioned store in memory whose failures a test sets:
// other writers winning updates, a storage that does not answer, or one
// that never returns.
type fakeStore struct {
	storage.Store // Compact and RequestProgress: not used here

	mu  sync.Mutex
	rev int64
	kvs map[string]storage.KV
	// lose is how many of the next updates find their key rewritten by
	// another writer since it was read.
	lose int
	// err, when set, is every call's answer.
	err error
	// hang, when set, holds every Get until it closes, whatever its
	// caller's context says.
	hang chan struct{}
}

func newFakeStore() *fakeStore { return &fakeStore{kvs: map[string]storage.KV{}} }

func (f *fakeStore) Get(_ context.Context, key string) (*storage.KV, error) {
	if f.hang != nil {
		<-f.hang
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	kv, err := f.current(key)
	if err != nil {
		return nil, err
	}
	return &kv, nil
}

// current is key's value; f.mu is held.
func (f *fakeStore) current(key string) (storage.KV, error) {
	if f.err != nil {
		return storage.KV{}, f.err
	}
	kv, ok := f.kvs[key]
	if !ok {
		return kv, storage.ErrNotFound
	}
	return kv, nil
}

func (f *fakeStore) List(_ context.Context, prefix string, _ storage.ListOptions) (*storage.ListResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	out := &storage.ListResult{Revision: f.rev}
	for k, kv := range f.kvs {
		if strings.HasPrefix(k, prefix) {
			out.KVs = append(out.KVs, kv)
		}
	}
	return out, nil
}

func (f *fakeStore) Create(_ context.Context, key string, value []byte) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	if _, ok := f.kvs[key]; ok {
		return 0, storage.ErrExists
	}
	f.rev++
	f.kvs[key] = storage.KV{Key: key, Value: value, ModRevision: f.rev}
	return f.rev, nil
}

func (f *fakeStore) Update(_ context.Context, key string, value []byte, expected int64) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kv, err := f.current(key)
	if err != nil {
		return 0, err
	}
	if f.lose > 0 {
		f.lose--
		f.rev++
		kv.ModRevision = f.rev
		f.kvs[key] = kv
	}
	if kv.ModRevision != expected {
		return 0, storage.ErrConflict
	}
	f.rev++
	f.kvs[key] = storage.KV{Key: key, Value: value, ModRevision: f.rev}
	return f.rev, nil
}

func (f *fakeStore) Delete(_ context.Context, key string, expected int64) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kv, err := f.current(key)
	if err != nil {
		return 0, err
	}
	if expected != 0 && kv.ModRevision != expected {
		return 0, storage.ErrConflict
	}
	f.rev++
	delete(f.kvs, key)
	return f.rev, nil
}

// Watch sees no changes: it ends with ctx.
func (f *fakeStore) Watch(ctx context.Context, _ string, _ int64) <-chan storage.WatchResult {
	ch := make(chan storage.WatchResult)
	context.AfterFunc(ctx, func() { close(ch) })
	return ch
}

func (f *fakeStore) Revision(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rev, f.err
}

// put stores obj as the resource's object, as the server would.
func (f *fakeStore) put(t *testing.T, s *Server, resource string, obj runtime.Object) {
	t.Helper()
	res, ok := s.table.Lookup(corev1.SchemeGroupVersion.WithResource(resource))
	if !ok {
		t.Fatalf("no resource %s", resource)
	}
	m := obj.(interface {
		GetNamespace() string
		GetName() string
	})
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Create(context.Background(), objectKey(res, m.GetNamespace(), m.GetName()), data); err != nil {
		t.Fatal(err)
	}
}

// serveFake runs a server over store, tuned by cfg, over HTTP.
func serveFake(t *testing.T, store *fakeStore, tune func(*Config)) (*Server, *httptest.Server) {
	t.Helper()
	cfg := Config{Store: store, Logger: slog.New(slog.DiscardHandler)}
	if tune != nil {
		tune(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv
}
