// Package serverless runs the functions add-on (docs/design/0017-functions.md):
// the function controller (pkg/serverless/function) with its image
// builder (pkg/serverless/build on pkg/serverless/pyruntime), the router
// (pkg/serverless/router), published as kube-system/minik8s-functions
// for the gateway, pods and the apiserver's Service proxy, and the
// autoscaler (pkg/serverless/autoscale), in one process so the router's
// counts reach the autoscaler directly. The registry it pushes to is
// pkg/serverless/registry, run beside it. The router's listener also serves
// the workflows' HTTP entry points (pkg/workflow/trigger).
package serverless

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/hostservice"
	"github.com/minik8s/minik8s/pkg/serverless/autoscale"
	"github.com/minik8s/minik8s/pkg/serverless/build"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
	"github.com/minik8s/minik8s/pkg/serverless/function"
	"github.com/minik8s/minik8s/pkg/serverless/pyruntime"
	"github.com/minik8s/minik8s/pkg/serverless/registry"
	"github.com/minik8s/minik8s/pkg/serverless/router"
	"github.com/minik8s/minik8s/pkg/workflow/invoke"
	"github.com/minik8s/minik8s/pkg/workflow/trigger"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// DefaultRouterPort is where the router listens on its host.
const DefaultRouterPort = 8081

// Config describes the functions add-on.
type Config struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// Registry is the registry's host:port as the builder pushes to it
	// and the nodes pull from it (plain HTTP).
	Registry string
	// RegistryDir, when set, is the registry's directory on this host
	// (pkg/serverless/registry Config.Dir): a deleted function's
	// repository is removed from it, so the catalog forgets it too.
	RegistryDir string
	// RouterPort is the router's port (default DefaultRouterPort), on
	// every address of NetNS (or of this host).
	RouterPort int
	// NetNS is the node network namespace the router listens and reaches
	// pods in; empty: ours.
	NetNS string
	// Address is where pods (and the apiserver) reach the router; unset:
	// the pod-bridge gateway of NodeName.
	Address  netip.Addr
	NodeName string
	// URLBase starts every function's status.url (default
	// http://minik8s-gateway.kube-system).
	URLBase string
	// Tick and StableWindow tune the autoscaler (defaults 2s and 60s).
	Tick, StableWindow time.Duration
	Logger             *slog.Logger
	// Ready, when set, is called once the router serves.
	Ready func()
}

// Run runs the add-on until ctx ends or a part of it fails.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Client == nil || cfg.Dynamic == nil || cfg.Registry == "" {
		return errors.New("functions: clients and a registry address are required")
	}
	if cfg.RouterPort == 0 {
		cfg.RouterPort = DefaultRouterPort
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	builder, err := build.New(build.Config{Registry: cfg.Registry, Logger: log})
	if err != nil {
		return err
	}
	fnInformer := function.NewFunctionInformer(cfg.Dynamic)
	functions := function.Lister{Indexer: fnInformer.GetIndexer()}
	kc := kit.NewContext(cfg.Client)
	kc.Dynamic, kc.Logger = cfg.Dynamic, log
	controller, err := function.New(kc, function.Config{Dynamic: cfg.Dynamic, Functions: fnInformer,
		Builder: imageBuilder{b: builder, registryDir: cfg.RegistryDir}, URLBase: cfg.URLBase})
	if err != nil {
		return err
	}
	// The workflows' HTTP entry points (/trigger/, /workflow/) share the
	// router's listener; a trigger's function is called through the
	// router's Service like any other caller.
	workflowHTTP, err := trigger.NewHTTPHandler(trigger.HTTPConfig{Dynamic: cfg.Dynamic,
		Invoker: &invoke.Router{Client: cfg.Client}, Recorder: kc.EventRecorder("trigger-http"), Logger: log})
	if err != nil {
		return err
	}
	// The router and the autoscaler point at each other: the router pokes
	// the autoscaler, the autoscaler reads the router's counts.
	var scaler pokeProxy
	rt, err := router.New(router.Config{Client: cfg.Client, Functions: functions, Scaler: &scaler,
		Address: net.JoinHostPort("", strconv.Itoa(cfg.RouterPort)), NetNS: cfg.NetNS, Logger: log,
		Handlers: map[string]http.Handler{wfmeta.WorkflowPathPrefix: workflowHTTP, wfmeta.TriggerPathPrefix: workflowHTTP}})
	if err != nil {
		return err
	}
	as, err := autoscale.New(autoscale.Config{Client: cfg.Client, Functions: functions, Stats: rt,
		Tick: cfg.Tick, StableWindow: cfg.StableWindow, Logger: log})
	if err != nil {
		return err
	}
	scaler.set(as)

	publish := func(ctx context.Context) error {
		select {
		case <-rt.Ready():
		case <-ctx.Done():
			return nil
		}
		if cfg.Ready != nil {
			cfg.Ready()
		}
		return hostservice.Publish(ctx, hostservice.PublishConfig{Client: cfg.Client, Address: cfg.Address, NodeName: cfg.NodeName,
			Logger: log, Service: hostservice.Service{
				Namespace: fnmeta.RouterNamespace, Name: fnmeta.RouterService, ManagedBy: "functions.minik8s.io",
				Labels: map[string]string{"app.kubernetes.io/name": "minik8s-functions"},
				// Prometheus' service-endpoints job scrapes the router's
				// /metrics (minik8s_function_*) at its port on the host.
				Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/path": "/metrics",
					"prometheus.io/port": strconv.Itoa(cfg.RouterPort)},
				Ports: []hostservice.Port{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: int32(cfg.RouterPort)}},
			}})
	}
	go fnInformer.Run(ctx.Done())
	return kit.Run(ctx, kc,
		kit.Part{Name: "function", Start: func(ctx context.Context) error {
			if !waitSynced(ctx, fnInformer.HasSynced) {
				return nil
			}
			return controller.Start(ctx)
		}},
		kit.Part{Name: "function router", Start: rt.Start},
		kit.Part{Name: "function autoscaler", Start: func(ctx context.Context) error {
			if !waitSynced(ctx, fnInformer.HasSynced) {
				return nil
			}
			return as.Start(ctx)
		}},
		kit.Part{Name: "function router service", Start: publish},
	)
}

func waitSynced(ctx context.Context, synced func() bool) bool {
	for !synced() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// pokeProxy hands the router's pokes to the autoscaler, built after it.
type pokeProxy struct {
	mu sync.Mutex
	as *autoscale.Autoscaler
}

func (p *pokeProxy) set(as *autoscale.Autoscaler) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.as = as
}

func (p *pokeProxy) Poke(namespace, name string) {
	p.mu.Lock()
	as := p.as
	p.mu.Unlock()
	if as != nil {
		as.Poke(namespace, name)
	}
}

// imageBuilder builds functions' images: the runtime's root filesystem,
// the code under /function and the runtime server under /runtime.
type imageBuilder struct {
	b           *build.Builder
	registryDir string
}

func (ib imageBuilder) Check(ctx context.Context, files map[string][]byte, handler string) error {
	err := pyruntime.Check(ctx, files, handler)
	var ce *pyruntime.CheckError
	if errors.As(err, &ce) {
		reason := ce.Reason
		if reason == pyruntime.ReasonSyntaxError {
			// Code that does not compile is a failed build; the message
			// names the SyntaxError.
			reason = "BuildFailed"
		}
		return &function.BuildError{Reason: reason, Message: ce.Message}
	}
	return err
}

func (ib imageBuilder) Build(ctx context.Context, r function.Revision) (string, error) {
	base, err := pyruntime.BaseTarball(r.Runtime)
	if err != nil {
		return "", &function.BuildError{Reason: "BuildFailed", Message: err.Error()}
	}
	files := pyruntime.ServerFiles()
	for p, b := range r.Files {
		files[pyruntime.FunctionDir[1:]+"/"+p] = b
	}
	return ib.b.Build(ctx, build.Image{
		Repository: fnmeta.Repository(r.Namespace, r.Name), Tag: "r" + strconv.FormatInt(r.Number, 10),
		BaseTarball: base, Files: files, Entrypoint: pyruntime.Entrypoint(), Env: pyruntime.Env(r.Handler, r.Timeout),
		WorkingDir: pyruntime.FunctionDir, ExposedPort: fnmeta.Port,
		Labels: map[string]string{fnmeta.FunctionLabel: r.Namespace + "." + r.Name, fnmeta.RevisionLabel: strconv.FormatInt(r.Number, 10)},
	})
}

func (ib imageBuilder) Delete(ctx context.Context, namespace, name string) error {
	repo := fnmeta.Repository(namespace, name)
	if err := ib.b.Delete(ctx, repo); err != nil {
		return fmt.Errorf("delete images: %w", err)
	}
	if ib.registryDir != "" {
		return registry.RemoveRepository(ib.registryDir, repo)
	}
	return nil
}
