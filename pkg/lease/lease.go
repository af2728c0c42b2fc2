// Package lease is leader election on a coordination.k8s.io Lease, shared
// by the components that run one active copy at a time (the scheduler, the
// controller manager): Campaign runs a term of work each time this process
// holds the lease and campaigns again when it loses it.
package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Kubernetes' defaults for its control-plane components.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Config names the lease and how it is held.
type Config struct {
	Client kubernetes.Interface
	// Name and Namespace of the Lease; Namespace defaults to kube-system.
	Name, Namespace string
	// Identity defaults to the host name and a random suffix.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod default to 15s, 10s, 2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Recorder, if set, receives the LeaderElection events.
	Recorder resourcelock.EventRecorder
	Logger   *slog.Logger
}

func (c *Config) complete() error {
	if c.Client == nil || c.Name == "" {
		return errors.New("lease: a client and a lease name are required")
	}
	if c.Namespace == "" {
		c.Namespace = metav1.NamespaceSystem
	}
	if c.Identity == "" {
		host, _ := os.Hostname()
		c.Identity = host + "_" + string(uuid.NewUUID())
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Campaign calls lead with a context that lives as long as this process
// holds the lease, once per term, until ctx ends. lead must return when
// its context ends. On ctx's end the lease is released, so a successor
// does not wait for it to expire.
func Campaign(ctx context.Context, cfg Config, lead func(context.Context)) error {
	if err := cfg.complete(); err != nil {
		return err
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: cfg.Name, Namespace: cfg.Namespace},
		Client:     cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity, EventRecorder: cfg.Recorder},
	}
	log := cfg.Logger.With("lease", cfg.Namespace+"/"+cfg.Name)
	for ctx.Err() == nil {
		elected := make(chan context.Context, 1)
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, Name: cfg.Name, ReleaseOnCancel: true,
			LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) { elected <- lctx },
				OnStoppedLeading: func() {},
				OnNewLeader: func(id string) {
					if id != cfg.Identity {
						log.Info("another instance leads", "leader", id)
					}
				},
			},
		})
		if err != nil {
			return fmt.Errorf("leader election on %s: %w", cfg.Name, err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			elector.Run(ctx)
		}()
		select {
		case lctx := <-elected:
			log.Info("leading", "identity", cfg.Identity)
			lead(lctx)
			<-done
		case <-done:
		}
		if ctx.Err() == nil {
			log.Warn("lost the lease; campaigning again")
		}
	}
	return nil
}
