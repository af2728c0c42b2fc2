// Package local is the kubelet provider that runs pods as containers on
// this machine: a sandbox per pod from the container runtime
// (kubelet/runtime), an address on the pod network from CNI
// (kubelet/network), volumes, environment, init and app containers with
// restart policies and back-off, probes, postStart and preStop hooks
// (lifecycle.go: a stop runs the hook within the grace period, sidecars
// stop after the app containers), and a Kubernetes-shaped status.
//
// # One worker per pod
//
// Every pod has a worker goroutine that reconciles level by level, every
// second and whenever something changes (a spec update, a probe result):
// it observes the pod's sandbox and containers through the runtime's
// ListContainers (one relist shared by all workers, like the kubelet's
// PLEG), moves the pod one step toward its spec — create the sandbox and
// network, write volumes, run init containers in order, start, restart or
// kill app containers, start ephemeral containers once (in their target's
// process namespace) — and computes the pod's status from what it saw.
// When that status changes, the callback given to NotifyPods hears of it.
//
// Everything the worker needs to pick up after a restart is in containerd:
// the runtime labels sandboxes and containers with the pod's identity, and
// this package adds the container's restart count, whether it is an init
// container, and the image its spec named. GetPods rebuilds the pods from
// those labels, so a restarted kubelet adopts them; the kubelet then hands
// over the full spec through UpdatePod, and containers whose image still
// matches keep running.
//
// # Stats
//
// Summary (kubelet.StatsProvider, stats.go) reads each running pod's
// cgroup and its running containers' through the runtime's Stats, and the
// machine's totals from /proc/stat and /proc/meminfo. CPU usage is the
// change in cumulative cpu time since the previous summary, per cgroup
// (stats.CPUTracker); a cgroup without a recent sample is read twice, a
// second apart, so the first `kubectl top` already has rates. Memory is
// the working set (usage less inactive page cache).
//
// # Files
//
// Under Config.RootDir:
//
//	pods/<uid>/volumes/kubernetes.io~<plugin>/<volume>   emptyDir, configMap, secret, downwardAPI, projected
//	pods/<uid>/etc-hosts, resolv.conf, hostname          mounted into every container
//	pods/<uid>/containers/<name>/<restart>               termination message files
//	logs/<ns>_<name>_<uid>/<container>/<restart>.log     container output (CRI format, written by the runtime)
//
// configMap, secret, downwardAPI and projected volumes are written the way
// Kubernetes' atomic writer does: a timestamped directory, a "..data"
// symlink swapped atomically, and one symlink per visible file, so that a
// container sees an update all at once. They are written again every
// minute and at once when the pod's spec, labels or annotations change.
// A projected podCertificate source holds the pod's private key and the
// certificate its signer issued (kubelet/podcert makes the request and
// keeps the key); until the first one is issued the pod waits with a
// FailedMount event, and a refreshed one is written at the next rewrite.
// An emptyDir of medium Memory is a tmpfs mounted on its directory
// (emptydir.go), unmounted when the pod finishes or goes.
//
// A persistentVolumeClaim volume mounts its bound hostPath or local
// volume. Until the claim is Bound (or while it is being deleted) the pod
// stays Pending with a FailedMount event saying so. The directory of a
// local volume made by the minik8s.io/local-path provisioner is created
// here on first mount (the control plane cannot reach this disk); the
// node's reaper (pkg/kubelet/localpath) removes it.
//
// The package owns the pod workers, the files above and the pods' CNI
// attachments. It does not touch the pods' API objects (the kubelet writes
// status and deletes them) and reads ConfigMaps, Secrets, Services, claims
// and volumes only to build volumes and environment, which kubelet/podenv
// resolves.
package local
