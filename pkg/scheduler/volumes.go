package scheduler

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

// The volume binding reasons, worded as kube-scheduler words them.
const (
	ReasonVolumeNodeAffinityConflict = "node(s) had volume node affinity conflict"
	ReasonVolumeBindConflict         = "node(s) didn't find available persistent volumes to bind"
	// MsgUnboundImmediateClaims rejects a pod whose claim of an Immediate
	// class is not bound yet: the binder, not the scheduler, finds its
	// volume, and the pod is tried again once it has.
	MsgUnboundImmediateClaims = "pod has unbound immediate PersistentVolumeClaims"
)

// noProvisioner is the provisioner of classes of static volumes only.
const noProvisioner = "kubernetes.io/no-provisioner"

// VolumeListers are what VolumeBinding reads; a scheduler without them
// (tests) ignores pods' claims.
type VolumeListers struct {
	Claims  corelisters.PersistentVolumeClaimLister
	Volumes corelisters.PersistentVolumeLister
	Classes storagelisters.StorageClassLister
}

// VolumeBinding is Kubernetes' VolumeBinding filter, for the pod's
// PersistentVolumeClaims (and ephemeral volumes' claims): a claim that is
// missing, being deleted or of an Immediate class and unbound keeps the
// pod off every node; a bound claim admits only the nodes its volume's
// node affinity admits; an unbound claim of a WaitForFirstConsumer class
// admits the nodes where an available volume fits it or, when its class
// provisions, any node (only the node already chosen for it, once the
// scheduler has written volume.kubernetes.io/selected-node). The
// scheduler writes that annotation on such claims, for the node it picks,
// before it binds the pod (claimsToAnnotate).
type VolumeBinding struct{ Listers *VolumeListers }

func (VolumeBinding) Name() string { return "VolumeBinding" }

// podClaims are what one attempt knows of a pod's claims.
type podClaims struct {
	// bound are the volumes of the bound claims.
	bound []*v1.PersistentVolume
	// delayed are the unbound claims of WaitForFirstConsumer classes,
	// with their classes.
	delayed []delayedClaim
	// reject, when set, keeps the pod off every node.
	reject string
}

type delayedClaim struct {
	claim *v1.PersistentVolumeClaim
	class *storagev1.StorageClass
}

// claimNames are the claims a pod's volumes use.
func claimNames(pod *v1.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, pod.Name+"-"+v.Name)
		}
	}
	return out
}

func (vb VolumeBinding) claims(pod *v1.Pod) podClaims {
	var pc podClaims
	l := vb.Listers
	if l == nil || l.Claims == nil {
		return pc
	}
	for _, name := range claimNames(pod) {
		claim, err := l.Claims.PersistentVolumeClaims(pod.Namespace).Get(name)
		if err != nil {
			pc.reject = fmt.Sprintf("persistentvolumeclaim %q not found", name)
			return pc
		}
		if claim.DeletionTimestamp != nil {
			pc.reject = fmt.Sprintf("persistentvolumeclaim %q is being deleted", name)
			return pc
		}
		if claim.Spec.VolumeName != "" {
			pv, err := l.Volumes.Get(claim.Spec.VolumeName)
			if err != nil {
				pc.reject = fmt.Sprintf("pvc %s/%s is bound to non-existent persistentvolume %q", claim.Namespace, claim.Name, claim.Spec.VolumeName)
				return pc
			}
			pc.bound = append(pc.bound, pv)
			continue
		}
		var class *storagev1.StorageClass
		if className := volumehelpers.GetPersistentVolumeClaimClass(claim); className != "" {
			class, _ = l.Classes.Get(className)
		}
		if class == nil || class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
			pc.reject = MsgUnboundImmediateClaims
			return pc
		}
		pc.delayed = append(pc.delayed, delayedClaim{claim: claim, class: class})
	}
	return pc
}

// RejectPod is why no node can take pod, whatever the node: a claim
// missing, being deleted, or unbound of an Immediate class.
func (vb VolumeBinding) RejectPod(pod *PodInfo) string { return vb.claims(pod.Pod).reject }

func (vb VolumeBinding) PreFilter(pod *PodInfo, _ []*NodeInfo) NodeFilter {
	pc := vb.claims(pod.Pod)
	if pc.reject != "" || (len(pc.bound) == 0 && len(pc.delayed) == 0) {
		return nil
	}
	var volumes []*v1.PersistentVolume
	if len(pc.delayed) > 0 {
		volumes, _ = vb.Listers.Volumes.List(labels.Everything())
	}
	return func(node *NodeInfo) []string {
		for _, pv := range pc.bound {
			if volumehelpers.CheckNodeAffinity(pv, node.Node.Labels) != nil {
				return []string{ReasonVolumeNodeAffinityConflict}
			}
		}
		chosen := map[string]*v1.PersistentVolume{}
		for _, dc := range pc.delayed {
			if selected := dc.claim.Annotations[volumehelpers.AnnSelectedNode]; selected != "" && selected != node.Node.Name {
				return []string{ReasonVolumeBindConflict}
			}
			pv, _ := volumehelpers.FindMatchingVolume(dc.claim, volumes, node.Node, chosen, false, false)
			if pv != nil {
				chosen[pv.Name] = pv
				continue
			}
			if dc.class.Provisioner == noProvisioner || !allowedTopology(dc.class, node.Node) {
				return []string{ReasonVolumeBindConflict}
			}
		}
		return nil
	}
}

// allowedTopology says whether a class may provision on node.
func allowedTopology(class *storagev1.StorageClass, node *v1.Node) bool {
	if len(class.AllowedTopologies) == 0 {
		return true
	}
	for _, term := range class.AllowedTopologies {
		ok := true
		for _, e := range term.MatchLabelExpressions {
			v, has := node.Labels[e.Key]
			found := false
			for _, want := range e.Values {
				found = found || (has && v == want)
			}
			ok = ok && found
		}
		if ok {
			return true
		}
	}
	return false
}

// claimsToAnnotate are the pod's unbound WaitForFirstConsumer claims that
// do not name node as their selected node yet.
func (vb VolumeBinding) claimsToAnnotate(pod *v1.Pod, node string) []*v1.PersistentVolumeClaim {
	var out []*v1.PersistentVolumeClaim
	for _, dc := range vb.claims(pod).delayed {
		if dc.claim.Annotations[volumehelpers.AnnSelectedNode] != node {
			out = append(out, dc.claim)
		}
	}
	return out
}

// selectNode writes volume.kubernetes.io/selected-node on the claims: the
// binder then binds each to a volume on node, or its provisioner makes one
// there. The claim's UID is a precondition, so a claim deleted and made
// again meanwhile is not annotated.
func (s *Scheduler) selectNode(ctx context.Context, claims []*v1.PersistentVolumeClaim, node string) error {
	for _, claim := range claims {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid":         claim.UID,
			"annotations": map[string]string{volumehelpers.AnnSelectedNode: node},
		}})
		if err != nil {
			return err
		}
		_, err = s.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Patch(ctx, claim.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			// Not %w: a claim gone is no reason to forget the pod, as
			// a pod gone would be.
			return fmt.Errorf("persistentvolumeclaim %s/%s: set selected node: %v", claim.Namespace, claim.Name, err)
		}
	}
	return nil
}

var (
	_ PreFilterPlugin = VolumeBinding{}
	_ PodRejecter     = VolumeBinding{}
)
