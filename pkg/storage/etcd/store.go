package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/minik8s/minik8s/pkg/storage"
)

// Store is a storage.Store over an etcd v3 client. A health monitor checks
// etcd every second: while etcd does not answer, calls fail at once with
// storage.ErrUnavailable instead of waiting for it (watches wait: they
// resume where they were once etcd is back).
type Store struct {
	client *clientv3.Client
	// closeClient is set when Store created the client and must close it.
	closeClient bool
	health      *monitor
}

var _ storage.Store = (*Store)(nil)

// Option tunes a Store.
type Option func(*options)

type options struct {
	log    *slog.Logger
	health healthConfig
}

// WithLogger is where the Store reports etcd going away and coming back
// (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

func buildOptions(opts []Option) options {
	o := options{log: slog.Default(), health: defaultHealth}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// New wraps an existing client; the caller keeps ownership of it. Close
// stops the Store's health checks.
func New(client *clientv3.Client, opts ...Option) *Store {
	o := buildOptions(opts)
	return &Store{client: client, health: startMonitor(client, o.health, o.log)}
}

// Dial connects to the etcd endpoints, waits until etcd answers or ctx
// ends, and owns the resulting client.
func Dial(ctx context.Context, endpoints []string, opts ...Option) (*Store, error) {
	c, err := clientv3.New(clientConfig(ctx, endpoints))
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %v: %w", endpoints, err)
	}
	o := buildOptions(opts)
	s := &Store{client: c, closeClient: true, health: startMonitor(c, o.health, o.log)}
	select {
	case <-s.health.answered:
		return s, nil
	case <-ctx.Done():
		_ = s.Close()
		return nil, fmt.Errorf("connect to etcd %v: %w", endpoints, ctx.Err())
	}
}

// Client exposes the underlying etcd client (benchmarks compare against it).
func (s *Store) Client() *clientv3.Client { return s.client }

func (s *Store) Close() error {
	s.health.Close()
	if s.closeClient {
		return s.client.Close()
	}
	return nil
}

// call runs op with a context that also ends when etcd stops answering
// (failing at once while it is known not to), and maps op's error.
func (s *Store) call(ctx context.Context, op func(context.Context) error) error {
	ctx, done, err := s.health.guard(ctx)
	if err != nil {
		return err
	}
	defer done()
	return mapErr(ctx, op(ctx))
}

func (s *Store) Get(ctx context.Context, key string) (*storage.KV, error) {
	var resp *clientv3.GetResponse
	err := s.call(ctx, func(ctx context.Context) (err error) {
		resp, err = s.client.Get(ctx, key)
		return err
	})
	if err != nil {
		return nil, err
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
	var resp *clientv3.GetResponse
	err := s.call(ctx, func(ctx context.Context) (err error) {
		resp, err = s.client.Get(ctx, start, ops...)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &storage.ListResult{KVs: make([]storage.KV, 0, len(resp.Kvs)), More: resp.More, Revision: resp.Header.Revision, Count: resp.Count}
	if opts.Revision > 0 {
		out.Revision = opts.Revision
	}
	for _, kv := range resp.Kvs {
		out.KVs = append(out.KVs, storage.KV{Key: string(kv.Key), Value: kv.Value, ModRevision: kv.ModRevision})
	}
	return out, nil
}

func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	var resp *clientv3.TxnResponse
	err := s.call(ctx, func(ctx context.Context) (err error) {
		resp, err = s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, string(value))).
			Commit()
		return err
	})
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return 0, storage.ErrExists
	}
	return resp.Header.Revision, nil
}

func (s *Store) Update(ctx context.Context, key string, value []byte, expected int64) (int64, error) {
	var resp *clientv3.TxnResponse
	err := s.call(ctx, func(ctx context.Context) (err error) {
		resp, err = s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", expected)).
			Then(clientv3.OpPut(key, string(value))).
			Else(clientv3.OpGet(key)).
			Commit()
		return err
	})
	if err != nil {
		return 0, err
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
	var resp *clientv3.TxnResponse
	err := s.call(ctx, func(ctx context.Context) (err error) {
		txn := s.client.Txn(ctx)
		if expected > 0 {
			txn = txn.If(clientv3.Compare(clientv3.ModRevision(key), "=", expected))
		}
		resp, err = txn.Then(clientv3.OpDelete(key)).Else(clientv3.OpGet(key)).Commit()
		return err
	})
	if err != nil {
		return 0, err
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

// watchRetry is the pause before a watch that etcd ended for want of a
// leader is opened again.
const watchRetry = 250 * time.Millisecond

func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) <-chan storage.WatchResult {
	out := make(chan storage.WatchResult, 100)
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
		// next is the first revision not delivered yet (0: from now, until
		// etcd says where now is).
		next := int64(0)
		if fromRevision > 0 {
			next = fromRevision + 1
		}
		for {
			err := s.watchOnce(ctx, prefix, &next, send)
			if ctx.Err() != nil || err == nil {
				return
			}
			// The etcd client itself reconnects a watch whose connection
			// broke; what ends one here is etcd without a leader (a member
			// restarting, an election). Resume where it stopped.
			if !errors.Is(err, storage.ErrUnavailable) || next == 0 {
				send(storage.WatchResult{Err: err})
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(watchRetry):
			}
		}
	}()
	return out
}

// watchOnce streams one etcd watch from *next, moving *next past what it
// delivers. It returns the error that ended the watch, nil when a send
// was refused (ctx ended).
func (s *Store) watchOnce(ctx context.Context, prefix string, next *int64, send func(storage.WatchResult) bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ops := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithProgressNotify(), clientv3.WithCreatedNotify()}
	if *next > 0 {
		ops = append(ops, clientv3.WithRev(*next))
	}
	// RequireLeader makes a watch on a member cut off from its cluster fail
	// instead of going silent.
	for resp := range s.client.Watch(clientv3.WithRequireLeader(ctx), prefix, ops...) {
		if resp.CompactRevision > 0 {
			send(storage.WatchResult{Err: storage.ErrCompacted, Revision: resp.CompactRevision})
			return nil
		}
		if err := resp.Err(); err != nil {
			return mapErr(ctx, err)
		}
		if resp.Created {
			if *next == 0 {
				*next = resp.Header.Revision + 1
			}
			continue
		}
		if resp.IsProgressNotify() {
			*next = max(*next, resp.Header.Revision+1)
			if !send(storage.WatchResult{Progress: true, Revision: resp.Header.Revision}) {
				return nil
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
				return nil
			}
			*next = e.Revision + 1
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("etcd watch channel closed")
}

func (s *Store) RequestProgress(ctx context.Context) error {
	return s.call(ctx, func(ctx context.Context) error {
		return s.client.RequestProgress(clientv3.WithRequireLeader(ctx))
	})
}

func (s *Store) Revision(ctx context.Context) (int64, error) {
	// A Get of a key that never exists is the cheapest linearizable read of the revision.
	var resp *clientv3.GetResponse
	err := s.call(ctx, func(ctx context.Context) (err error) {
		resp, err = s.client.Get(ctx, "/registry/.revision", clientv3.WithCountOnly())
		return err
	})
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

func (s *Store) Compact(ctx context.Context, revision int64) error {
	return s.call(ctx, func(ctx context.Context) error {
		_, err := s.client.Compact(ctx, revision)
		return err
	})
}

// mapErr turns an etcd error of a call made with ctx into the storage
// errors callers act on.
func mapErr(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(context.Cause(ctx), storage.ErrUnavailable):
		// The health monitor cancelled the call: etcd stopped answering.
		return context.Cause(ctx)
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%w: %v", storage.ErrCompacted, err)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%w: %v", storage.ErrFutureRevision, err)
	case unavailable(err):
		return fmt.Errorf("%w: %v", storage.ErrUnavailable, err)
	}
	return err
}

// unavailable says whether etcd answered that it cannot serve now (no
// leader, leader changed, connection lost).
func unavailable(err error) bool {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable
	}
	return status.Code(err) == codes.Unavailable
}
