// Package controlplane assembles and runs the control plane of a cluster:
// etcd (embedded or external), the cluster's certificates, the apiserver on
// its TLS port, the node join token (<data-dir>/node-token) and the
// controllers. It owns start-up order and the data directory's layout; the
// parts themselves live in their own packages.
package controlplane
