package etcd

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// EmbedConfig configures the in-process etcd member.
type EmbedConfig struct {
	// Dir holds etcd's data; it survives restarts.
	Dir string
	// ClientURL is where the member listens for clients, e.g. http://127.0.0.1:2379.
	// Empty picks a free loopback port.
	ClientURL string
	// PeerURL is the member's peer listener; empty picks a free loopback port.
	PeerURL string
	// AutoCompactionRetention keeps this much history for watches to resume from.
	AutoCompactionRetention time.Duration
	Logger                  *slog.Logger
}

// Embedded is a running single-member etcd inside this process.
type Embedded struct {
	etcd   *embed.Etcd
	Client *clientv3.Client
	// Endpoint is the client URL other processes (etcdctl) can use.
	Endpoint string
}

// StartEmbedded starts etcd and waits until it serves. Stop it with Close.
func StartEmbedded(ctx context.Context, cfg EmbedConfig) (*Embedded, error) {
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create etcd dir: %w", err)
	}
	ec := embed.NewConfig()
	ec.Name = "minik8s"
	ec.Dir = cfg.Dir
	ec.WalDir = filepath.Join(cfg.Dir, "member", "wal")
	ec.LogLevel = "error"
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	clientURL := cfg.ClientURL
	if clientURL == "" {
		clientURL = "http://127.0.0.1:0"
	}
	peerURL := cfg.PeerURL
	if peerURL == "" {
		peerURL = "http://127.0.0.1:0"
	}
	cu, err := url.Parse(clientURL)
	if err != nil {
		return nil, fmt.Errorf("etcd client url: %w", err)
	}
	pu, err := url.Parse(peerURL)
	if err != nil {
		return nil, fmt.Errorf("etcd peer url: %w", err)
	}
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	ec.InitialCluster = ec.Name + "=" + pu.String()
	// A single member started on an existing data dir must not try to
	// re-bootstrap with the (possibly different) peer port of this run.
	ec.ForceNewCluster = false
	ec.AutoCompactionMode = embed.CompactorModePeriodic
	retention := cfg.AutoCompactionRetention
	if retention == 0 {
		retention = 5 * time.Minute
	}
	ec.AutoCompactionRetention = retention.String()
	ec.QuotaBackendBytes = 8 << 30
	ec.MaxRequestBytes = 3 << 20

	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd: %w", err)
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("embedded etcd did not become ready in 60s")
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	endpoint := e.Clients[0].Addr().String()
	client, err := clientv3.New(clientConfig(context.Background(), []string{endpoint}))
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("connect to embedded etcd: %w", err)
	}
	if cfg.Logger != nil {
		cfg.Logger.Info("embedded etcd ready", "endpoint", endpoint, "dir", cfg.Dir)
	}
	return &Embedded{etcd: e, Client: client, Endpoint: "http://" + endpoint}, nil
}

// Err reports a fatal error of the running member.
func (e *Embedded) Err() <-chan error { return e.etcd.Err() }

// Close stops the client and the member, flushing etcd's WAL.
func (e *Embedded) Close() {
	e.Client.Close()
	e.etcd.Close()
}
