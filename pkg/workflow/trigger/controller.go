package trigger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
	"github.com/minik8s/minik8s/pkg/workflow/invoke"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// Defaults of Config.
const (
	DefaultWorkers           = 2
	DefaultMaxInvocations    = 64
	DefaultInvocationTimeout = 5 * time.Minute
	DefaultURLBase           = "http://minik8s-gateway.kube-system"
)

// unknownKindRetry is how often a trigger on a kind discovery does not
// know looks it up again.
const unknownKindRetry = time.Minute

// syncingRetry is how soon an event trigger whose informer is still
// listing is looked at again.
const syncingRetry = 200 * time.Millisecond

// Config configures the controller; its clock, logger, Event recorder
// and queue come from the kit.Context.
type Config struct {
	// Dynamic reads and writes Triggers, WorkflowRuns, Workflows and
	// Functions, and watches the event sources' kinds (default kc.Dynamic).
	Dynamic dynamic.Interface
	// Invoker calls the functions that triggers target (required).
	Invoker invoke.Invoker
	// Mapper maps an event source's apiVersion and kind to a resource
	// (default: a deferred discovery mapper on kc.Client's discovery,
	// cached in memory).
	Mapper meta.RESTMapper
	// URLBase is the gateway's address that status.url of an HTTP
	// trigger starts with (default http://minik8s-gateway.kube-system).
	URLBase string
	// Workers is how many Triggers are synced at once, and how many event
	// firings are handled at once (default 2).
	Workers int
	// MaxInvocations bounds the function calls in flight (default 64);
	// a firing beyond it waits, with back-off, for a free slot.
	MaxInvocations int
	// InvocationTimeout bounds one function call (default 5m).
	InvocationTimeout time.Duration
}

// Controller fires schedule and event Triggers and keeps every
// Trigger's status (HTTP triggers are fired by the HTTPHandler).
type Controller struct {
	kit.Base
	cfg Config
	dyn dynamic.Interface

	triggers, runs, functions, workflows cache.SharedIndexInformer
	// fires handles the firings of event triggers, one item per event.
	fires   *loop.Loop[*eventFiring]
	sources *sources
	// slots bounds the function calls in flight.
	slots chan struct{}
	calls sync.WaitGroup

	mu sync.Mutex
	// inflight are the function calls in flight by trigger key, each
	// with the cancel of its context (for Replace).
	inflight map[string]map[*call]struct{}
	// counted are the finished runs this controller has counted whose
	// annotation its cache may not show yet.
	counted map[types.UID]bool
	// scheduled is the latest schedule time handled per Trigger key,
	// which the cached status may not show yet.
	scheduled map[string]scheduledAt
}

// call is a function call in flight.
type call struct{ cancel context.CancelFunc }

// Informer indexes.
const (
	byTarget  = "target"  // Triggers by "function/<ns>/<name>" or "workflow/<ns>/<name>"
	byTrigger = "trigger" // WorkflowRuns by "<ns>/<trigger>"
)

// New validates cfg, fills its defaults and wires the controller to its
// informers. Nothing runs until Start.
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	if cfg.Dynamic == nil {
		cfg.Dynamic = kc.Dynamic
	}
	if cfg.Dynamic == nil || cfg.Invoker == nil {
		return nil, errors.New("trigger controller: a dynamic client and an invoker are required")
	}
	if cfg.Mapper == nil {
		if kc.Client == nil {
			return nil, errors.New("trigger controller: a REST mapper or a client for discovery is required")
		}
		cfg.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kc.Client.Discovery()))
	}
	if cfg.URLBase == "" {
		cfg.URLBase = DefaultURLBase
	}
	workers, err := kit.Workers("trigger", cfg.Workers, DefaultWorkers)
	if err != nil {
		return nil, err
	}
	if cfg.MaxInvocations <= 0 {
		cfg.MaxInvocations = DefaultMaxInvocations
	}
	if cfg.InvocationTimeout <= 0 {
		cfg.InvocationTimeout = DefaultInvocationTimeout
	}
	c := &Controller{
		Base:      kc.NewBase("trigger", "trigger", workers, "trigger-controller"),
		cfg:       cfg,
		dyn:       cfg.Dynamic,
		slots:     make(chan struct{}, cfg.MaxInvocations),
		inflight:  map[string]map[*call]struct{}{},
		counted:   map[types.UID]bool{},
		scheduled: map[string]scheduledAt{},
	}
	c.sources = newSources(cfg.Dynamic, c.onEvent, c.Log)
	c.Loop.ReconcileAfter = c.Reconcile
	c.fires = &loop.Loop[*eventFiring]{
		Queue:     loop.NewQueue[*eventFiring]("trigger-events", kc.Clock),
		Workers:   workers,
		Logger:    c.Log,
		KeyAttr:   "firing",
		Reconcile: c.fireEvent,
	}
	c.Loop.Also = append(c.Loop.Also, c.fires.Work)

	c.triggers = dynamicinformer.NewFilteredDynamicInformer(cfg.Dynamic, wfmeta.TriggerResource, metav1.NamespaceAll, 0,
		cache.Indexers{byTarget: triggerTargetIndex}, nil).Informer()
	c.runs = dynamicinformer.NewFilteredDynamicInformer(cfg.Dynamic, wfmeta.WorkflowRunResource, metav1.NamespaceAll, 0,
		cache.Indexers{byTrigger: runTriggerIndex}, func(o *metav1.ListOptions) { o.LabelSelector = wfmeta.TriggerLabel }).Informer()
	c.functions = dynamicinformer.NewFilteredDynamicInformer(cfg.Dynamic, fnmeta.Resource, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	c.workflows = dynamicinformer.NewFilteredDynamicInformer(cfg.Dynamic, wfmeta.WorkflowResource, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()

	trHandler := loop.KeyHandler(c.Queue)
	runHandler := cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueRunTrigger,
		UpdateFunc: func(_, cur any) { c.enqueueRunTrigger(cur) },
		DeleteFunc: func(obj any) {
			if m, err := meta.Accessor(unwrap(obj)); err == nil {
				c.mu.Lock()
				delete(c.counted, m.GetUID())
				c.mu.Unlock()
			}
			c.enqueueRunTrigger(obj)
		},
	}
	return c, errors.Join(
		c.Loop.Watch(c.triggers, trHandler),
		c.Loop.Watch(c.runs, runHandler),
		c.Loop.Watch(c.functions, c.targetHandler("function")),
		c.Loop.Watch(c.workflows, c.targetHandler("workflow")),
	)
}

// Start runs the informers, the workers and the event sources until
// ctx ends, then waits for the function calls in flight (their contexts
// end with ctx).
func (c *Controller) Start(ctx context.Context) error {
	for _, inf := range []cache.SharedIndexInformer{c.triggers, c.runs, c.functions, c.workflows} {
		go inf.RunWithContext(ctx)
	}
	defer c.calls.Wait()
	defer c.sources.stopAll()
	defer c.fires.Queue.ShutDown()
	return c.Base.Start(ctx)
}

func unwrap(obj any) any {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return tomb.Obj
	}
	return obj
}

func triggerTargetIndex(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	if fn, _, _ := unstructured.NestedString(u.Object, "spec", "target", "function"); fn != "" {
		return []string{"function/" + u.GetNamespace() + "/" + fn}, nil
	}
	if wf, _, _ := unstructured.NestedString(u.Object, "spec", "target", "workflow"); wf != "" {
		return []string{"workflow/" + u.GetNamespace() + "/" + wf}, nil
	}
	return nil, nil
}

func runTriggerIndex(obj any) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	if t := m.GetLabels()[wfmeta.TriggerLabel]; t != "" {
		return []string{m.GetNamespace() + "/" + t}, nil
	}
	return nil, nil
}

// enqueueRunTrigger queues the Trigger that started a run.
func (c *Controller) enqueueRunTrigger(obj any) {
	m, err := meta.Accessor(unwrap(obj))
	if err != nil {
		return
	}
	if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == triggerKind.Kind {
		c.Queue.Add(m.GetNamespace() + "/" + ref.Name)
	}
}

// targetHandler queues the Triggers that target a Function or Workflow
// that came or went.
func (c *Controller) targetHandler(kind string) cache.ResourceEventHandlerFuncs {
	enqueue := func(obj any) {
		m, err := meta.Accessor(unwrap(obj))
		if err != nil {
			return
		}
		objs, _ := c.triggers.GetIndexer().ByIndex(byTarget, kind+"/"+m.GetNamespace()+"/"+m.GetName())
		for _, o := range objs {
			loop.Enqueue(c.Queue, o)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: enqueue, DeleteFunc: enqueue}
}

// getTrigger reads a Trigger from the cache.
func (c *Controller) getTrigger(key string) (*minik8sv1.Trigger, error) {
	obj, ok, err := c.triggers.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return nil, err
	}
	return fromUnstructured[minik8sv1.Trigger](obj)
}

// targetExists says whether tr's Function or Workflow is in the cache,
// and names it.
func (c *Controller) targetExists(tr *minik8sv1.Trigger) (bool, string) {
	inf, kind, name := c.functions, "function", tr.Spec.Target.Function
	if tr.Spec.Target.Workflow != "" {
		inf, kind, name = c.workflows, "workflow", tr.Spec.Target.Workflow
	}
	if name == "" {
		return false, "no target"
	}
	_, ok, _ := inf.GetIndexer().GetByKey(tr.Namespace + "/" + name)
	return ok, kind + " " + name
}

// mapKind is the resource and scope of an event source's kind.
func (c *Controller) mapKind(src *minik8sv1.EventSource) (schema.GroupVersionResource, bool, error) {
	gv, err := schema.ParseGroupVersion(src.APIVersion)
	if err != nil {
		return schema.GroupVersionResource{}, false, &meta.NoKindMatchError{GroupKind: schema.GroupKind{Kind: src.Kind}}
	}
	m, err := c.cfg.Mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: src.Kind}, gv.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("map %s %s: %w", src.APIVersion, src.Kind, err)
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}
