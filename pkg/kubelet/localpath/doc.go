// Package localpath is the node's half of the minik8s.io/local-path
// provisioner (the control plane's half, pkg/controller/volume/localpath,
// creates the PVs). The control plane cannot reach a node's disk, so the
// node does what touches it:
//
//   - it publishes the directory its local-path volumes live under in
//     the Node's minik8s.io/local-path-root annotation, so that volumes
//     are made under each node's own root (several nodes may share one
//     host);
//   - it deletes the volumes of its node that the provisioner made, once
//     they are Released with reclaim policy Delete: first the directory,
//     then the PV, as Kubernetes' external provisioners delete the
//     storage before the object. A path outside the node's root is never
//     removed (the PV is left, with a warning): a PV is an API object
//     anyone with access may write.
//
// The kubelet's local provider creates a volume's directory when it
// first mounts it. A volume whose node is gone for good stays Released;
// an administrator deletes it.
package localpath
