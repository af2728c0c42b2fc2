// Package glusterfs is the cluster's shared file system: volumes that
// pods on every node mount at once (ReadWriteMany), for a kernel that has
// FUSE but no NFS client.
//
// The server is GlusterFS's brick daemon, glusterfsd, run by us (like
// the gateway's nginx, pkg/supervisor) on the control-plane host with a
// volume file we write: one volume, "minik8s", stored in a directory,
// served over TCP with TLS. Only certificates of the cluster's CA get in,
// and only those of nodes (CN system:node:*) and of the provisioner: the
// data is not open to whoever reaches the port. There is no glusterd, no
// peer pool and no gluster CLI: they manage multi-brick volumes across
// servers, which one server with one brick does not need.
//
// A PersistentVolume names a directory of that volume the Kubernetes way,
// spec.glusterfs: endpoints (an Endpoints object, by default
// kube-system/glusterfs, which Run publishes with the server's address and
// port) and path "<volume>/<directory>". Nodes mount it with GlusterFS's
// FUSE client, glusterfs, from a client volume file (Mount); the kubelet
// keeps one mount per volume per node, shared by its pods
// (pkg/kubelet/local).
//
// The provisioner (Provisioner) serves the StorageClass "shared"
// (provisioner minik8s.io/glusterfs): for each claim it makes a directory
// through a mount of its own and a PV naming it; once a PV it made is
// Released under reclaim policy Delete it removes the directory, then the
// PV.
//
// This package owns the server's files under its directory (the brick,
// volume file, certificates, logs and the provisioner's mount point), the
// Service kube-system/glusterfs and the StorageClass "shared" (created
// when absent, never changed after).
package glusterfs
