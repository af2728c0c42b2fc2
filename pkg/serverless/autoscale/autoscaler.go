package autoscale

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// FunctionLister lists the Functions (from an informer's cache).
type FunctionLister interface {
	List() []*minik8sv1.Function
}

// StatsSource is where the autoscaler observes the requests of each
// function: *router.Router implements it.
type StatsSource interface {
	// Activity is the function's requests in flight now and when one
	// last arrived or finished (zero when none has been seen).
	Activity(key types.NamespacedName) (inFlight int, lastActive time.Time)
	// AverageConcurrency is the function's time-weighted average of
	// requests in flight over the window ending now.
	AverageConcurrency(key types.NamespacedName, window time.Duration) float64
}

// Config is what an Autoscaler is built from.
type Config struct {
	// Client reads and scales the functions' Deployments.
	Client kubernetes.Interface
	// Functions are the functions to scale.
	Functions FunctionLister
	// Stats is the traffic they get.
	Stats StatsSource
	// Tick is how often every function is decided (default 2s).
	Tick time.Duration
	// StableWindow is the window of the stable concurrency and the
	// shortest panic (default 60s); PanicWindow that of the panic
	// concurrency (default a tenth of StableWindow).
	StableWindow, PanicWindow time.Duration
	// Clock times the ticks and the decisions (default the real clock).
	Clock clock.WithTicker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

const (
	defaultTick         = 2 * time.Second
	defaultStableWindow = 60 * time.Second
)

// Autoscaler scales the functions' Deployments; see the package doc.
type Autoscaler struct {
	cfg         Config
	log         *slog.Logger
	factory     informers.SharedInformerFactory
	deployments appslisters.DeploymentLister
	synced      cache.InformerSynced
	pokes       workqueue.TypedRateLimitingInterface[types.NamespacedName]

	mu    sync.Mutex
	state map[types.NamespacedName]*fnState
}

// fnState is what the autoscaler remembers of a function between ticks.
type fnState struct {
	// seen is when the autoscaler first saw the function: it counts as
	// activity, so a function the router has not seen since it started
	// gets its full grace.
	seen time.Time
	// poked is when the router last asked for an instance.
	poked      time.Time
	panickedAt time.Time
}

// New validates cfg, fills its defaults and builds an Autoscaler; Start
// runs it.
func New(cfg Config) (*Autoscaler, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("autoscale: Config.Client is required")
	case cfg.Functions == nil:
		return nil, errors.New("autoscale: Config.Functions is required")
	case cfg.Stats == nil:
		return nil, errors.New("autoscale: Config.Stats is required")
	}
	if cfg.Tick <= 0 {
		cfg.Tick = defaultTick
	}
	if cfg.StableWindow <= 0 {
		cfg.StableWindow = defaultStableWindow
	}
	if cfg.PanicWindow <= 0 {
		cfg.PanicWindow = cfg.StableWindow / 10
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &Autoscaler{
		cfg: cfg,
		log: cfg.Logger.With("component", "function-autoscaler"),
		factory: informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = fnmeta.FunctionLabel })),
		pokes: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "function-pokes", Clock: cfg.Clock}),
		state: map[types.NamespacedName]*fnState{},
	}
	inf := a.factory.Apps().V1().Deployments()
	a.deployments = inf.Lister()
	a.synced = inf.Informer().HasSynced
	return a, nil
}

// Poke asks for an instance of the function now: a Deployment at 0
// replicas is set to 1 without waiting for the tick. It does not block.
func (a *Autoscaler) Poke(namespace, name string) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	a.mu.Lock()
	a.stateLocked(key, a.cfg.Clock.Now()).poked = a.cfg.Clock.Now()
	a.mu.Unlock()
	a.pokes.Add(key)
}

// Start runs the Deployment informer, scales from zero on pokes and
// decides every function each tick, until ctx ends.
func (a *Autoscaler) Start(ctx context.Context) error {
	defer a.pokes.ShutDown()
	a.factory.Start(ctx.Done())
	defer a.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), a.synced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("autoscale: deployment cache did not sync")
	}
	a.log.Info("scaling functions", "tick", a.cfg.Tick, "stableWindow", a.cfg.StableWindow, "panicWindow", a.cfg.PanicWindow)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for a.processPoke(ctx) {
		}
	}()
	ticker := a.cfg.Clock.NewTicker(a.cfg.Tick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			a.pokes.ShutDown()
			return nil
		case <-ticker.C():
			a.tick(ctx)
		}
	}
}

func (a *Autoscaler) processPoke(ctx context.Context) bool {
	key, shutdown := a.pokes.Get()
	if shutdown {
		return false
	}
	defer a.pokes.Done(key)
	if err := a.scaleFromZero(ctx, key); err != nil {
		if ctx.Err() != nil {
			return false
		}
		a.log.Info("scale from zero failed; retrying", "function", key.String(), "err", err)
		a.pokes.AddRateLimited(key)
		return true
	}
	a.pokes.Forget(key)
	return true
}

// scaleFromZero sets the function's Deployment to 1 replica when it has 0.
func (a *Autoscaler) scaleFromZero(ctx context.Context, key types.NamespacedName) error {
	deployments := a.cfg.Client.AppsV1().Deployments(key.Namespace)
	name := fnmeta.DeploymentName(key.Name)
	sc, err := deployments.GetScale(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		a.log.Debug("poked function has no deployment yet", "function", key.String())
		return nil
	}
	if err != nil {
		return fmt.Errorf("get scale of deployment %s/%s: %w", key.Namespace, name, err)
	}
	if sc.Spec.Replicas > 0 {
		return nil
	}
	sc.Spec.Replicas = 1
	if _, err := deployments.UpdateScale(ctx, name, sc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("scale deployment %s/%s from zero: %w", key.Namespace, name, err)
	}
	a.log.Info("scaled function from zero", "function", key.String(), "replicas", 1)
	return nil
}

// stateLocked is key's state, made (seen now) on first use.
func (a *Autoscaler) stateLocked(key types.NamespacedName, now time.Time) *fnState {
	st := a.state[key]
	if st == nil {
		st = &fnState{seen: now}
		a.state[key] = st
	}
	return st
}

// tick decides every function once and writes the replicas that change.
func (a *Autoscaler) tick(ctx context.Context) {
	now := a.cfg.Clock.Now()
	listed := map[types.NamespacedName]bool{}
	for _, fn := range a.cfg.Functions.List() {
		key := types.NamespacedName{Namespace: fn.Namespace, Name: fn.Name}
		listed[key] = true
		if fn.DeletionTimestamp != nil {
			continue
		}
		if err := a.scale(ctx, now, key, fn); err != nil {
			a.log.Info("scaling function failed; retrying next tick", "function", key.String(), "err", err)
		}
	}
	a.mu.Lock()
	for key := range a.state {
		if !listed[key] {
			delete(a.state, key)
		}
	}
	a.mu.Unlock()
}

// scale decides one function and writes its replicas when they change.
func (a *Autoscaler) scale(ctx context.Context, now time.Time, key types.NamespacedName, fn *minik8sv1.Function) error {
	name := fnmeta.DeploymentName(key.Name)
	d, err := a.deployments.Deployments(key.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // the function controller has not made it yet
	}
	if err != nil {
		return fmt.Errorf("get deployment %s/%s: %w", key.Namespace, name, err)
	}
	current := int32(1)
	if d.Spec.Replicas != nil {
		current = *d.Spec.Replicas
	}
	inFlight, lastActive := a.cfg.Stats.Activity(key)
	a.mu.Lock()
	st := a.stateLocked(key, now)
	lastActive = latest(lastActive, st.seen, st.poked)
	in := inputOf(fn)
	in.Now, in.Current, in.Ready = now, current, d.Status.ReadyReplicas
	in.InFlight, in.LastActive, in.PanickedAt = inFlight, lastActive, st.panickedAt
	in.StableWindow = a.cfg.StableWindow
	a.mu.Unlock()
	in.StableConcurrency = a.cfg.Stats.AverageConcurrency(key, a.cfg.StableWindow)
	in.PanicConcurrency = a.cfg.Stats.AverageConcurrency(key, a.cfg.PanicWindow)

	dec := Decide(in)
	a.mu.Lock()
	st.panickedAt = dec.PanickedAt
	a.mu.Unlock()
	log := a.log.With("function", key.String())
	log.Debug("decided", "current", current, "ready", in.Ready, "desired", dec.Desired,
		"stable", in.StableConcurrency, "panic", in.PanicConcurrency, "inFlight", inFlight,
		"panicking", dec.Panicking, "reason", dec.Reason)
	if dec.Desired == current {
		return nil
	}
	sc := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: name, ResourceVersion: d.ResourceVersion},
		Spec:       autoscalingv1.ScaleSpec{Replicas: dec.Desired},
	}
	if _, err := a.cfg.Client.AppsV1().Deployments(key.Namespace).UpdateScale(ctx, name, sc, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) {
			log.Debug("deployment changed meanwhile; deciding again next tick", "deployment", name)
			return nil
		}
		return fmt.Errorf("scale deployment %s/%s to %d: %w", key.Namespace, name, dec.Desired, err)
	}
	log.Info("scaled function", "from", current, "to", dec.Desired, "reason", dec.Reason,
		"stable", in.StableConcurrency, "panic", in.PanicConcurrency, "inFlight", inFlight)
	return nil
}

// inputOf is the function's bounds, target and grace, fnmeta's defaults
// where unset.
func inputOf(fn *minik8sv1.Function) Input {
	s := fn.Spec.Scale
	in := Input{Min: fnmeta.DefaultMinScale, Max: fnmeta.DefaultMaxScale, Target: fnmeta.DefaultTarget}
	in.ScaleToZeroAfter, _ = time.ParseDuration(fnmeta.DefaultScaleToZeroAfter)
	if s.MinScale != nil {
		in.Min = *s.MinScale
	}
	if s.MaxScale != nil {
		in.Max = *s.MaxScale
	}
	if s.Target != nil && *s.Target > 0 {
		in.Target = *s.Target
	}
	if s.ScaleToZeroAfter != nil {
		in.ScaleToZeroAfter = s.ScaleToZeroAfter.Duration
	}
	return in
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}
