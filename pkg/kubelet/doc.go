// Package kubelet is the node agent: it registers its Node, keeps it alive
// with a Lease heartbeat and node conditions, and makes the pods bound to
// the node real through a Provider — the pod lifecycle interface of the
// virtual-kubelet design. Providers decide what "running a pod" means:
// containerd with CNI on a real node, nothing at all on a simulated one
// (kubelet/simulated), a batch system for a virtual node. The kubelet owns
// the pod's API object (status, final deletion); providers own the pod's
// execution. It reads through an informer and writes through the API.
//
// With Config.ServerAddress it also serves Kubernetes' kubelet HTTPS API
// (server.go) that the apiserver proxies pods/log, exec, attach and
// portforward to, through optional provider interfaces (streaming.go),
// and the Summary API (/stats/summary) that the apiserver's metrics.k8s.io
// API reads, through StatsProvider (summary.go).
package kubelet
