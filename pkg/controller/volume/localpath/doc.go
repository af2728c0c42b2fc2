// Package localpath is the control plane's half of the minik8s.io/local-path
// provisioner, after rancher's local-path-provisioner: for a claim that
// the binder (pkg/controller/volume/persistentvolume) handed to
// minik8s.io/local-path (volume.kubernetes.io/storage-provisioner) it
// creates a PersistentVolume
//
//   - named pvc-<claim uid>, annotated pv.kubernetes.io/provisioned-by;
//   - spec.local.path <root>/<namespace>_<claim>_<pv>, where <root> is
//     what the node publishes in its minik8s.io/local-path-root
//     annotation (DefaultRoot when it publishes none; nodes sharing one
//     host each have their own);
//   - required node affinity to that node (kubernetes.io/hostname), the
//     claim's request as capacity, its access and volume modes, a
//     claimRef to it (so the binder binds the two), and the class's
//     reclaim policy.
//
// The node is the one the scheduler chose (volume.kubernetes.io/selected-node)
// for a WaitForFirstConsumer class; for an Immediate class, the Ready
// node with the fewest local-path volumes. A selected node that no longer
// exists is removed from the claim, so that the scheduler chooses again.
//
// The directory itself is not made here: the control plane cannot reach
// a node's disk. The kubelet creates it when it first mounts the claim,
// and the node's local-path reaper (pkg/kubelet/localpath) removes it and
// then deletes the PV once the volume is Released with reclaim policy
// Delete. This package only creates PVs.
package localpath
