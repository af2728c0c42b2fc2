package disruption

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// DefaultWorkers: Kubernetes runs one disruption worker.
const DefaultWorkers = 1

// Event reasons, as Kubernetes' disruption controller records them.
const (
	ReasonNoPods                  = "NoPods"
	ReasonCalculateExpectedFailed = "CalculateExpectedPodCountFailed"
	ReasonNotDeleted              = "NotDeleted"
	ReasonUnmanagedPodsWarning    = "UnmanagedPods"
)

// Config configures the controller; the rest comes from the kit.Context
// (its Clock ages status.disruptedPods).
type Config struct {
	// Workers is how many budgets are synced at once (default 1).
	Workers int
	// Scales and Mapper read the /scale of pods' controllers other than
	// ReplicaSets, Deployments and StatefulSets; nil: built from the
	// client's discovery.
	Scales scale.ScalesGetter
	Mapper meta.RESTMapper
}

// Controller keeps PodDisruptionBudgets' status.
type Controller struct {
	kit.Base
	pdbs         policylisters.PodDisruptionBudgetLister
	pods         corelisters.PodLister
	replicaSets  appslisters.ReplicaSetLister
	deployments  appslisters.DeploymentLister
	statefulSets appslisters.StatefulSetLister
	scales       scale.ScalesGetter
	mapper       meta.RESTMapper
}

// New wires the controller to kc's budget, pod and workload informers.
// Nothing runs until Start (kit.Run starts the informers).
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	workers, err := kit.Workers("disruption", cfg.Workers, DefaultWorkers)
	if err != nil {
		return nil, err
	}
	if cfg.Mapper == nil {
		cfg.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kc.Client.Discovery()))
	}
	if cfg.Scales == nil {
		cfg.Scales = scale.New(kc.Client.CoreV1().RESTClient(), cfg.Mapper, dynamic.LegacyAPIPathResolverFunc,
			scale.NewDiscoveryScaleKindResolver(kc.Client.Discovery()))
	}
	pdbInf, podInf := kc.Factory.Policy().V1().PodDisruptionBudgets(), kc.Factory.Core().V1().Pods()
	apps := kc.Factory.Apps().V1()
	b := kc.NewBase("disruption", "poddisruptionbudget", workers, "controllermanager")
	c := &Controller{Base: b, pdbs: pdbInf.Lister(), pods: podInf.Lister(),
		replicaSets: apps.ReplicaSets().Lister(), deployments: apps.Deployments().Lister(), statefulSets: apps.StatefulSets().Lister(),
		scales: cfg.Scales, mapper: cfg.Mapper}
	b.Loop.ReconcileAfter = c.Reconcile
	if err := b.Loop.Watch(pdbInf.Informer(), loop.KeyHandler(c.Queue)); err != nil {
		return nil, err
	}
	podEvents := cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueBudgetsOf,
		UpdateFunc: func(old, cur any) {
			c.enqueueBudgetsOf(old)
			c.enqueueBudgetsOf(cur)
		},
		DeleteFunc: c.enqueueBudgetsOf,
	}
	if err := b.Loop.Watch(podInf.Informer(), podEvents); err != nil {
		return nil, err
	}
	for _, inf := range []cache.SharedIndexInformer{apps.ReplicaSets().Informer(), apps.Deployments().Informer(), apps.StatefulSets().Informer()} {
		if err := b.Loop.Watch(inf, cache.ResourceEventHandlerFuncs{}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// enqueueBudgetsOf queues the budgets whose selector picks the pod.
func (c *Controller) enqueueBudgetsOf(obj any) {
	pod, ok := loop.As[*corev1.Pod](obj)
	if !ok {
		return
	}
	pdbs, err := c.pdbs.PodDisruptionBudgets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pdb := range pdbs {
		if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil && sel.Matches(labels.Set(pod.Labels)) {
			loop.Enqueue(c.Queue, pdb)
		}
	}
}

// Reconcile writes the budget's status from its pods; it asks to look
// again when the first eviction it still counts expires.
func (c *Controller) Reconcile(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pdb, err := c.pdbs.PodDisruptionBudgets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	recheck, err := c.sync(ctx, pdb)
	if apierrors.IsNotFound(err) { // deleted meanwhile
		return 0, nil
	}
	if apierrors.IsConflict(err) {
		return 0, err
	}
	if err != nil {
		c.Log.Warn("failed to sync pod disruption budget", "poddisruptionbudget", key, "err", err)
		return 0, c.writeStatus(ctx, failedSafe(pdb, err))
	}
	if recheck.IsZero() {
		return 0, nil
	}
	return max(recheck.Sub(c.Clock.Now()), time.Millisecond), nil
}

func (c *Controller) sync(ctx context.Context, pdb *policyv1.PodDisruptionBudget) (time.Time, error) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return time.Time{}, err
	}
	pods, err := c.pods.Pods(pdb.Namespace).List(sel)
	if err != nil {
		return time.Time{}, err
	}
	if len(pods) == 0 {
		c.Recorder.Event(pdb, corev1.EventTypeNormal, ReasonNoPods, "No matching pods found")
	}
	expected, desiredHealthy, err := desired(pdb, len(pods), func() (int32, error) { return c.expectedScale(ctx, pdb, pods) })
	if err != nil {
		c.Recorder.Eventf(pdb, corev1.EventTypeWarning, ReasonCalculateExpectedFailed, "Failed to calculate the number of expected pods: %v", err)
		return time.Time{}, err
	}
	disrupted, recheck, expired := disruptedPods(pdb, pods, c.Clock.Now())
	for _, name := range expired {
		c.Recorder.Eventf(pdb, corev1.EventTypeWarning, ReasonNotDeleted, "Pod %s/%s was expected by PDB %s/%s to be deleted but it wasn't",
			pdb.Namespace, name, pdb.Namespace, pdb.Name)
	}
	if out := withStatus(pdb, healthy(pods, disrupted), desiredHealthy, expected, disrupted); out != nil {
		return recheck, c.writeStatus(ctx, out)
	}
	return recheck, nil
}

func (c *Controller) writeStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error {
	_, err := c.Client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
	return err
}

// expectedScale sums the replicas the pods' controllers want, each
// controller once (a Deployment's ReplicaSets count as the Deployment).
// Pods without a controller do not count.
func (c *Controller) expectedScale(ctx context.Context, pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (int32, error) {
	seen := map[types.UID]bool{}
	var total, unmanaged int32
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			unmanaged++
			continue
		}
		if seen[ref.UID] {
			continue
		}
		uid, replicas, found, err := c.scaleOf(ctx, pod.Namespace, ref)
		if err != nil {
			return 0, err
		}
		if !found {
			return 0, errNoController(pod)
		}
		if !seen[uid] { // a Deployment's other ReplicaSets counted it
			total += replicas
		}
		seen[ref.UID], seen[uid] = true, true
	}
	if unmanaged > 0 {
		c.Log.Debug("pods without a controller do not count toward the expected pods", "poddisruptionbudget", pdb.Namespace+"/"+pdb.Name, "pods", unmanaged)
	}
	return total, nil
}

// scaleOf is the replicas wanted by the controller ref names, and the UID
// of the controller that decides it (a ReplicaSet's Deployment).
func (c *Controller) scaleOf(ctx context.Context, ns string, ref *metav1.OwnerReference) (types.UID, int32, bool, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", 0, false, nil
	}
	if gv.Group == appsv1.GroupName {
		switch ref.Kind {
		case "ReplicaSet":
			rs, err := c.replicaSets.ReplicaSets(ns).Get(ref.Name)
			if err != nil || rs.UID != ref.UID {
				return "", 0, false, nil
			}
			if owner := metav1.GetControllerOf(rs); owner != nil && owner.Kind == "Deployment" {
				d, err := c.deployments.Deployments(ns).Get(owner.Name)
				if err != nil || d.UID != owner.UID {
					return "", 0, false, nil
				}
				return d.UID, replicas(d.Spec.Replicas), true, nil
			}
			return rs.UID, replicas(rs.Spec.Replicas), true, nil
		case "StatefulSet":
			ss, err := c.statefulSets.StatefulSets(ns).Get(ref.Name)
			if err != nil || ss.UID != ref.UID {
				return "", 0, false, nil
			}
			return ss.UID, replicas(ss.Spec.Replicas), true, nil
		}
	}
	mappings, err := c.mapper.RESTMappings(schema.GroupKind{Group: gv.Group, Kind: ref.Kind})
	if err != nil {
		return "", 0, false, nil
	}
	for _, m := range mappings {
		sc, err := c.scales.Scales(ns).Get(ctx, m.Resource.GroupResource(), ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", 0, false, fmt.Errorf("scale of %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
		}
		if sc.UID != "" && sc.UID != ref.UID {
			continue
		}
		return ref.UID, sc.Spec.Replicas, true, nil
	}
	return "", 0, false, nil
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
