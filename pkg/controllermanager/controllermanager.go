// Package controllermanager runs the cluster's controllers as one
// leader-elected component, as kube-controller-manager does: the table
// below names each controller and how to build it, Run builds the enabled
// ones on a shared informer factory each time this process holds the
// "kube-controller-manager" Lease, and stops them when it loses it.
//
// It owns the table and the term of leadership; each controller owns its
// own reconcile loop (pkg/controller/...).
package controllermanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/minik8s/minik8s/pkg/controller/certificates"
	"github.com/minik8s/minik8s/pkg/controller/cronjob"
	"github.com/minik8s/minik8s/pkg/controller/deployment"
	"github.com/minik8s/minik8s/pkg/controller/endpoints"
	"github.com/minik8s/minik8s/pkg/controller/endpointslice"
	"github.com/minik8s/minik8s/pkg/controller/garbagecollector"
	"github.com/minik8s/minik8s/pkg/controller/job"
	"github.com/minik8s/minik8s/pkg/controller/namespace"
	"github.com/minik8s/minik8s/pkg/controller/nodeipam"
	"github.com/minik8s/minik8s/pkg/controller/nodelifecycle"
	"github.com/minik8s/minik8s/pkg/controller/podautoscaler"
	"github.com/minik8s/minik8s/pkg/controller/replicaset"
	"github.com/minik8s/minik8s/pkg/controller/ttlafterfinished"
	"github.com/minik8s/minik8s/pkg/lease"
)

// LeaseName is the Lease in kube-system that the controller managers of a
// cluster share; only its holder runs controllers.
const LeaseName = "kube-controller-manager"

// Config is what Run needs. REST is required.
type Config struct {
	// REST reaches the apiserver with the controllers' credentials.
	REST *rest.Config
	// CA signs approved node certificates; nil disables csrsigning.
	CA certificates.CA
	// ClusterCIDR is carved into nodes' pod CIDRs (nodeipam).
	ClusterCIDR string
	// Disable names controllers not to run (Names lists them).
	Disable []string
	// LeaderElection off runs the controllers at once, without a Lease.
	LeaderElection bool
	// Lease timings (lease package defaults when zero).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Options
	Logger *slog.Logger
}

// Options tune controllers; zero values are Kubernetes' defaults. Tests
// shorten them rather than change the algorithms.
type Options struct {
	// HPASyncPeriod is how often each HorizontalPodAutoscaler is evaluated
	// (default 15s).
	HPASyncPeriod time.Duration
	// NodeMonitorGracePeriod is how long a node may go without renewing its
	// Lease before it is NotReady (default 40s).
	NodeMonitorGracePeriod time.Duration
}

// buildContext is what a controller's constructor may use: one client and
// one informer factory shared by all of a term's controllers.
type buildContext struct {
	cfg      *Config
	rest     *rest.Config
	client   kubernetes.Interface
	dynamic  dynamic.Interface
	metadata metadata.Interface
	factory  informers.SharedInformerFactory
	log      *slog.Logger
}

// A controller's start function runs it until ctx ends.
type startFunc func(ctx context.Context) error

// controllers is the table of built-in controllers, in start order.
var controllers = []struct {
	name  string
	build func(*buildContext) (startFunc, error)
}{
	{"namespace", func(b *buildContext) (startFunc, error) {
		return namespace.New(b.client, b.dynamic, b.factory, b.log).Start, nil
	}},
	{"nodeipam", func(b *buildContext) (startFunc, error) {
		c, err := nodeipam.New(b.client, b.factory, nodeipam.Config{ClusterCIDR: b.cfg.ClusterCIDR, Logger: b.log})
		return startOf(c, err)
	}},
	{"csrapproving", func(b *buildContext) (startFunc, error) {
		c, err := certificates.NewApprover(b.client, b.factory, certificates.Config{Logger: b.log})
		return startOf(c, err)
	}},
	{"csrsigning", func(b *buildContext) (startFunc, error) {
		if b.cfg.CA == nil {
			return nil, nil
		}
		c, err := certificates.NewSigner(b.client, b.factory, b.cfg.CA, certificates.SignerConfig{Config: certificates.Config{Logger: b.log}})
		return startOf(c, err)
	}},
	{"replicaset", func(b *buildContext) (startFunc, error) {
		cfg := replicaset.DefaultConfig()
		cfg.Logger = b.log
		return startOf(replicaset.New(b.client, b.factory, cfg))
	}},
	{"deployment", func(b *buildContext) (startFunc, error) {
		cfg := deployment.DefaultConfig()
		cfg.Logger = b.log
		return startOf(deployment.New(b.client, b.factory, cfg))
	}},
	{"endpoint", func(b *buildContext) (startFunc, error) {
		return startOf(endpoints.New(b.client, b.factory, endpoints.Config{Logger: b.log}))
	}},
	{"endpointslice", func(b *buildContext) (startFunc, error) {
		return startOf(endpointslice.New(b.client, b.factory, endpointslice.Config{Logger: b.log}))
	}},
	{"job", func(b *buildContext) (startFunc, error) {
		return startOf(job.New(b.client, b.factory, job.Config{Logger: b.log}))
	}},
	{"cronjob", func(b *buildContext) (startFunc, error) {
		return startOf(cronjob.New(b.client, b.factory, cronjob.Config{Logger: b.log}))
	}},
	{"ttl-after-finished", func(b *buildContext) (startFunc, error) {
		return startOf(ttlafterfinished.New(b.client, b.factory, ttlafterfinished.Config{Logger: b.log}))
	}},
	{"garbagecollector", func(b *buildContext) (startFunc, error) {
		c, err := garbagecollector.New(b.client, b.metadata, garbagecollector.Config{Logger: b.log})
		return startOf(c, err)
	}},
	{"nodelifecycle", func(b *buildContext) (startFunc, error) {
		c, err := nodelifecycle.New(b.client, b.factory, nodelifecycle.Config{
			NodeMonitorGracePeriod: b.cfg.NodeMonitorGracePeriod, Logger: b.log,
		})
		return startOf(c, err)
	}},
	{"horizontalpodautoscaling", func(b *buildContext) (startFunc, error) {
		metrics, err := metricsclient.NewForConfig(b.rest)
		if err != nil {
			return nil, err
		}
		c, err := podautoscaler.New(b.client, b.factory, podautoscaler.Config{
			Metrics: podautoscaler.NewMetricsSource(metrics), SyncPeriod: b.cfg.HPASyncPeriod, Logger: b.log,
		})
		return startOf(c, err)
	}},
}

func startOf[C interface{ Start(context.Context) error }](c C, err error) (startFunc, error) {
	if err != nil {
		return nil, err
	}
	return c.Start, nil
}

// Names lists the built-in controllers, in start order.
func Names() []string {
	out := make([]string, len(controllers))
	for i, c := range controllers {
		out[i] = c.name
	}
	return out
}

// Validate checks the names in cfg.Disable.
func (c *Config) Validate() error {
	if c.REST == nil {
		return errors.New("controller manager: a REST config is required")
	}
	for _, name := range c.Disable {
		if !slices.Contains(Names(), name) {
			return fmt.Errorf("unknown controller %q (known: %s)", name, strings.Join(Names(), ", "))
		}
	}
	return nil
}

// Run runs the enabled controllers until ctx ends: with leader election,
// during each term this process holds the lease.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	rc := rest.CopyConfig(cfg.REST)
	if rc.UserAgent == "" {
		rc.UserAgent = "minik8s-controller-manager"
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("controller manager client: %w", err)
	}
	if !cfg.LeaderElection {
		return runTerm(ctx, &cfg, rc, client)
	}
	var termErr error
	err = lease.Campaign(ctx, lease.Config{
		Client: client, Name: LeaseName,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		Logger: cfg.Logger.With("component", "controller-manager"),
	}, func(lctx context.Context) {
		if err := runTerm(lctx, &cfg, rc, client); err != nil {
			cfg.Logger.Error("controller manager term ended", "err", err)
			termErr = err
		}
	})
	if err != nil {
		return err
	}
	return termErr
}

// runTerm builds the enabled controllers on a fresh informer factory and
// runs them until ctx ends; it returns once all have stopped.
func runTerm(ctx context.Context, cfg *Config, rc *rest.Config, client kubernetes.Interface) error {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("controller manager client: %w", err)
	}
	md, err := metadata.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("controller manager client: %w", err)
	}
	b := &buildContext{cfg: cfg, rest: rc, client: client, dynamic: dyn, metadata: md,
		factory: informers.NewSharedInformerFactory(client, 0), log: cfg.Logger}
	starts := map[string]startFunc{}
	for _, c := range controllers {
		if slices.Contains(cfg.Disable, c.name) {
			continue
		}
		start, err := c.build(b)
		if err != nil {
			return fmt.Errorf("controller %s: %w", c.name, err)
		}
		if start != nil {
			starts[c.name] = start
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.factory.Start(ctx.Done())
	defer b.factory.Shutdown()
	var wg sync.WaitGroup
	for name, start := range starts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := start(ctx); err != nil && ctx.Err() == nil {
				cfg.Logger.Error("controller stopped", "controller", name, "err", err)
			}
		}()
	}
	wg.Wait()
	return nil
}
