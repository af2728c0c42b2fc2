// Package registry runs the cluster's image registry: the real
// distribution registry (github.com/distribution/distribution/v3,
// installed by make deps) as a child process under pkg/supervisor, as the
// gateway runs nginx. Function images are pushed to it by
// pkg/serverless/build and nodes' containerd pull from it, over plain
// HTTP and without authentication: it is meant to be reached only on the
// cluster's own networks.
//
// It owns Config.Dir: config.yml (generated on every start), data/ (the
// registry's storage, blob deletion enabled so that a deleted function's
// manifests go), registry.log (the registry's output) and the pid file
// registry.supervisor.pid, by which a restart ends a registry an earlier
// run left behind. It does not publish the Service (ServiceName in
// kube-system) that leads pods and nodes to it: the caller does, with
// pkg/hostservice. It never garbage-collects blobs.
package registry
