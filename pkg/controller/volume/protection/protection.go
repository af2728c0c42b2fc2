package protection

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// The finalizers, as Kubernetes names them.
const (
	PVCFinalizer = "kubernetes.io/pvc-protection"
	PVFinalizer  = "kubernetes.io/pv-protection"
)

// PVCController removes kubernetes.io/pvc-protection from claims being
// deleted that no pod uses.
type PVCController struct {
	kit.Base
	claims corelisters.PersistentVolumeClaimLister
	pods   corelisters.PodLister
}

// NewPVC wires the PVC protection controller to kc's claim and pod
// informers.
func NewPVC(kc *kit.Context) (*PVCController, error) {
	pvcInf, podInf := kc.Factory.Core().V1().PersistentVolumeClaims(), kc.Factory.Core().V1().Pods()
	c := &PVCController{Base: kc.NewBase("pvc-protection", "claim", 1, ""), claims: pvcInf.Lister(), pods: podInf.Lister()}
	c.Loop.Reconcile = c.Reconcile
	podHandler := func(obj any) {
		pod, ok := loop.As[*corev1.Pod](obj)
		if !ok {
			return
		}
		// A pod that finished or went may free its claims.
		for _, name := range claimNames(pod) {
			c.Queue.Add(pod.Namespace + "/" + name)
		}
	}
	return c, errors.Join(
		c.Loop.Watch(pvcInf.Informer(), loop.KeyHandler(c.Queue)),
		c.Loop.Watch(podInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: podHandler, UpdateFunc: func(_, cur any) { podHandler(cur) }, DeleteFunc: podHandler,
		}))
}

// claimNames are the claims a pod's volumes name.
func claimNames(pod *corev1.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			// Kubernetes names an ephemeral volume's claim <pod>-<volume>.
			out = append(out, pod.Name+"-"+v.Name)
		}
	}
	return out
}

// Reconcile removes the finalizer of the claim key names when it is being
// deleted and no pod uses it.
func (c *PVCController) Reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if claim.DeletionTimestamp == nil || !slices.Contains(claim.Finalizers, PVCFinalizer) {
		return nil
	}
	inUse, err := c.inUse(ctx, claim)
	if err != nil || inUse {
		return err
	}
	claim = claim.DeepCopy()
	claim.Finalizers = slices.DeleteFunc(claim.Finalizers, func(f string) bool { return f == PVCFinalizer })
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, claim, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove %s: %w", PVCFinalizer, err)
	}
	return nil
}

// inUse: the cache first, then, before letting the claim go, the
// apiserver (a pod created a moment ago may not be cached yet).
func (c *PVCController) inUse(ctx context.Context, claim *corev1.PersistentVolumeClaim) (bool, error) {
	pods, err := c.pods.Pods(claim.Namespace).List(labels.Everything())
	if err != nil {
		return false, err
	}
	if usedBy(pods, claim.Name) {
		return true, nil
	}
	list, err := c.Client.CoreV1().Pods(claim.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	live := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		live[i] = &list.Items[i]
	}
	return usedBy(live, claim.Name), nil
}

func usedBy(pods []*corev1.Pod, claim string) bool {
	for _, pod := range pods {
		if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if slices.Contains(claimNames(pod), claim) {
			return true
		}
	}
	return false
}

// PVController removes kubernetes.io/pv-protection from volumes being
// deleted that are not Bound.
type PVController struct {
	kit.Base
	volumes corelisters.PersistentVolumeLister
}

// NewPV wires the PV protection controller to kc's volume informer.
func NewPV(kc *kit.Context) (*PVController, error) {
	pvInf := kc.Factory.Core().V1().PersistentVolumes()
	c := &PVController{Base: kc.NewBase("pv-protection", "volume", 1, ""), volumes: pvInf.Lister()}
	c.Loop.Reconcile = c.Reconcile
	return c, c.Loop.Watch(pvInf.Informer(), loop.KeyHandler(c.Queue))
}

// Reconcile removes the finalizer of the volume key names when it is
// being deleted and not Bound.
func (c *PVController) Reconcile(ctx context.Context, key string) error {
	pv, err := c.volumes.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.DeletionTimestamp == nil || !slices.Contains(pv.Finalizers, PVFinalizer) || pv.Status.Phase == corev1.VolumeBound {
		return nil
	}
	pv = pv.DeepCopy()
	pv.Finalizers = slices.DeleteFunc(pv.Finalizers, func(f string) bool { return f == PVFinalizer })
	if _, err := c.Client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove %s: %w", PVFinalizer, err)
	}
	return nil
}
