package persistentvolume

import (
	"context"
	"errors"
	"fmt"
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

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// DefaultWorkers is how many claims and volumes are synced at once.
const DefaultWorkers = 2

// Event reasons, as Kubernetes' PV controller records them.
const (
	ReasonFailedBinding        = "FailedBinding"
	ReasonProvisioningFailed   = "ProvisioningFailed"
	ReasonExternalProvisioning = "ExternalProvisioning"
	ReasonWaitForFirstConsumer = "WaitForFirstConsumer"
	ReasonClaimLost            = "ClaimLost"
	ReasonClaimMisbound        = "ClaimMisbound"
	ReasonVolumeFailedDelete   = "VolumeFailedDelete"
	ReasonVolumeFailedRecycle  = "VolumeFailedRecycle"
	ReasonVolumeDelete         = "VolumeDelete"
)

// Keys: claims and volumes share one queue.
const (
	claimPrefix  = "claim:"
	volumePrefix = "volume:"
)

// Config configures the controller.
type Config struct {
	// Workers is how many claims and volumes are synced at once (default 2).
	Workers int
}

// Controller binds claims to volumes.
type Controller struct {
	kit.Base
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	nodes   corelisters.NodeLister
}

// New wires the controller to kc's claim, volume, class and node
// informers.
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	workers, err := kit.Workers("persistentvolume-binder", cfg.Workers, DefaultWorkers)
	if err != nil {
		return nil, err
	}
	pvcInf, pvInf := kc.Factory.Core().V1().PersistentVolumeClaims(), kc.Factory.Core().V1().PersistentVolumes()
	scInf, nodeInf := kc.Factory.Storage().V1().StorageClasses(), kc.Factory.Core().V1().Nodes()
	c := &Controller{
		Base:   kc.NewBase("persistentvolume-binder", "key", workers, "persistentvolume-controller"),
		claims: pvcInf.Lister(), volumes: pvInf.Lister(), classes: scInf.Lister(), nodes: nodeInf.Lister(),
	}
	c.Loop.Reconcile = c.Reconcile
	return c, errors.Join(
		c.Loop.Watch(pvcInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.onClaim,
			UpdateFunc: func(_, cur any) { c.onClaim(cur) },
			DeleteFunc: c.onClaim,
		}),
		c.Loop.Watch(pvInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.onVolume,
			UpdateFunc: func(_, cur any) { c.onVolume(cur) },
			DeleteFunc: c.onVolume,
		}),
		c.Loop.Watch(scInf.Informer(), cache.ResourceEventHandlerFuncs{
			// A new class may let pending claims be provisioned.
			AddFunc:    func(any) { c.enqueuePendingClaims() },
			UpdateFunc: func(_, _ any) {},
		}),
		c.Loop.Watch(nodeInf.Informer(), cache.ResourceEventHandlerFuncs{}),
	)
}

func (c *Controller) enqueueClaim(ns, name string) { c.Queue.Add(claimPrefix + ns + "/" + name) }
func (c *Controller) enqueueVolume(name string)    { c.Queue.Add(volumePrefix + name) }

func (c *Controller) onClaim(obj any) {
	claim, ok := loop.As[*corev1.PersistentVolumeClaim](obj)
	if !ok {
		return
	}
	c.enqueueClaim(claim.Namespace, claim.Name)
	// The volumes that name it: a claim gone releases them, a claim
	// bound or created lets a pre-bound volume settle.
	if claim.Spec.VolumeName != "" {
		c.enqueueVolume(claim.Spec.VolumeName)
	}
	vols, _ := c.volumes.List(labels.Everything())
	for _, v := range vols {
		if ref := v.Spec.ClaimRef; ref != nil && ref.Namespace == claim.Namespace && ref.Name == claim.Name && v.Name != claim.Spec.VolumeName {
			c.enqueueVolume(v.Name)
		}
	}
}

func (c *Controller) onVolume(obj any) {
	pv, ok := loop.As[*corev1.PersistentVolume](obj)
	if !ok {
		return
	}
	c.enqueueVolume(pv.Name)
	if ref := pv.Spec.ClaimRef; ref != nil {
		c.enqueueClaim(ref.Namespace, ref.Name)
		return
	}
	// A volume free for anyone: every waiting claim may take it.
	c.enqueuePendingClaims()
}

func (c *Controller) enqueuePendingClaims() {
	claims, _ := c.claims.List(labels.Everything())
	for _, claim := range claims {
		if claim.Spec.VolumeName == "" {
			c.enqueueClaim(claim.Namespace, claim.Name)
		}
	}
}

// Reconcile syncs the claim or volume key names.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	switch {
	case strings.HasPrefix(key, claimPrefix):
		ns, name, err := cache.SplitMetaNamespaceKey(strings.TrimPrefix(key, claimPrefix))
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
		return c.syncClaim(ctx, claim)
	case strings.HasPrefix(key, volumePrefix):
		pv, err := c.volumes.Get(strings.TrimPrefix(key, volumePrefix))
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return c.syncVolume(ctx, pv)
	}
	return nil
}

// syncClaim moves one claim toward Bound, or marks it Lost.
func (c *Controller) syncClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if !metav1.HasAnnotation(claim.ObjectMeta, volumehelpers.AnnBindCompleted) {
		return c.syncUnboundClaim(ctx, claim)
	}
	return c.syncBoundClaim(ctx, claim)
}

func (c *Controller) syncUnboundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if claim.DeletionTimestamp != nil {
		// Going away: binding it now would only make a volume to release.
		return nil
	}
	if claim.Spec.VolumeName != "" {
		return c.syncPreboundClaim(ctx, claim)
	}
	className := volumehelpers.GetPersistentVolumeClaimClass(claim)
	class, classErr := c.classes.Get(className)
	if className == "" {
		class, classErr = nil, nil
	}
	delay := class != nil && class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
	var node *corev1.Node
	if nodeName := claim.Annotations[volumehelpers.AnnSelectedNode]; delay && nodeName != "" {
		n, err := c.nodes.Get(nodeName)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if n == nil {
			// The chosen node is gone: Kubernetes' node affinity needs
			// its labels; a node of that name with only its hostname
			// label still matches volumes made for it.
			n = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{corev1.LabelHostname: nodeName}}}
		}
		node = n
	}
	volume, err := c.findVolume(claim, node, delay && node == nil)
	if err != nil {
		return err
	}
	if volume != nil {
		return c.bind(ctx, volume, claim)
	}
	switch {
	case delay && node == nil:
		c.Recorder.Event(claim, corev1.EventTypeNormal, ReasonWaitForFirstConsumer, "waiting for first consumer to be created before binding")
	case className == "":
		c.Recorder.Event(claim, corev1.EventTypeNormal, ReasonFailedBinding, "no persistent volumes available for this claim and no storage class is set")
	case apierrors.IsNotFound(classErr):
		c.Recorder.Event(claim, corev1.EventTypeWarning, ReasonProvisioningFailed, classErr.Error())
	case classErr != nil:
		return classErr
	default:
		if err := c.askProvisioner(ctx, claim, class); err != nil {
			return err
		}
	}
	return c.setClaimPhase(ctx, claim, corev1.ClaimPending)
}

// findVolume is the best volume for claim: one pre-bound to it, else the
// smallest that fits (on node, when given); with prebound only those
// pre-bound to it count.
func (c *Controller) findVolume(claim *corev1.PersistentVolumeClaim, node *corev1.Node, prebound bool) (*corev1.PersistentVolume, error) {
	all, err := c.volumes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	// Kubernetes' binder looks only among volumes that offer every access
	// mode the claim asks for.
	var volumes []*corev1.PersistentVolume
	for _, v := range all {
		if !volumehelpers.CheckAccessModes(claim, v) {
			continue
		}
		if v.Spec.ClaimRef == nil && (v.Status.Phase == corev1.VolumePending || v.Status.Phase == "") {
			// A volume just created, whose phase this controller has not
			// moved to Available yet, is free all the same: passing it
			// over would bind a claim to a bigger volume depending on
			// which event came first.
			v = v.DeepCopy()
			v.Status.Phase = corev1.VolumeAvailable
		}
		volumes = append(volumes, v)
	}
	return volumehelpers.FindMatchingVolume(claim, volumes, node, nil, prebound, false)
}

// askProvisioner annotates claim for its class's provisioner and says so.
func (c *Controller) askProvisioner(ctx context.Context, claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) error {
	c.Recorder.Eventf(claim, corev1.EventTypeNormal, ReasonExternalProvisioning,
		"Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.", class.Provisioner)
	if claim.Annotations[volumehelpers.AnnStorageProvisioner] == class.Provisioner &&
		claim.Annotations[volumehelpers.AnnBetaStorageProvisioner] == class.Provisioner {
		return nil
	}
	claim = claim.DeepCopy()
	metav1.SetMetaDataAnnotation(&claim.ObjectMeta, volumehelpers.AnnStorageProvisioner, class.Provisioner)
	metav1.SetMetaDataAnnotation(&claim.ObjectMeta, volumehelpers.AnnBetaStorageProvisioner, class.Provisioner)
	_, err := c.Client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("annotate claim for provisioner %s: %w", class.Provisioner, err)
	}
	return nil
}

// syncPreboundClaim binds a claim to the volume it names, if that volume
// is free (or pre-bound to it) and fits.
func (c *Controller) syncPreboundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	volume, err := c.volumes.Get(claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		// The volume may be created later; the claim waits.
		return c.setClaimPhase(ctx, claim, corev1.ClaimPending)
	}
	if err != nil {
		return err
	}
	switch {
	case volume.Spec.ClaimRef == nil || volumehelpers.IsVolumeBoundToClaim(volume, claim):
		if why := mismatch(volume, claim); why != "" {
			c.Recorder.Eventf(claim, corev1.EventTypeWarning, ReasonFailedBinding, "Cannot bind to requested volume %q: %s", volume.Name, why)
			return c.setClaimPhase(ctx, claim, corev1.ClaimPending)
		}
		return c.bind(ctx, volume, claim)
	default:
		c.Recorder.Eventf(claim, corev1.EventTypeWarning, ReasonFailedBinding, "volume %q already bound to a different claim.", volume.Name)
		return c.setClaimPhase(ctx, claim, corev1.ClaimPending)
	}
}

// mismatch says why volume cannot serve claim, in Kubernetes' words, or
// nothing.
func mismatch(volume *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) string {
	request := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	size := volume.Spec.Capacity[corev1.ResourceStorage]
	switch {
	case size.Cmp(request) < 0:
		return "requested PV is too small"
	case volumehelpers.GetPersistentVolumeClass(volume) != volumehelpers.GetPersistentVolumeClaimClass(claim):
		return "storageClassName does not match"
	case volumehelpers.CheckVolumeModeMismatches(&claim.Spec, &volume.Spec):
		return "incompatible volumeMode"
	case !volumehelpers.CheckAccessModes(claim, volume):
		return "incompatible accessMode"
	}
	return ""
}

func (c *Controller) syncBoundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if claim.Spec.VolumeName == "" {
		c.lost(claim, "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
		return c.setClaimPhase(ctx, claim, corev1.ClaimLost)
	}
	volume, err := c.volumes.Get(claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		c.lost(claim, "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
		return c.setClaimPhase(ctx, claim, corev1.ClaimLost)
	}
	if err != nil {
		return err
	}
	switch {
	case volume.Spec.ClaimRef == nil, volumehelpers.IsVolumeBoundToClaim(volume, claim):
		// Bound, or the volume's half of the binding went missing:
		// (re)write both halves.
		return c.bind(ctx, volume, claim)
	default:
		if claim.Status.Phase != corev1.ClaimLost {
			c.Recorder.Event(claim, corev1.EventTypeWarning, ReasonClaimMisbound, "Two claims are bound to the same volume, this one is bound incorrectly")
		}
		return c.setClaimPhase(ctx, claim, corev1.ClaimLost)
	}
}

func (c *Controller) lost(claim *corev1.PersistentVolumeClaim, msg string) {
	if claim.Status.Phase != corev1.ClaimLost {
		c.Recorder.Event(claim, corev1.EventTypeWarning, ReasonClaimLost, msg)
	}
}

// bind writes both halves of a binding, the volume's first (so that a
// crash in between leaves a volume pre-bound to the claim, which the next
// sync completes, and never a claim pointing at a volume that another
// claim may take).
func (c *Controller) bind(ctx context.Context, volume *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	bound, dirty, err := volumehelpers.GetBindVolumeToClaim(volume, claim)
	if err != nil {
		return err
	}
	if dirty {
		updated, err := c.Client.CoreV1().PersistentVolumes().Update(ctx, bound, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("bind volume %s to claim %s/%s: %w", volume.Name, claim.Namespace, claim.Name, err)
		}
		bound = updated
	}
	if bound.Status.Phase != corev1.VolumeBound {
		bound = bound.DeepCopy()
		bound.Status.Phase, bound.Status.Reason, bound.Status.Message = corev1.VolumeBound, "", ""
		if _, err := c.Client.CoreV1().PersistentVolumes().UpdateStatus(ctx, bound, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("volume %s phase: %w", volume.Name, err)
		}
	}
	if claim.Spec.VolumeName != volume.Name || !metav1.HasAnnotation(claim.ObjectMeta, volumehelpers.AnnBindCompleted) {
		claim = claim.DeepCopy()
		if claim.Spec.VolumeName != volume.Name {
			// The controller chose this volume (not the user).
			claim.Spec.VolumeName = volume.Name
			metav1.SetMetaDataAnnotation(&claim.ObjectMeta, volumehelpers.AnnBoundByController, "yes")
		}
		metav1.SetMetaDataAnnotation(&claim.ObjectMeta, volumehelpers.AnnBindCompleted, "yes")
		updated, err := c.Client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("bind claim %s/%s to volume %s: %w", claim.Namespace, claim.Name, volume.Name, err)
		}
		claim = updated
	}
	size := volume.Spec.Capacity[corev1.ResourceStorage]
	have := claim.Status.Capacity[corev1.ResourceStorage]
	if claim.Status.Phase == corev1.ClaimBound && have.Cmp(size) == 0 && sameModes(claim.Status.AccessModes, volume.Spec.AccessModes) {
		return nil
	}
	claim = claim.DeepCopy()
	claim.Status.Phase = corev1.ClaimBound
	claim.Status.AccessModes = volume.Spec.AccessModes
	claim.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: size}
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("claim %s/%s status: %w", claim.Namespace, claim.Name, err)
	}
	return nil
}

func sameModes(a, b []corev1.PersistentVolumeAccessMode) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (c *Controller) setClaimPhase(ctx context.Context, claim *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase) error {
	if claim.Status.Phase == phase {
		return nil
	}
	claim = claim.DeepCopy()
	claim.Status.Phase = phase
	// A Lost claim keeps the capacity and access modes it had, as in
	// Kubernetes.
	_, err := c.Client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("claim %s/%s phase %s: %w", claim.Namespace, claim.Name, phase, err)
	}
	return nil
}

func (c *Controller) setVolumePhase(ctx context.Context, volume *corev1.PersistentVolume, phase corev1.PersistentVolumePhase, reason, msg string) (*corev1.PersistentVolume, error) {
	if volume.Status.Phase == phase && volume.Status.Reason == reason && volume.Status.Message == msg {
		return volume, nil
	}
	volume = volume.DeepCopy()
	volume.Status.Phase, volume.Status.Reason, volume.Status.Message = phase, reason, msg
	updated, err := c.Client.CoreV1().PersistentVolumes().UpdateStatus(ctx, volume, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return volume, nil
		}
		return nil, fmt.Errorf("volume %s phase %s: %w", volume.Name, phase, err)
	}
	return updated, nil
}

// syncVolume sets a volume's phase from its claim, and reclaims it when
// the claim is gone.
func (c *Controller) syncVolume(ctx context.Context, volume *corev1.PersistentVolume) error {
	ref := volume.Spec.ClaimRef
	if ref == nil || ref.UID == "" {
		// Free, or reserved by a user for a claim that may not exist yet.
		// This is also how an administrator makes a Released volume
		// available again: by removing its claimRef, or the claimRef's
		// uid to keep it for a claim of that name.
		_, err := c.setVolumePhase(ctx, volume, corev1.VolumeAvailable, "", "")
		return err
	}
	claim, err := c.claimOf(ctx, ref)
	if err != nil {
		return err
	}
	switch {
	case claim == nil:
		if volume.Status.Phase != corev1.VolumeReleased && volume.Status.Phase != corev1.VolumeFailed {
			if volume, err = c.setVolumePhase(ctx, volume, corev1.VolumeReleased, "", ""); err != nil {
				return err
			}
		}
		return c.reclaim(ctx, volume)
	case claim.Spec.VolumeName == "":
		// Pre-bound to a claim the binder has not bound yet: the claim's
		// sync completes it.
		if volume.Status.Phase == corev1.VolumePending || volume.Status.Phase == "" {
			_, err := c.setVolumePhase(ctx, volume, corev1.VolumeAvailable, "", "")
			return err
		}
		c.enqueueClaim(claim.Namespace, claim.Name)
		return nil
	case claim.Spec.VolumeName == volume.Name:
		_, err := c.setVolumePhase(ctx, volume, corev1.VolumeBound, "", "")
		return err
	default:
		// The claim is bound to another volume. A volume the controller
		// bound becomes free again; one a user pre-bound keeps its claim
		// name but not the stale UID.
		volume = volume.DeepCopy()
		if metav1.HasAnnotation(volume.ObjectMeta, volumehelpers.AnnBoundByController) {
			volume.Spec.ClaimRef = nil
			delete(volume.Annotations, volumehelpers.AnnBoundByController)
		} else {
			volume.Spec.ClaimRef.UID = ""
		}
		updated, err := c.Client.CoreV1().PersistentVolumes().Update(ctx, volume, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("unbind volume %s: %w", volume.Name, err)
		}
		_, err = c.setVolumePhase(ctx, updated, corev1.VolumeAvailable, "", "")
		return err
	}
}

// claimOf is the claim ref names if it is still the one with ref's UID.
// A claim missing from the cache is looked up in the apiserver: a volume
// just provisioned may be seen before its claim.
func (c *Controller) claimOf(ctx context.Context, ref *corev1.ObjectReference) (*corev1.PersistentVolumeClaim, error) {
	claim, err := c.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		claim, err = c.Client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if claim.UID != ref.UID {
		return nil, nil
	}
	return claim, nil
}

// reclaim applies a Released volume's reclaim policy.
func (c *Controller) reclaim(ctx context.Context, volume *corev1.PersistentVolume) error {
	switch volume.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimRetain:
		// The data stays; an administrator reuses or deletes the volume.
		return nil
	case corev1.PersistentVolumeReclaimRecycle:
		if volume.Status.Phase == corev1.VolumeFailed {
			return nil
		}
		const msg = "Recycle is not supported: delete the volume and create it again"
		c.Recorder.Event(volume, corev1.EventTypeWarning, ReasonVolumeFailedRecycle, msg)
		_, err := c.setVolumePhase(ctx, volume, corev1.VolumeFailed, ReasonVolumeFailedRecycle, msg)
		return err
	case corev1.PersistentVolumeReclaimDelete:
		if volume.DeletionTimestamp != nil {
			return nil
		}
		if by := volume.Annotations[volumehelpers.AnnDynamicallyProvisioned]; by != "" {
			// The provisioner that made it deletes the storage, then the
			// PV.
			c.Recorder.Eventf(volume, corev1.EventTypeNormal, ReasonVolumeDelete,
				"waiting for the volume to be deleted by its provisioner %q or manually by the system administrator", by)
			return nil
		}
		if volume.Status.Phase == corev1.VolumeFailed {
			return nil
		}
		msg := fmt.Sprintf("error getting deleter volume plugin for volume %q: no deletable volume plugin matched", volume.Name)
		c.Recorder.Event(volume, corev1.EventTypeWarning, ReasonVolumeFailedDelete, msg)
		_, err := c.setVolumePhase(ctx, volume, corev1.VolumeFailed, ReasonVolumeFailedDelete, msg)
		return err
	}
	return nil
}
