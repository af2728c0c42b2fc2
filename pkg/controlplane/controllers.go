package controlplane

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/minik8s/minik8s/pkg/apiserver/authz"
	"github.com/minik8s/minik8s/pkg/component"
	"github.com/minik8s/minik8s/pkg/controllermanager"
	"github.com/minik8s/minik8s/pkg/pki"
	"github.com/minik8s/minik8s/pkg/scheduler"
)

// loopbackConfig is how the apiserver's own informers reach it: over
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

// componentConfig is how an in-process component reaches the apiserver:
// as user (one of authz's component users) with a client certificate
// the cluster CA issues at each start, authorized by that user's role.
func componentConfig(url string, b *pki.Bundle, user, userAgent string) (*rest.Config, error) {
	certPEM, keyPEM, err := b.IssueClientCert(user, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("credential of %s: %w", user, err)
	}
	return &rest.Config{
		Host:            url,
		TLSClientConfig: rest.TLSClientConfig{CAData: b.CAPEM, CertData: certPEM, KeyData: keyPEM},
		QPS:             100, Burst: 200,
		UserAgent: userAgent,
	}, nil
}

// controllerParts are the scheduler and the controller manager, each
// leader-elected, reaching the apiserver of api once it serves.
// cfg.DisableControllers names controller-manager controllers or
// "scheduler".
func controllerParts(cfg Config, api *apiserverPart) ([]component.Part, error) {
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
		ClusterCIDR: cfg.ClusterCIDR, Disable: disable,
		LeaderElection: true, Options: cfg.Controllers, Logger: cfg.Logger,
	}
	// The apiserver's address is known once it serves; the names are
	// checked now.
	check := cm
	check.REST = &rest.Config{}
	if err := check.Validate(); err != nil {
		return nil, fmt.Errorf("%w (or scheduler)", err)
	}
	var parts []component.Part
	if runScheduler {
		parts = append(parts, component.Func("scheduler", func(ctx context.Context) error {
			// Each pod costs the scheduler a binding and an event: it
			// gets its own, faster client.
			sc, err := componentConfig(api.cp.URL, api.cp.Bundle, authz.UserScheduler, "minik8s-scheduler")
			if err != nil {
				return err
			}
			sc.QPS, sc.Burst = 500, 1000
			client, err := kubernetes.NewForConfig(sc)
			if err != nil {
				return fmt.Errorf("client: %w", err)
			}
			sched, err := scheduler.New(scheduler.Config{Client: client, Logger: cfg.Logger,
				LeaderElection: scheduler.LeaderElectionConfig{Enabled: true}})
			if err != nil {
				return err
			}
			return sched.Start(ctx)
		}))
	}
	return append(parts, component.Func("controller-manager", func(ctx context.Context) error {
		cm := cm
		rc, err := componentConfig(api.cp.URL, api.cp.Bundle, authz.UserControllerManager, "minik8s-controller-manager")
		if err != nil {
			return err
		}
		cm.REST, cm.CA, cm.ServiceAccountCredentials = rc, api.cp.Bundle, true
		return controllermanager.Run(ctx, cm)
	})), nil
}
