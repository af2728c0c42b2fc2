package etcd

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/storage"
)

func startStore(t *testing.T) (*Store, *Embedded) {
	t.Helper()
	ctx := context.Background()
	e, err := StartEmbedded(ctx, EmbedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return New(e.Client), e
}

func TestStoreConditionalWrites(t *testing.T) {
	s, _ := startStore(t)
	ctx := context.Background()
	rev, err := s.Create(ctx, "/registry/a/x", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/registry/a/x", []byte("2")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second create: got %v, want ErrExists", err)
	}
	rev2, err := s.Update(ctx, "/registry/a/x", []byte("3"), rev)
	if err != nil || rev2 <= rev {
		t.Fatalf("update: rev %d err %v", rev2, err)
	}
	if _, err := s.Update(ctx, "/registry/a/x", []byte("4"), rev); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("stale update: got %v, want ErrConflict", err)
	}
	if _, err := s.Update(ctx, "/registry/a/nope", []byte("4"), 1); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("update of missing key: got %v, want ErrNotFound", err)
	}
	kv, err := s.Get(ctx, "/registry/a/x")
	if err != nil || string(kv.Value) != "3" || kv.ModRevision != rev2 {
		t.Fatalf("get: %+v %v", kv, err)
	}
	if _, err := s.Delete(ctx, "/registry/a/x", rev); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("stale delete: got %v", err)
	}
	if _, err := s.Delete(ctx, "/registry/a/x", rev2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "/registry/a/x"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
}

func TestStoreListPagesAtOneRevision(t *testing.T) {
	s, _ := startStore(t)
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		if _, err := s.Create(ctx, "/registry/p/"+k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.List(ctx, "/registry/p/", storage.ListOptions{Limit: 2})
	if err != nil || len(page.KVs) != 2 || !page.More {
		t.Fatalf("first page: %+v %v", page, err)
	}
	// A write between pages must not show up in the continued list.
	if _, err := s.Create(ctx, "/registry/p/f", []byte("f")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range page.KVs {
		got = append(got, string(kv.Value))
	}
	for page.More {
		next := page.KVs[len(page.KVs)-1].Key + "\x00"
		page, err = s.List(ctx, "/registry/p/", storage.ListOptions{Limit: 2, StartKey: next, Revision: page.Revision})
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range page.KVs {
			got = append(got, string(kv.Value))
		}
	}
	if len(got) != 5 || got[4] != "e" {
		t.Fatalf("paged list = %v, want a..e", got)
	}
}

func TestStoreWatch(t *testing.T) {
	s, _ := startStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rev, _ := s.Create(ctx, "/registry/w/a", []byte("1"))
	rev2, _ := s.Update(ctx, "/registry/w/a", []byte("2"), rev)
	if _, err := s.Delete(ctx, "/registry/w/a", rev2); err != nil {
		t.Fatal(err)
	}
	// Resuming from the create's revision replays the update and the delete.
	ch := s.Watch(ctx, "/registry/w/", rev)
	first := <-ch
	if first.Event == nil || first.Event.Type != storage.EventPut || string(first.Event.Value) != "2" || string(first.Event.PrevValue) != "1" {
		t.Fatalf("first event: %+v", first)
	}
	second := <-ch
	if second.Event == nil || second.Event.Type != storage.EventDelete || string(second.Event.Value) != "2" {
		t.Fatalf("second event: %+v", second)
	}
	if err := s.RequestProgress(ctx); err != nil {
		t.Fatal(err)
	}
	if p := <-ch; !p.Progress || p.Revision < second.Revision {
		t.Fatalf("progress: %+v", p)
	}
	// After compaction, an old revision can no longer be resumed.
	cur, _ := s.Revision(ctx)
	if err := s.Compact(ctx, cur); err != nil {
		t.Fatal(err)
	}
	old := <-s.Watch(ctx, "/registry/w/", rev)
	if !errors.Is(old.Err, storage.ErrCompacted) {
		t.Fatalf("watch from compacted revision: %+v", old)
	}
}

func TestEmbeddedKeepsDataAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := StartEmbedded(ctx, EmbedConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := New(e.Client).Create(ctx, "/registry/r/x", []byte("kept"))
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	e, err = StartEmbedded(ctx, EmbedConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	kv, err := New(e.Client).Get(ctx, "/registry/r/x")
	if err != nil || string(kv.Value) != "kept" || kv.ModRevision != rev {
		t.Fatalf("after restart: %+v %v", kv, err)
	}
}
