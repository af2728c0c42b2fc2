package controlplane

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/minik8s/minik8s/pkg/controller/certificates"
	"github.com/minik8s/minik8s/pkg/controller/namespace"
	"github.com/minik8s/minik8s/pkg/controller/nodeipam"
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

// controllerNames are the built-in controllers, in start order; each can be
// disabled by name (Config.DisableControllers).
var controllerNames = []string{"namespace", "scheduler", "nodeipam", "csrapproving", "csrsigning"}

// startControllers runs the control plane's controllers until ctx ends;
// the returned channel closes once they have stopped.
func startControllers(ctx context.Context, cfg Config, url string, b *pki.Bundle, log *slog.Logger) (<-chan struct{}, error) {
	disabled := map[string]bool{}
	for _, name := range cfg.DisableControllers {
		if !slices.Contains(controllerNames, name) {
			return nil, fmt.Errorf("unknown controller %q (known: %s)", name, strings.Join(controllerNames, ", "))
		}
		disabled[name] = true
	}
	rc := loopbackConfig(url, b)
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("controller client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("controller client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	// Each part is built only when enabled, so a disabled one starts no
	// informer either.
	build := map[string]func() (func(context.Context) error, error){
		"namespace": func() (func(context.Context) error, error) {
			return namespace.New(client, dyn, factory, log).Start, nil
		},
		"scheduler": func() (func(context.Context) error, error) {
			// Each pod costs the scheduler a binding and an event: it gets
			// its own, faster client.
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
			return sched.Start, nil
		},
		"nodeipam": func() (func(context.Context) error, error) {
			ipam, err := nodeipam.New(client, factory, nodeipam.Config{ClusterCIDR: cfg.ClusterCIDR, Logger: log})
			if err != nil {
				return nil, err
			}
			return ipam.Start, nil
		},
		"csrapproving": func() (func(context.Context) error, error) {
			a, err := certificates.NewApprover(client, factory, certificates.Config{Logger: log})
			if err != nil {
				return nil, err
			}
			return a.Start, nil
		},
		"csrsigning": func() (func(context.Context) error, error) {
			s, err := certificates.NewSigner(client, factory, b, certificates.SignerConfig{Config: certificates.Config{Logger: log}})
			if err != nil {
				return nil, err
			}
			return s.Start, nil
		},
	}
	parts := map[string]func(context.Context) error{}
	for _, name := range controllerNames {
		if disabled[name] {
			continue
		}
		start, err := build[name]()
		if err != nil {
			return nil, err
		}
		parts[name] = start
	}
	factory.Start(ctx.Done())
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
		factory.Shutdown()
		close(done)
	}()
	return done, nil
}
