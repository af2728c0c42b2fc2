package etcd

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"

	"github.com/minik8s/minik8s/pkg/storage"
)

// clientConfig is how minik8s connects to etcd, embedded or external. The
// etcd client waits for a connection rather than failing a call, and gRPC
// by default waits up to two minutes between reconnection attempts: so a
// call to a stopped etcd blocked until it came back, and the first call
// after it did could wait many seconds more. Here reconnection attempts
// are at most a second apart, a connection that stops answering is
// dropped after keepalive pings go unanswered, and the Store's health
// monitor (below) fails calls at once while etcd is away.
func clientConfig(ctx context.Context, endpoints []string) clientv3.Config {
	return clientv3.Config{
		Endpoints:            endpoints,
		Context:              ctx,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    10 * time.Second, // gRPC's minimum
		DialKeepAliveTimeout: 5 * time.Second,
		MaxCallSendMsgSize:   4 << 20,
		Logger:               zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 3 * time.Second,
		})},
	}
}

// healthConfig paces the health monitor.
type healthConfig struct {
	// interval is the time between checks while etcd answers, recheck
	// while it does not (so its return is noticed soon).
	interval, recheck time.Duration
	// timeout bounds one check.
	timeout time.Duration
	// failures in a row make etcd unavailable; one is enough while the
	// connection itself is failing (etcd refuses connections).
	failures int
}

var defaultHealth = healthConfig{interval: time.Second, recheck: 250 * time.Millisecond, timeout: 2 * time.Second, failures: 2}

// healthKey is read by the checks: a linearizable read, which needs a
// leader and a quorum, of a key that never exists.
const healthKey = "/registry/.health"

// monitor checks etcd in the background and says whether it answers. While
// it does not, guard fails calls at once with storage.ErrUnavailable, and
// the calls in flight when it stopped answering are cancelled with it.
type monitor struct {
	client *clientv3.Client
	cfg    healthConfig
	log    *slog.Logger
	stop   context.CancelFunc
	done   chan struct{}
	// answered closes on the first check etcd answers.
	answered     chan struct{}
	answeredOnce sync.Once

	mu sync.Mutex
	// up ends, with down as its cause, when etcd stops answering.
	up       context.Context
	cancelUp context.CancelCauseFunc
	down     error // nil while etcd answers
	since    time.Time
}

func startMonitor(client *clientv3.Client, cfg healthConfig, log *slog.Logger) *monitor {
	ctx, stop := context.WithCancel(client.Ctx())
	m := &monitor{client: client, cfg: cfg, log: log, stop: stop, done: make(chan struct{}), answered: make(chan struct{})}
	m.up, m.cancelUp = context.WithCancelCause(context.Background())
	go m.run(ctx)
	return m
}

// Close stops the checks.
func (m *monitor) Close() {
	m.stop()
	<-m.done
}

// guard derives the context of one call to etcd from ctx: it also ends
// when etcd stops answering. While etcd is known not to answer, guard
// returns that error instead.
func (m *monitor) guard(ctx context.Context) (context.Context, context.CancelFunc, error) {
	m.mu.Lock()
	up, down := m.up, m.down
	m.mu.Unlock()
	if down != nil {
		return nil, nil, down
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(up, func() { cancel(context.Cause(up)) })
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}, nil
}

func (m *monitor) run(ctx context.Context) {
	defer close(m.done)
	t := time.NewTimer(0)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := m.check(ctx)
		if ctx.Err() != nil {
			return
		}
		next := m.cfg.interval
		if err == nil {
			failures = 0
			m.answeredOnce.Do(func() { close(m.answered) })
			m.markUp()
		} else {
			failures++
			if failures >= m.cfg.failures || m.connectionFailing() {
				m.markDown(err)
			}
			next = m.cfg.recheck
		}
		t.Reset(next)
	}
}

func (m *monitor) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.timeout)
	defer cancel()
	_, err := m.client.Get(ctx, healthKey, clientv3.WithCountOnly())
	return err
}

func (m *monitor) connectionFailing() bool {
	s := m.client.ActiveConnection().GetState()
	return s == connectivity.TransientFailure || s == connectivity.Shutdown
}

func (m *monitor) markDown(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down != nil {
		return
	}
	m.down = fmt.Errorf("%w: etcd %v does not answer: %v", storage.ErrUnavailable, m.client.Endpoints(), err)
	m.since = time.Now()
	m.cancelUp(m.down)
	m.log.Warn("etcd does not answer; storage calls fail until it does", "endpoints", m.client.Endpoints(), "err", err)
}

func (m *monitor) markUp() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down == nil {
		return
	}
	m.down = nil
	m.up, m.cancelUp = context.WithCancelCause(context.Background())
	m.log.Info("etcd answers again", "endpoints", m.client.Endpoints(), "unavailableFor", time.Since(m.since).Round(time.Millisecond))
}
