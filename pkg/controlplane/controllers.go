package controlplane

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/minik8s/minik8s/pkg/controllermanager"
	"github.com/minik8s/minik8s/pkg/pki"
	"github.com/minik8s/minik8s/pkg/scheduler"
)

// loopbackConfig is how in-process components reach the apiserver: over
// TLS, as the admin, exactly as an external client would.
func loopbackConfig(url string, b *pki.Bundle) *rest.Config {
	return &rest.Config{
		Host: url,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: b.CAPEM, CertData: b.AdminCertPEM, KeyData: b.AdminKeyPEM,
		},
		QPS: 100, Burst: 200,
		UserAgent: "minik8s-controller-manager",
	}
}

// startControllers runs the scheduler and the controller manager, each
// leader-elected, until ctx ends; the returned channel closes once they
// have stopped. cfg.DisableControllers names controller-manager
// controllers or "scheduler".
func startControllers(ctx context.Context, cfg Config, url string, b *pki.Bundle, log *slog.Logger) (<-chan struct{}, error) {
	var disable []string
	runScheduler := true
	for _, name := range cfg.DisableControllers {
		if name == "scheduler" {
			runScheduler = false
			continue
		}
		disable = append(disable, name)
	}
	cm := controllermanager.Config{
		REST: loopbackConfig(url, b), CA: b, ClusterCIDR: cfg.ClusterCIDR, Disable: disable,
		LeaderElection: true, Options: cfg.Controllers, Logger: log,
	}
	if err := cm.Validate(); err != nil {
		return nil, fmt.Errorf("%w (or scheduler)", err)
	}
	parts := map[string]func(context.Context) error{
		"controller-manager": func(ctx context.Context) error { return controllermanager.Run(ctx, cm) },
	}
	if runScheduler {
		// Each pod costs the scheduler a binding and an event: it gets its
		// own, faster client.
		sc := loopbackConfig(url, b)
		sc.QPS, sc.Burst, sc.UserAgent = 500, 1000, "minik8s-scheduler"
		schedClient, err := kubernetes.NewForConfig(sc)
		if err != nil {
			return nil, fmt.Errorf("scheduler client: %w", err)
		}
		sched, err := scheduler.New(scheduler.Config{Client: schedClient, Logger: log,
			LeaderElection: scheduler.LeaderElectionConfig{Enabled: true}})
		if err != nil {
			return nil, err
		}
		parts["scheduler"] = sched.Start
	}
	var wg sync.WaitGroup
	for name, start := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := start(ctx); err != nil && ctx.Err() == nil {
				log.Error("control plane part stopped", "part", name, "err", err)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done, nil
}
