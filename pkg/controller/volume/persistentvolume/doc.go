// Package persistentvolume is Kubernetes' PersistentVolume binder
// controller: it binds PersistentVolumeClaims to PersistentVolumes, asks
// the provisioner of a claim's StorageClass for a volume when none fits,
// and releases volumes whose claims are gone.
//
// For a claim it picks, among the Available volumes of the claim's
// storageClassName whose labels match its selector, whose access modes
// include the claim's, whose volumeMode is the claim's and whose capacity
// is at least the request, the smallest one; a volume pre-bound to the
// claim (spec.claimRef, as a provisioner writes it) always wins, and a
// claim naming its volume (spec.volumeName) gets that one if it fits.
// Binding writes pv.spec.claimRef (pv.kubernetes.io/bound-by-controller
// when the controller chose), the PV phase Bound, claim.spec.volumeName
// with pv.kubernetes.io/bind-completed, and the claim's status (Bound,
// capacity, access modes).
//
// A claim whose class has volumeBindingMode WaitForFirstConsumer is not
// bound until the scheduler has chosen a node for its first pod
// (volume.kubernetes.io/selected-node); it then gets a volume whose node
// affinity admits that node. Unlike Kubernetes, where the scheduler binds
// such static volumes itself, the scheduler here only names the node and
// this controller binds: one writer of bindings. When no volume fits and
// the class exists, the claim is annotated with
// volume.kubernetes.io/storage-provisioner so that the class's
// provisioner (pkg/controller/volume/localpath) creates one.
//
// A bound volume whose claim is gone is Released; with reclaimPolicy
// Retain it stays so (its data kept), with Delete the provisioner that
// made it deletes the storage and then the PV (the controller only says
// it waits), and a Delete volume no provisioner made, or a Recycle one,
// is Failed. A bound claim whose volume is gone is Lost.
//
// It writes claims and volumes (spec, annotations, status) and Events
// with Kubernetes' reasons (FailedBinding, ProvisioningFailed,
// ExternalProvisioning, WaitForFirstConsumer, ClaimLost, ClaimMisbound,
// VolumeFailedDelete, VolumeFailedRecycle). It never creates or deletes
// volumes and never touches storage on nodes.
package persistentvolume
