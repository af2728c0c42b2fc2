// Package node runs a real node: it makes sure containerd runs (starting
// it, as k3s does, when none answers), imports the built-in images, sets
// up the host's routes for the cluster and service ranges, and runs the
// kubelet with the local provider (containers on containerd, pods on CNI),
// and the node exporter on the node's InternalIP (Prometheus' node-exporter
// target).
// It owns start-up order on a node; the parts live in pkg/kubelet/...
package node
