// Package image makes container images without a registry: it writes OCI
// image tarballs from files on this machine (the built-in busybox from
// Debian's busybox-static, the pause image from a generated static program)
// and imports tarballs into containerd.
//
// It owns image content only. Pulling from registries, pull policies and
// image events belong to the kubelet's runtime (pkg/kubelet/runtime); it
// never creates containers.
package image
