package glusterfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// ProvisionerName is the provisioner of StorageClasses whose volumes
// this package makes.
const ProvisionerName = "minik8s.io/glusterfs"

// ClassName is the StorageClass Run creates.
const ClassName = "shared"

// Where nodes find the server: the Endpoints (and Service) Run publishes.
const (
	EndpointsNamespace = "kube-system"
	EndpointsName      = "glusterfs"
)

// Event reasons, as Kubernetes' external provisioners record them.
const (
	reasonProvisioning          = "Provisioning"
	reasonProvisioningSucceeded = "ProvisioningSucceeded"
	reasonProvisioningFailed    = "ProvisioningFailed"
	reasonVolumeFailedDelete    = "VolumeFailedDelete"
)

// Class is the StorageClass "shared": volumes every node can mount at
// once (ReadWriteMany), bound as soon as they are claimed (they have no
// node to wait for), deleted with their claim.
func Class() *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: ClassName},
		Provisioner:       ProvisionerName,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
}

// Provisioner makes and removes the directories of the class's volumes
// through Root, a mount of the whole volume.
type Provisioner struct {
	kit.Base
	// Root is the volume mounted (by Run) on this host.
	Root string

	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	classes  storagelisters.StorageClassLister
	deletion *kit.Loop
}

// NewProvisioner wires a provisioner to kc's claim, volume and class
// informers.
func NewProvisioner(kc *kit.Context, root string) (*Provisioner, error) {
	pvcInf, pvInf := kc.Factory.Core().V1().PersistentVolumeClaims(), kc.Factory.Core().V1().PersistentVolumes()
	scInf := kc.Factory.Storage().V1().StorageClasses()
	p := &Provisioner{
		Base: kc.NewBase("glusterfs-provisioner", "claim", 1, ProvisionerName),
		Root: root, claims: pvcInf.Lister(), volumes: pvInf.Lister(), classes: scInf.Lister(),
		deletion: kc.NewLoop("glusterfs-deleter", "volume", 1),
	}
	p.Loop.Reconcile = p.Reconcile
	p.deletion.Reconcile = p.ReconcileVolume
	return p, errors.Join(
		p.Loop.Watch(pvcInf.Informer(), loop.KeyHandler(p.Queue)),
		p.Loop.Watch(pvInf.Informer(), cache.ResourceEventHandlerFuncs{}),
		p.Loop.Watch(scInf.Informer(), cache.ResourceEventHandlerFuncs{}),
		p.deletion.Watch(pvInf.Informer(), loop.KeyHandler(p.deletion.Queue)),
	)
}

// Start runs both loops until ctx ends.
func (p *Provisioner) Start(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- p.deletion.Run(ctx) }()
	err := p.Loop.Run(ctx)
	return errors.Join(err, <-errc)
}

// Dir is a claim's directory in the volume.
func Dir(claim *corev1.PersistentVolumeClaim, pvName string) string {
	return claim.Namespace + "_" + claim.Name + "_" + pvName
}

// Reconcile provisions the claim key names when it is ours and has no
// volume: its directory, then the PV.
func (p *Provisioner) Reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	claim, err := p.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if claim.DeletionTimestamp != nil || claim.Spec.VolumeName != "" ||
		claim.Annotations[volumehelpers.AnnStorageProvisioner] != ProvisionerName {
		return nil
	}
	pvName := "pvc-" + string(claim.UID)
	if _, err := p.volumes.Get(pvName); err == nil {
		return nil
	}
	class, err := p.classes.Get(volumehelpers.GetPersistentVolumeClaimClass(claim))
	if apierrors.IsNotFound(err) {
		return nil // the binder reports it
	}
	if err != nil {
		return err
	}
	if class.Provisioner != ProvisionerName {
		return nil
	}
	if claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		p.Recorder.Eventf(claim, corev1.EventTypeWarning, reasonProvisioningFailed,
			"failed to provision volume with StorageClass %q: %s makes file systems, not block devices (volumeMode: Block)", class.Name, ProvisionerName)
		return nil
	}
	p.Recorder.Eventf(claim, corev1.EventTypeNormal, reasonProvisioning, "External provisioner is provisioning volume for claim %q", key)
	dir := Dir(claim, pvName)
	// Open to every user, as a new NFS export is: pods running as
	// non-root write here too.
	full := filepath.Join(p.Root, dir)
	if err := os.Mkdir(full, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		p.Recorder.Eventf(claim, corev1.EventTypeWarning, reasonProvisioningFailed, "failed to provision volume with StorageClass %q: %v", class.Name, err)
		return fmt.Errorf("make %s: %w", dir, err)
	}
	if err := os.Chmod(full, 0o777); err != nil {
		return err
	}
	pv := volumeFor(claim, class, pvName, dir)
	if _, err := p.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		p.Recorder.Eventf(claim, corev1.EventTypeWarning, reasonProvisioningFailed, "failed to provision volume with StorageClass %q: %v", class.Name, err)
		return fmt.Errorf("create volume %s: %w", pvName, err)
	}
	p.Recorder.Eventf(claim, corev1.EventTypeNormal, reasonProvisioningSucceeded, "Successfully provisioned volume %s", pvName)
	return nil
}

// volumeFor is the PV that serves claim from dir.
func volumeFor(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, pvName, dir string) *corev1.PersistentVolume {
	modes := claim.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pvName,
			Annotations: map[string]string{volumehelpers.AnnDynamicallyProvisioned: ProvisionerName},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: ptr.Deref(class.ReclaimPolicy, corev1.PersistentVolumeReclaimDelete),
			StorageClassName:              class.Name,
			VolumeMode:                    claim.Spec.VolumeMode,
			MountOptions:                  class.MountOptions,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Glusterfs: &corev1.GlusterfsPersistentVolumeSource{
				EndpointsName: EndpointsName, EndpointsNamespace: ptr.To(EndpointsNamespace),
				Path: Path{Volume: VolumeName, Dir: dir}.String(),
			}},
		},
	}
}

// Provisioned says whether this provisioner made pv.
func Provisioned(pv *corev1.PersistentVolume) bool {
	return pv.Annotations[volumehelpers.AnnDynamicallyProvisioned] == ProvisionerName
}

// ReconcileVolume deletes the volume key names when this provisioner
// made it and it is Released with reclaim policy Delete: the directory
// first, then the PV (as external provisioners delete storage before the
// object, so nothing is left behind unnamed).
func (p *Provisioner) ReconcileVolume(ctx context.Context, key string) error {
	pv, err := p.volumes.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !Provisioned(pv) || pv.Spec.Glusterfs == nil || pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return nil
	}
	path, err := ParsePath(pv.Spec.Glusterfs.Path)
	if err != nil || path.Volume != VolumeName || path.Dir == "" || strings.Contains(path.Dir, "/") {
		// A PV is an object anyone with access writes: only a directory
		// directly in our volume is ever removed.
		p.Recorder.Eventf(pv, corev1.EventTypeWarning, reasonVolumeFailedDelete, "path %q is not a directory of volume %s: not removed", pv.Spec.Glusterfs.Path, VolumeName)
		return nil
	}
	if err := os.RemoveAll(filepath.Join(p.Root, path.Dir)); err != nil {
		p.Recorder.Eventf(pv, corev1.EventTypeWarning, reasonVolumeFailedDelete, "remove %s: %v", path, err)
		return fmt.Errorf("remove %s: %w", path, err)
	}
	uid := pv.UID
	err = p.Client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete volume %s: %w", pv.Name, err)
	}
	p.Log.Info("deleted glusterfs volume", "volume", pv.Name, "dir", path.Dir)
	return nil
}
