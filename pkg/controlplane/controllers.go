package controlplane

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/minik8s/minik8s/pkg/controller/namespace"
	"github.com/minik8s/minik8s/pkg/pki"
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

// startControllers runs the control plane's controllers until ctx ends;
// the returned channel closes once they have stopped.
func startControllers(ctx context.Context, url string, b *pki.Bundle, log *slog.Logger) (<-chan struct{}, error) {
	cfg := loopbackConfig(url, b)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("controller client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("controller client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	ns := namespace.New(client, dyn, factory, log)
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := ns.Start(ctx); err != nil && ctx.Err() == nil {
			log.Error("namespace controller stopped", "err", err)
		}
		factory.Shutdown()
	}()
	return done, nil
}
