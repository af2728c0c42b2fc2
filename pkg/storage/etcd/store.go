package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/minik8s/minik8s/pkg/storage"
)

// Store is a storage.Store over an etcd v3 client.
type Store struct {
	client *clientv3.Client
	// closeClient is set when Store created the client and must close it.
	closeClient bool
}

var _ storage.Store = (*Store)(nil)

// New wraps an existing client; the caller keeps ownership of it.
func New(client *clientv3.Client) *Store { return &Store{client: client} }

// Dial connects to the etcd endpoints and owns the resulting client.
func Dial(ctx context.Context, endpoints []string) (*Store, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, Context: ctx, DialTimeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %v: %w", endpoints, err)
	}
	return &Store{client: c, closeClient: true}, nil
}

// Client exposes the underlying etcd client (benchmarks compare against it).
func (s *Store) Client() *clientv3.Client { return s.client }

func (s *Store) Close() error {
	if s.closeClient {
		return s.client.Close()
	}
	return nil
}

func (s *Store) Get(ctx context.Context, key string) (*storage.KV, error) {
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return nil, mapErr(err)
	}
	if len(resp.Kvs) == 0 {
		return nil, storage.ErrNotFound
	}
	kv := resp.Kvs[0]
	return &storage.KV{Key: string(kv.Key), Value: kv.Value, ModRevision: kv.ModRevision}, nil
}

func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.ListResult, error) {
	start := prefix
	if opts.StartKey != "" {
		start = opts.StartKey
	}
	ops := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix))}
	if opts.Limit > 0 {
		ops = append(ops, clientv3.WithLimit(opts.Limit))
	}
	if opts.Revision > 0 {
		ops = append(ops, clientv3.WithRev(opts.Revision))
	}
	resp, err := s.client.Get(ctx, start, ops...)
	if err != nil {
		return nil, mapErr(err)
	}
	out := &storage.ListResult{KVs: make([]storage.KV, 0, len(resp.Kvs)), More: resp.More, Revision: resp.Header.Revision}
	if opts.Revision > 0 {
		out.Revision = opts.Revision
	}
	for _, kv := range resp.Kvs {
		out.KVs = append(out.KVs, storage.KV{Key: string(kv.Key), Value: kv.Value, ModRevision: kv.ModRevision})
	}
	return out, nil
}

func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).
		Commit()
	if err != nil {
		return 0, mapErr(err)
	}
	if !resp.Succeeded {
		return 0, storage.ErrExists
	}
	return resp.Header.Revision, nil
}

func (s *Store) Update(ctx context.Context, key string, value []byte, expected int64) (int64, error) {
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", expected)).
		Then(clientv3.OpPut(key, string(value))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, mapErr(err)
	}
	if !resp.Succeeded {
		if len(resp.Responses) > 0 && len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return 0, storage.ErrNotFound
		}
		return 0, storage.ErrConflict
	}
	return resp.Header.Revision, nil
}

func (s *Store) Delete(ctx context.Context, key string, expected int64) (int64, error) {
	txn := s.client.Txn(ctx)
	if expected > 0 {
		txn = txn.If(clientv3.Compare(clientv3.ModRevision(key), "=", expected))
	}
	resp, err := txn.Then(clientv3.OpDelete(key)).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return 0, mapErr(err)
	}
	if !resp.Succeeded {
		if len(resp.Responses) > 0 && len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return 0, storage.ErrNotFound
		}
		return 0, storage.ErrConflict
	}
	if resp.Responses[0].GetResponseDeleteRange().Deleted == 0 {
		return 0, storage.ErrNotFound
	}
	return resp.Header.Revision, nil
}

func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) <-chan storage.WatchResult {
	out := make(chan storage.WatchResult, 100)
	ops := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithProgressNotify()}
	if fromRevision > 0 {
		ops = append(ops, clientv3.WithRev(fromRevision+1))
	}
	// RequireLeader makes a watch on a member cut off from its cluster fail
	// instead of going silent.
	wch := s.client.Watch(clientv3.WithRequireLeader(ctx), prefix, ops...)
	go func() {
		defer close(out)
		send := func(r storage.WatchResult) bool {
			select {
			case out <- r:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for resp := range wch {
			if resp.CompactRevision > 0 {
				send(storage.WatchResult{Err: storage.ErrCompacted, Revision: resp.CompactRevision})
				return
			}
			if err := resp.Err(); err != nil {
				send(storage.WatchResult{Err: mapErr(err)})
				return
			}
			if resp.IsProgressNotify() {
				if !send(storage.WatchResult{Progress: true, Revision: resp.Header.Revision}) {
					return
				}
				continue
			}
			for _, ev := range resp.Events {
				e := &storage.Event{Key: string(ev.Kv.Key), Revision: ev.Kv.ModRevision}
				if ev.Type == mvccpb.DELETE {
					e.Type = storage.EventDelete
					if ev.PrevKv != nil {
						e.Value = ev.PrevKv.Value
					}
				} else {
					e.Type = storage.EventPut
					e.Value = ev.Kv.Value
					if ev.PrevKv != nil {
						e.PrevValue = ev.PrevKv.Value
					}
				}
				if !send(storage.WatchResult{Event: e, Revision: e.Revision}) {
					return
				}
			}
		}
		if ctx.Err() == nil {
			send(storage.WatchResult{Err: errors.New("etcd watch channel closed")})
		}
	}()
	return out
}

func (s *Store) RequestProgress(ctx context.Context) error {
	return s.client.RequestProgress(clientv3.WithRequireLeader(ctx))
}

func (s *Store) Revision(ctx context.Context) (int64, error) {
	// A Get of a key that never exists is the cheapest linearizable read of the revision.
	resp, err := s.client.Get(ctx, "/registry/.revision", clientv3.WithCountOnly())
	if err != nil {
		return 0, mapErr(err)
	}
	return resp.Header.Revision, nil
}

func (s *Store) Compact(ctx context.Context, revision int64) error {
	_, err := s.client.Compact(ctx, revision)
	return mapErr(err)
}

func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%w: %v", storage.ErrCompacted, err)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%w: %v", storage.ErrFutureRevision, err)
	}
	return err
}
