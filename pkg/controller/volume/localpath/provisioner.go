package localpath

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// Provisioner is the provisioner name of local-path StorageClasses.
const Provisioner = "minik8s.io/local-path"

// ClassName is the default StorageClass the control plane creates.
const ClassName = "local-path"

// AnnRoot is the Node annotation in which a node's kubelet publishes the
// directory its local-path volumes live under.
const AnnRoot = "minik8s.io/local-path-root"

// DefaultRoot is where local-path volumes live on a node that publishes
// no root.
const DefaultRoot = "/var/lib/minik8s/local-path"

// Event reasons, as Kubernetes' external provisioners record them.
const (
	ReasonProvisioning          = "Provisioning"
	ReasonProvisioningSucceeded = "ProvisioningSucceeded"
	ReasonProvisioningFailed    = "ProvisioningFailed"
)

// DefaultClass is the cluster's default StorageClass: local-path volumes
// on the node of the claim's first pod, deleted with their claim.
func DefaultClass() *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       Provisioner,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
}

// VolumeName is the PV provisioned for a claim, as Kubernetes names it.
func VolumeName(claim *corev1.PersistentVolumeClaim) string { return "pvc-" + string(claim.UID) }

// Dir is the directory of a local-path volume under a node's root.
func Dir(root string, claim *corev1.PersistentVolumeClaim, pvName string) string {
	return filepath.Join(root, claim.Namespace+"_"+claim.Name+"_"+pvName)
}

// NodeOf is the node a PV's required node affinity names by hostname,
// or "".
func NodeOf(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
				return e.Values[0]
			}
		}
	}
	return ""
}

// Provisioned says whether this provisioner made pv.
func Provisioned(pv *corev1.PersistentVolume) bool {
	return pv.Annotations[volumehelpers.AnnDynamicallyProvisioned] == Provisioner
}

// Controller provisions local-path volumes.
type Controller struct {
	kit.Base
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	nodes   corelisters.NodeLister
}

// New wires the provisioner to kc's claim, volume, class and node
// informers.
func New(kc *kit.Context) (*Controller, error) {
	pvcInf, pvInf := kc.Factory.Core().V1().PersistentVolumeClaims(), kc.Factory.Core().V1().PersistentVolumes()
	scInf, nodeInf := kc.Factory.Storage().V1().StorageClasses(), kc.Factory.Core().V1().Nodes()
	c := &Controller{
		Base:   kc.NewBase("local-path-provisioner", "claim", 1, Provisioner),
		claims: pvcInf.Lister(), volumes: pvInf.Lister(), classes: scInf.Lister(), nodes: nodeInf.Lister(),
	}
	c.Loop.Reconcile = c.Reconcile
	return c, errors.Join(
		c.Loop.Watch(pvcInf.Informer(), loop.KeyHandler(c.Queue)),
		c.Loop.Watch(pvInf.Informer(), cache.ResourceEventHandlerFuncs{}),
		c.Loop.Watch(scInf.Informer(), cache.ResourceEventHandlerFuncs{}),
		c.Loop.Watch(nodeInf.Informer(), cache.ResourceEventHandlerFuncs{}),
	)
}

// Reconcile provisions a volume for the claim key names if it is ours to
// provision and has none.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
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
	if claim.DeletionTimestamp != nil || claim.Spec.VolumeName != "" ||
		claim.Annotations[volumehelpers.AnnStorageProvisioner] != Provisioner {
		return nil
	}
	pvName := VolumeName(claim)
	if _, err := c.volumes.Get(pvName); err == nil {
		// Made already; the binder binds it.
		return nil
	}
	class, err := c.classes.Get(volumehelpers.GetPersistentVolumeClaimClass(claim))
	if apierrors.IsNotFound(err) {
		// The binder reports the missing class.
		return nil
	}
	if err != nil {
		return err
	}
	if class.Provisioner != Provisioner {
		return nil
	}
	nodeName := claim.Annotations[volumehelpers.AnnSelectedNode]
	if nodeName == "" {
		if class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
			// The scheduler names the node with the first pod.
			return nil
		}
		if nodeName, err = c.leastUsedNode(); err != nil {
			c.Recorder.Event(claim, corev1.EventTypeWarning, ReasonProvisioningFailed, err.Error())
			return err
		}
	}
	root := DefaultRoot
	if node, err := c.nodes.Get(nodeName); err == nil && node.Annotations[AnnRoot] != "" {
		root = node.Annotations[AnnRoot]
	} else if apierrors.IsNotFound(err) {
		// The chosen node is gone: as Kubernetes' external provisioners
		// do, drop the choice so that the scheduler picks again.
		c.Recorder.Eventf(claim, corev1.EventTypeWarning, ReasonProvisioningFailed,
			"failed to provision volume with StorageClass %q: node %q not found; the claim's pod is scheduled again", class.Name, nodeName)
		return c.reschedule(ctx, claim)
	}
	c.Recorder.Eventf(claim, corev1.EventTypeNormal, ReasonProvisioning, "External provisioner is provisioning volume for claim %q", key)
	pv := c.volumeFor(claim, class, pvName, nodeName, root)
	if _, err := c.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		c.Recorder.Eventf(claim, corev1.EventTypeWarning, ReasonProvisioningFailed, "failed to provision volume with StorageClass %q: %v", class.Name, err)
		return fmt.Errorf("create volume %s: %w", pvName, err)
	}
	c.Recorder.Eventf(claim, corev1.EventTypeNormal, ReasonProvisioningSucceeded, "Successfully provisioned volume %s", pvName)
	return nil
}

// reschedule removes the claim's selected node.
func (c *Controller) reschedule(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if claim.Annotations[volumehelpers.AnnSelectedNode] == "" {
		return nil
	}
	claim = claim.DeepCopy()
	delete(claim.Annotations, volumehelpers.AnnSelectedNode)
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove the selected node: %w", err)
	}
	return nil
}

// volumeFor is the PV that serves claim on node.
func (c *Controller) volumeFor(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, pvName, node, root string) *corev1.PersistentVolume {
	reclaim := ptr.Deref(class.ReclaimPolicy, corev1.PersistentVolumeReclaimDelete)
	modes := claim.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pvName,
			Annotations: map[string]string{volumehelpers.AnnDynamicallyProvisioned: Provisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              class.Name,
			VolumeMode:                    claim.Spec.VolumeMode,
			MountOptions:                  class.MountOptions,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				Local: &corev1.LocalVolumeSource{Path: Dir(root, claim, pvName)},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}}}},
			}},
		},
	}
}

// leastUsedNode is the Ready, schedulable node with the fewest local-path
// volumes (by name among equals), for claims of Immediate classes.
func (c *Controller) leastUsedNode() (string, error) {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return "", err
	}
	volumes, err := c.volumes.List(labels.Everything())
	if err != nil {
		return "", err
	}
	count := map[string]int{}
	for _, v := range volumes {
		if Provisioned(v) {
			count[NodeOf(v)]++
		}
	}
	var ready []string
	for _, n := range nodes {
		if !n.Spec.Unschedulable && isReady(n) {
			ready = append(ready, n.Name)
		}
	}
	if len(ready) == 0 {
		return "", errors.New("no Ready node to provision a local-path volume on")
	}
	slices.SortFunc(ready, func(a, b string) int {
		if d := count[a] - count[b]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return ready[0], nil
}

func isReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
