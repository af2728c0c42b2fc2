package podautoscaler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// Defaults, as in Kubernetes' kube-controller-manager flags
// (--horizontal-pod-autoscaler-*).
const (
	DefaultSyncPeriod              = 15 * time.Second
	DefaultTolerance               = 0.1
	DefaultCPUInitializationPeriod = 5 * time.Minute
	DefaultInitialReadinessDelay   = 30 * time.Second
	DefaultWorkers                 = 5
)

// Event reasons (and condition reasons, where they are the same), as
// Kubernetes' HPA controller uses them.
const (
	ReasonSuccessfulRescale                = "SuccessfulRescale"
	ReasonFailedRescale                    = "FailedRescale"
	ReasonFailedGetScale                   = "FailedGetScale"
	ReasonFailedComputeMetricsReplicas     = "FailedComputeMetricsReplicas"
	ReasonFailedGetResourceMetric          = "FailedGetResourceMetric"
	ReasonFailedGetContainerResourceMetric = "FailedGetContainerResourceMetric"
	ReasonInvalidSelector                  = "InvalidSelector"
	ReasonSelectorRequired                 = "SelectorRequired"
)

// Config configures the controller.
type Config struct {
	// Metrics reads the pods' usage (required): NewMetricsSource reads
	// the metrics.k8s.io API.
	Metrics MetricsSource
	// Scales and Mapper reach the targets' /scale subresource. When nil,
	// New builds them from the client: a RESTMapper from its (cached)
	// discovery, and a scale client on its REST client.
	Scales scale.ScalesGetter
	Mapper meta.RESTMapper

	// SyncPeriod is how often each HPA is evaluated (default 15s); a
	// change to its spec is evaluated at once.
	SyncPeriod time.Duration
	// Tolerance is how far the usage ratio may be from 1 without a change
	// in replicas (default 0.1); an HPA's behavior may set its own per
	// direction.
	Tolerance float64
	// DownscaleStabilization is the scale-down stabilization window of an
	// HPA whose behavior sets none (default 5m).
	DownscaleStabilization time.Duration
	// CPUInitializationPeriod (default 5m) and InitialReadinessDelay
	// (default 30s) say when a fresh pod's cpu sample counts (see doc.go).
	CPUInitializationPeriod time.Duration
	InitialReadinessDelay   time.Duration
	// Workers is how many HPAs are evaluated at once (default 5).
	Workers int
}

func (c *Config) complete(client kubernetes.Interface) error {
	if c.Metrics == nil {
		return errors.New("podautoscaler: a metrics source is required")
	}
	if c.Tolerance < 0 || c.SyncPeriod < 0 || c.DownscaleStabilization < 0 {
		return errors.New("podautoscaler: negative tolerance or period")
	}
	var err error
	if c.Workers, err = kit.Workers("podautoscaler", c.Workers, DefaultWorkers); err != nil {
		return err
	}
	c.SyncPeriod = cmp.Or(c.SyncPeriod, DefaultSyncPeriod)
	c.Tolerance = cmp.Or(c.Tolerance, DefaultTolerance)
	c.DownscaleStabilization = cmp.Or(c.DownscaleStabilization, DefaultDownscaleStabilizationWindow)
	c.CPUInitializationPeriod = cmp.Or(c.CPUInitializationPeriod, DefaultCPUInitializationPeriod)
	c.InitialReadinessDelay = cmp.Or(c.InitialReadinessDelay, DefaultInitialReadinessDelay)
	if c.Mapper == nil {
		c.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	}
	if c.Scales == nil {
		c.Scales = scale.New(client.CoreV1().RESTClient(), c.Mapper, dynamic.LegacyAPIPathResolverFunc,
			scale.NewDiscoveryScaleKindResolver(client.Discovery()))
	}
	return nil
}

// Controller scales the targets of HorizontalPodAutoscalers.
type Controller struct {
	kit.Base
	hpas autoscalinglisters.HorizontalPodAutoscalerLister
	pods corelisters.PodLister
	cfg  Config

	mu        sync.Mutex
	histories map[string]*history // by HPA key
}

// New validates cfg and wires the controller to kc's HPA and Pod
// informers. Nothing runs until Start (kit.Run starts the informers).
// kc's Clock is the time of windows, policies and conditions.
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	if err := cfg.complete(kc.Client); err != nil {
		return nil, err
	}
	hpaInf := kc.Factory.Autoscaling().V2().HorizontalPodAutoscalers()
	podInf := kc.Factory.Core().V1().Pods()
	b := kc.NewBase("horizontalpodautoscaler", "hpa", cfg.Workers, "horizontal-pod-autoscaler")
	l := b.Loop
	c := &Controller{
		hpas: hpaInf.Lister(), pods: podInf.Lister(),
		Base:      b,
		cfg:       cfg,
		histories: map[string]*history{},
	}
	l.ReconcileAfter = c.evaluate
	handler := loop.KeyHandler(c.Queue)
	// Our own status writes come back as updates: only a new spec
	// (generation) is worth an evaluation before the next period.
	handler.UpdateFunc = func(old, cur any) {
		o, ok1 := old.(*autoscalingv2.HorizontalPodAutoscaler)
		n, ok2 := cur.(*autoscalingv2.HorizontalPodAutoscaler)
		if !ok1 || !ok2 || o.Generation != n.Generation || !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) {
			loop.Enqueue(c.Queue, cur)
		}
	}
	// The pods are read from the cache, not watched.
	l.Synced = append(l.Synced, podInf.Informer().HasSynced)
	return c, l.Watch(hpaInf.Informer(), handler)
}

// evaluate reconciles one HPA and says when to evaluate it again: at its
// next period while it exists. Only a conflict (our copy was stale) is
// retried sooner, with back-off; like Kubernetes, a failing HPA is
// retried at its period, since the cause (no metrics yet, a missing
// target) rarely heals within milliseconds.
func (c *Controller) evaluate(ctx context.Context, key string) (time.Duration, error) {
	err := c.Reconcile(ctx, key)
	if apierrors.IsConflict(err) {
		return 0, err
	}
	if err != nil {
		c.Log.Warn("reconcile failed", "hpa", key, "err", err)
	}
	if ns, name, err := cache.SplitMetaNamespaceKey(key); err == nil {
		if _, err := c.hpas.HorizontalPodAutoscalers(ns).Get(name); err == nil {
			return c.cfg.SyncPeriod, nil
		}
	}
	return 0, nil
}

// Reconcile evaluates one HPA: it reads the target's scale and the pods'
// metrics, sets the target's replicas to what the metrics and the HPA's
// bounds and behavior call for, and writes the HPA's status.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	shared, err := c.hpas.HorizontalPodAutoscalers(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		delete(c.histories, key)
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	return c.sync(ctx, key, shared.DeepCopy())
}

// historyOf is the HPA's history; a new HPA under an old name starts
// afresh. Only the worker holding key uses the result.
func (c *Controller) historyOf(key string, uid types.UID) *history {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.histories[key]
	if h == nil || h.uid != uid {
		h = &history{uid: uid}
		c.histories[key] = h
	}
	return h
}

// evaluation is one sync of one HPA: the object being brought up to date
// and the time it happens at.
type evaluation struct {
	hpa *autoscalingv2.HorizontalPodAutoscaler
	now time.Time
}

// setCondition sets a condition; its transition time moves only when the
// status does.
func (e *evaluation) setCondition(t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, format string, args ...any) {
	cond := autoscalingv2.HorizontalPodAutoscalerCondition{
		Type: t, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...),
		LastTransitionTime: metav1.NewTime(e.now),
	}
	conds := e.hpa.Status.Conditions
	for i := range conds {
		if conds[i].Type == t {
			if conds[i].Status == status {
				cond.LastTransitionTime = conds[i].LastTransitionTime
			}
			conds[i] = cond
			return
		}
	}
	e.hpa.Status.Conditions = append(conds, cond)
}

func (c *Controller) sync(ctx context.Context, key string, hpa *autoscalingv2.HorizontalPodAutoscaler) (retErr error) {
	e := &evaluation{hpa: hpa, now: c.Clock.Now()}
	original := hpa.Status.DeepCopy()
	hpa.Status.ObservedGeneration = &hpa.Generation
	ref := hpa.Spec.ScaleTargetRef
	target := fmt.Sprintf("%s/%s/%s", ref.Kind, hpa.Namespace, ref.Name)
	log := c.Log.With("hpa", key, "target", target)
	h := c.historyOf(key, hpa.UID)
	up, down := completeRules(hpa.Spec.Behavior, c.cfg.DownscaleStabilization, c.cfg.Tolerance)

	sc, gr, err := c.scaleOf(ctx, hpa)
	if err != nil {
		c.Recorder.Event(hpa, corev1.EventTypeWarning, ReasonFailedGetScale, err.Error())
		e.setCondition(autoscalingv2.AbleToScale, corev1.ConditionFalse, ReasonFailedGetScale,
			"the HPA controller was unable to get the target's current scale: %v", err)
		return errors.Join(fmt.Errorf("get scale of %s: %w", target, err), c.writeStatus(ctx, original, hpa))
	}
	e.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale",
		"the HPA controller was able to get the target's current scale")
	current := sc.Spec.Replicas
	h.initialize(e.now, current)
	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	maxReplicas := hpa.Spec.MaxReplicas

	var (
		statuses []autoscalingv2.MetricStatus
		desired  int32
		reason   string
		rescale  = true
	)
	switch {
	case current == 0 && minReplicas != 0:
		// Someone scaled the target to zero: that turns the HPA off.
		desired, rescale = 0, false
		e.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled",
			"scaling is disabled since the replica count of the target is zero")
	case current > maxReplicas:
		desired, reason = maxReplicas, "Current number of replicas above Spec.MaxReplicas"
		e.setCondition(autoscalingv2.ScalingLimited, corev1.ConditionTrue, "TooManyReplicas",
			"the desired replica count is more than the maximum replica count")
	case current < minReplicas:
		desired, reason = minReplicas, "Current number of replicas below Spec.MinReplicas"
		e.setCondition(autoscalingv2.ScalingLimited, corev1.ConditionTrue, "TooFewReplicas",
			"the desired replica count is less than the minimum replica count")
	default:
		proposal, metric, ms, err := c.proposeReplicas(ctx, e, sc, current, tolerances{down: down.tolerance, up: up.tolerance})
		statuses = ms
		if proposal < 0 {
			hpa.Status.CurrentReplicas, hpa.Status.CurrentMetrics = current, statuses
			c.Recorder.Event(hpa, corev1.EventTypeWarning, ReasonFailedComputeMetricsReplicas, err.Error())
			return errors.Join(fmt.Errorf("compute replicas of %s: %w", target, err), c.writeStatus(ctx, original, hpa))
		}
		// Some metrics failed but the others are enough to scale on: scale,
		// and report the failure.
		retErr = err
		desired = proposal
		switch {
		case desired > current:
			reason = metric + " above target"
		case desired < current:
			reason = "All metrics below target"
		}
		d := h.normalize(e.now, current, desired, minReplicas, maxReplicas, up, down)
		e.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, d.ableReason, "%s", d.ableMessage)
		limited := corev1.ConditionFalse
		if d.limited {
			limited = corev1.ConditionTrue
		}
		e.setCondition(autoscalingv2.ScalingLimited, limited, d.limitedReason, "%s", d.limitedMessage)
		log.Debug("evaluated", "current", current, "proposal", proposal, "desired", d.replicas, "metric", metric)
		desired = d.replicas
		rescale = desired != current
	}

	if rescale {
		sc.Spec.Replicas = desired
		if _, err := c.cfg.Scales.Scales(hpa.Namespace).Update(ctx, gr, sc, metav1.UpdateOptions{}); err != nil {
			c.Recorder.Eventf(hpa, corev1.EventTypeWarning, ReasonFailedRescale, "New size: %d; reason: %s; error: %v", desired, reason, err)
			e.setCondition(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale",
				"the HPA controller was unable to update the target scale: %v", err)
			hpa.Status.CurrentReplicas, hpa.Status.CurrentMetrics = current, statuses
			return errors.Join(fmt.Errorf("rescale %s: %w", target, err), c.writeStatus(ctx, original, hpa))
		}
		e.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale",
			"the HPA controller was able to update the target scale to %d", desired)
		c.Recorder.Eventf(hpa, corev1.EventTypeNormal, ReasonSuccessfulRescale, "New size: %d; reason: %s", desired, reason)
		h.recordScale(e.now, current, desired, up, down)
		log.Info("rescaled", "from", current, "to", desired, "reason", reason)
		now := metav1.NewTime(e.now)
		hpa.Status.LastScaleTime = &now
	} else {
		desired = current
	}
	hpa.Status.CurrentReplicas, hpa.Status.DesiredReplicas, hpa.Status.CurrentMetrics = current, desired, statuses
	if err := c.writeStatus(ctx, original, hpa); err != nil {
		return err
	}
	return retErr
}

// writeStatus writes hpa's status if it changed.
func (c *Controller) writeStatus(ctx context.Context, original *autoscalingv2.HorizontalPodAutoscalerStatus, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	if apiequality.Semantic.DeepEqual(original, &hpa.Status) {
		return nil
	}
	if _, err := c.Client.AutoscalingV2().HorizontalPodAutoscalers(hpa.Namespace).UpdateStatus(ctx, hpa, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of hpa %s/%s: %w", hpa.Namespace, hpa.Name, err)
	}
	return nil
}

// scaleOf reads the target's scale through the first of its kind's
// resources that serves one.
func (c *Controller) scaleOf(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv1.Scale, schema.GroupResource, error) {
	ref := hpa.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, schema.GroupResource{}, fmt.Errorf("invalid API version in scale target reference: %w", err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	mappings, err := c.cfg.Mapper.RESTMappings(gk)
	if meta.IsNoMatchError(err) {
		// Maybe a kind newer than our discovery: look again.
		if r, ok := c.cfg.Mapper.(meta.ResettableRESTMapper); ok {
			r.Reset()
			mappings, err = c.cfg.Mapper.RESTMappings(gk)
		}
	}
	if err != nil {
		return nil, schema.GroupResource{}, fmt.Errorf("unable to determine resource for scale target reference: %w", err)
	}
	var first error
	for _, m := range mappings {
		gr := m.Resource.GroupResource()
		sc, err := c.cfg.Scales.Scales(hpa.Namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{})
		if err == nil {
			return sc, gr, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = fmt.Errorf("no resource serves kind %s", gk)
	}
	return nil, schema.GroupResource{}, first
}
