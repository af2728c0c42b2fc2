// Package controllermanager runs the cluster's controllers as one
// leader-elected component, as kube-controller-manager does: the table
// below names each controller and how to build it, Run builds the enabled
// ones on one kit.Context (client, shared informer factory, event
// broadcaster) each time this process holds the "kube-controller-manager"
// Lease, and stops them when it loses it, or when one of them fails.
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
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/minik8s/minik8s/pkg/controller/certificates"
	"github.com/minik8s/minik8s/pkg/controller/clusterroleaggregation"
	"github.com/minik8s/minik8s/pkg/controller/cronjob"
	"github.com/minik8s/minik8s/pkg/controller/daemonset"
	"github.com/minik8s/minik8s/pkg/controller/deployment"
	"github.com/minik8s/minik8s/pkg/controller/disruption"
	"github.com/minik8s/minik8s/pkg/controller/endpoints"
	"github.com/minik8s/minik8s/pkg/controller/endpointslice"
	"github.com/minik8s/minik8s/pkg/controller/endpointslicemirroring"
	"github.com/minik8s/minik8s/pkg/controller/garbagecollector"
	"github.com/minik8s/minik8s/pkg/controller/job"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/namespace"
	"github.com/minik8s/minik8s/pkg/controller/nodeipam"
	"github.com/minik8s/minik8s/pkg/controller/nodelifecycle"
	"github.com/minik8s/minik8s/pkg/controller/podautoscaler"
	"github.com/minik8s/minik8s/pkg/controller/podgc"
	"github.com/minik8s/minik8s/pkg/controller/replicaset"
	"github.com/minik8s/minik8s/pkg/controller/replication"
	"github.com/minik8s/minik8s/pkg/controller/resourcequota"
	"github.com/minik8s/minik8s/pkg/controller/rootcacertpublisher"
	"github.com/minik8s/minik8s/pkg/controller/serviceaccount"
	"github.com/minik8s/minik8s/pkg/controller/statefulset"
	"github.com/minik8s/minik8s/pkg/controller/ttlafterfinished"
	"github.com/minik8s/minik8s/pkg/controller/volume/localpath"
	"github.com/minik8s/minik8s/pkg/controller/volume/persistentvolume"
	"github.com/minik8s/minik8s/pkg/controller/volume/protection"
	"github.com/minik8s/minik8s/pkg/lease"
	"github.com/minik8s/minik8s/pkg/workflow/engine"
	"github.com/minik8s/minik8s/pkg/workflow/invoke"
	"github.com/minik8s/minik8s/pkg/workflow/trigger"
)

// LeaseName is the Lease in kube-system that the controller managers of a
// cluster share; only its holder runs controllers.
const LeaseName = "kube-controller-manager"

// Config is what Run needs. REST is required.
type Config struct {
	// REST reaches the apiserver with the controller manager's
	// credential: its informers, Events and Lease, and, without
	// ServiceAccountCredentials, every controller's requests.
	REST *rest.Config
	// ServiceAccountCredentials runs each controller as its own service
	// account in kube-system (kube-controller-manager's
	// --use-service-account-credentials), authorized by the role
	// system:controller:<account>; REST's user then needs only what
	// Kubernetes' system:kube-controller-manager role holds.
	ServiceAccountCredentials bool
	// CA signs approved node certificates; nil disables csrsigning.
	CA certificates.CA
	// RootCA is the cluster CA (PEM) published in every namespace as the
	// kube-root-ca.crt ConfigMap; empty: REST's CA data, as
	// kube-controller-manager falls back to its kubeconfig's.
	RootCA []byte
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
	// PodGCQuarantine is how long a deleted node stays missing before its
	// pods are deleted (default 40s).
	PodGCQuarantine time.Duration
}

// A controller's start function runs it until ctx ends.
type startFunc func(ctx context.Context) error

// controllers is the table of built-in controllers, in start order. Each
// is built from the term's kit.Context (one client, informer factory and
// event broadcaster for all) and the manager's Config; account is its
// service account in kube-system, Kubernetes' name for it where it has one.
var controllers = []struct {
	name, account string
	build         func(*kit.Context, *Config) (startFunc, error)
}{
	{"namespace", "namespace-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(namespace.New(kc))
	}},
	{"nodeipam", "node-controller", func(kc *kit.Context, cfg *Config) (startFunc, error) {
		return startOf(nodeipam.New(kc, nodeipam.Config{ClusterCIDR: cfg.ClusterCIDR}))
	}},
	{"csrapproving", "certificate-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(certificates.NewApprover(kc, certificates.Config{}))
	}},
	{"csrsigning", "certificate-controller", func(kc *kit.Context, cfg *Config) (startFunc, error) {
		if cfg.CA == nil {
			return nil, nil
		}
		return startOf(certificates.NewSigner(kc, cfg.CA, certificates.SignerConfig{}))
	}},
	{"csrcleaner", "certificate-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(certificates.NewCleaner(kc, certificates.Config{}))
	}},
	{"replicaset", "replicaset-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(replicaset.New(kc, replicaset.DefaultConfig()))
	}},
	{"replicationcontroller", "replication-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(replication.New(kc, replicaset.DefaultConfig()))
	}},
	{"deployment", "deployment-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(deployment.New(kc, deployment.DefaultConfig()))
	}},
	{"daemonset", "daemon-set-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(daemonset.New(kc, daemonset.Config{}))
	}},
	{"statefulset", "statefulset-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(statefulset.New(kc, statefulset.Config{}))
	}},
	{"disruption", "disruption-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(disruption.New(kc, disruption.Config{}))
	}},
	{"endpoint", "endpoint-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(endpoints.New(kc, endpoints.Config{}))
	}},
	{"endpointslice", "endpointslice-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(endpointslice.New(kc, endpointslice.Config{}))
	}},
	{"endpointslicemirroring", "endpointslicemirroring-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(endpointslicemirroring.New(kc))
	}},
	{"job", "job-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(job.New(kc, job.Config{}))
	}},
	{"cronjob", "cronjob-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(cronjob.New(kc, cronjob.Config{}))
	}},
	{"ttl-after-finished", "ttl-after-finished-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(ttlafterfinished.New(kc, ttlafterfinished.Config{}))
	}},
	{"resourcequota", "resourcequota-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(resourcequota.New(kc, resourcequota.Config{}))
	}},
	{"garbagecollector", "generic-garbage-collector", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(garbagecollector.New(kc, garbagecollector.Config{}))
	}},
	{"clusterrole-aggregation", "clusterrole-aggregation-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(clusterroleaggregation.New(kc))
	}},
	{"serviceaccount", "service-account-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(serviceaccount.New(kc))
	}},
	{"root-ca-cert-publisher", "root-ca-cert-publisher", func(kc *kit.Context, cfg *Config) (startFunc, error) {
		ca := cfg.RootCA
		if len(ca) == 0 && kc.REST != nil {
			ca = kc.REST.CAData
		}
		if len(ca) == 0 {
			return nil, nil
		}
		return startOf(rootcacertpublisher.New(kc, ca))
	}},
	{"podgc", "pod-garbage-collector", func(kc *kit.Context, cfg *Config) (startFunc, error) {
		return startOf(podgc.New(kc, podgc.Config{Quarantine: cfg.PodGCQuarantine}))
	}},
	{"nodelifecycle", "node-controller", func(kc *kit.Context, cfg *Config) (startFunc, error) {
		return startOf(nodelifecycle.New(kc, nodelifecycle.Config{NodeMonitorGracePeriod: cfg.NodeMonitorGracePeriod}))
	}},
	{"persistentvolume-binder", "persistent-volume-binder", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(persistentvolume.New(kc, persistentvolume.Config{}))
	}},
	{"pv-protection", "pv-protection-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(protection.NewPV(kc))
	}},
	{"pvc-protection", "pvc-protection-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(protection.NewPVC(kc))
	}},
	{"local-path-provisioner", "local-path-provisioner", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(localpath.New(kc))
	}},
	{"workflow", "workflow-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(engine.NewWorkflowController(kc, nil, nil))
	}},
	{"workflowrun", "workflow-engine", func(kc *kit.Context, _ *Config) (startFunc, error) {
		// Every state a run waits in costs a status write: the engine
		// writes with a client of its own, at the scheduler's rate, so
		// busy workflows neither wait on nor starve the other controllers.
		cfg := engine.Config{}
		if kc.REST != nil {
			dyn, err := dynamic.NewForConfig(clientWithRate(kc.REST, "minik8s-workflow-engine", 500, 1000))
			if err != nil {
				return nil, err
			}
			cfg.Dynamic = dyn
		}
		return startOf(engine.NewRunController(kc, cfg))
	}},
	{"trigger", "trigger-controller", func(kc *kit.Context, _ *Config) (startFunc, error) {
		return startOf(trigger.New(kc, trigger.Config{Invoker: &invoke.Router{Client: kc.Client}}))
	}},
	{"horizontalpodautoscaling", "horizontal-pod-autoscaler", func(kc *kit.Context, cfg *Config) (startFunc, error) {
		metrics, err := metricsclient.NewForConfig(kc.REST)
		if err != nil {
			return nil, err
		}
		return startOf(podautoscaler.New(kc, podautoscaler.Config{
			Metrics: podautoscaler.NewMetricsSource(metrics), SyncPeriod: cfg.HPASyncPeriod,
		}))
	}},
}

// clientWithRate is rc with its own rate limits and user agent.
func clientWithRate(rc *rest.Config, userAgent string, qps float32, burst int) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst, rc.UserAgent = qps, burst, userAgent
	return rc
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
	// A term that ends with a controller's error ends the campaign too
	// (releasing the lease for another instance), and Run returns it.
	campaignCtx, stopCampaign := context.WithCancel(ctx)
	defer stopCampaign()
	var termErr error
	err = lease.Campaign(campaignCtx, lease.Config{
		Client: client, Name: LeaseName,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		Logger: cfg.Logger.With("component", "controller-manager"),
	}, func(lctx context.Context) {
		if err := runTerm(lctx, &cfg, rc, client); err != nil {
			cfg.Logger.Error("controller manager term ended", "err", err)
			termErr = err
			stopCampaign()
		}
	})
	if err != nil {
		return err
	}
	return termErr
}

// runTerm builds the enabled controllers on a fresh kit.Context (a new
// informer factory and event broadcaster) and runs them until ctx ends;
// it returns once all have stopped. When one controller fails, the others
// are stopped and its error is returned.
func runTerm(ctx context.Context, cfg *Config, rc *rest.Config, client kubernetes.Interface) error {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("controller manager client: %w", err)
	}
	md, err := metadata.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("controller manager client: %w", err)
	}
	kc := kit.NewContext(client)
	kc.Dynamic, kc.Metadata, kc.REST, kc.Logger = dyn, md, rc, cfg.Logger
	var parts []kit.Part
	for _, c := range controllers {
		if slices.Contains(cfg.Disable, c.name) {
			continue
		}
		ckc := kc
		if cfg.ServiceAccountCredentials {
			if ckc, err = asServiceAccount(kc, client, c.account); err != nil {
				return fmt.Errorf("controller %s: %w", c.name, err)
			}
		}
		start, err := c.build(ckc, cfg)
		if err != nil {
			return fmt.Errorf("controller %s: %w", c.name, err)
		}
		if start != nil {
			parts = append(parts, kit.Part{Name: c.name, Start: start})
		}
	}
	return kit.Run(ctx, kc, parts...)
}
