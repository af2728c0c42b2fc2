// Package bench measures the apiserver's throughput and latency, and the
// raw etcd underneath it for comparison (`minik8s bench api`), and pod
// startup latency against a bare container start (`minik8s bench pods`),
// functions' cold and warm latency (`minik8s bench functions`) and the
// workflow engine's cost per state transition and runs/s (`minik8s bench
// workflows`: 20 Pass states, 20 warm Task states against the function
// called alone, and a 3-state workflow at 20 clients), and what each
// volume type costs in sequential throughput and small-file operations
// against the node's disk (`minik8s bench storage`).
//
// It is a benchmark, not a test: Run and RunPods print figures and never
// judge them.
//
// # What is measured
//
// For each concurrency (1, 16 and 64 clients by default) and each
// operation, a pool of that many workers issues requests back to back for
// a fixed duration (or a fixed number of requests per phase) and every
// request's latency is recorded:
//
//   - etcd put: a Put of a value as large as a stored ConfigMap, on a fresh
//     key, straight to etcd with go.etcd.io/etcd/client/v3 — the physical
//     limit a write through the apiserver cannot beat;
//   - create: ConfigMaps with a small payload, each under a new name;
//   - get: ConfigMaps of the list namespace, round robin;
//   - list: the whole list namespace (100 ConfigMaps by default);
//   - update: each worker replaces its own ConfigMap, with the
//     resourceVersion of its previous write (so never a conflict).
//
// The report gives ops/s, p50 and p99 per operation and concurrency, and
// for the writes (create, update) the ratio of their ops/s to etcd put's at
// the same concurrency.
//
// # Clients
//
// API requests go through the client-go typed clientset, with client-side
// rate limiting off (QPS < 0). Each worker pool shares one clientset, hence
// one http.Transport: over TLS client-go speaks HTTP/2, so the workers'
// requests are streams multiplexed on one TCP connection, as they would be
// for the controllers of one process. (client-go also caches transports by
// TLS configuration, so successive pools reuse that connection.) Likewise
// each etcd pool shares one clientv3 client: one gRPC connection.
// Bodies are JSON, client-go's default.
//
// # Targets
//
// By default Run starts a control plane in-process on a temporary data dir
// (embedded etcd, TLS apiserver, the controllers) and removes it at the
// end; the etcd figures then come from that embedded etcd. With a
// kubeconfig it measures a running cluster instead, in namespaces of its
// own that it deletes at the end, and measures etcd only when given its
// endpoints.
//
// # Pod startup
//
// RunPods (as root) starts a control plane in-process and one node in a
// network namespace of its own on the machine's containerd, with the image
// already present, and times pods from their Create call to the watch event
// that shows them Running and Ready: after one warm-up pod, N pods (30 by
// default), one at a time or a few at once. Each runs `sleep 3600`. The
// baseline is the same image started N times straight on containerd with
// its Go client, what `ctr run -d` does (a container with a new snapshot, a
// task, started, until it reports running), in a temporary containerd
// namespace; the ctr binary is also timed a few times when it is on PATH.
// The report gives p50, p90, p99, max and starts per second for each, and
// the pods' percentiles over the bare start's. Everything is removed at the
// end: pods (through the kubelet), node, control plane, network namespace,
// the containerd namespace and its cgroup.
//
// # Storage
//
// RunStorage (as root) starts the same control plane and node as RunPods,
// with the node's root dir in a directory of the caller's choice (the
// temporary directory by default): its filesystem is the one measured, and
// the report names it from the mount table. One busybox script runs in
// each place, --runs times: straight on the host in a directory of the
// node's root dir, next to where local-path puts volumes (the node's disk,
// the baseline), then in a pod on each volume type of storageVolumes, a
// table with one row per type saying how to build the pod's volume and the
// PersistentVolume and claim it needs: an emptyDir, a static hostPath
// PersistentVolume (Retain) with its claim, a claim of the default class
// local-path (WaitForFirstConsumer, Delete), and a ReadWriteMany claim of
// the class shared: the shared file system (pkg/glusterfs), which the
// benchmark runs for that row as `minik8s up` does, glusterfsd with its
// brick in a directory of its own next to the node's root dir (the same
// disk), listening on the loopback, where the node's kubelet mounts the
// volume with GlusterFS's FUSE client, presenting the node's certificate.
// Without GlusterFS's programs that row is left out, and the report says
// why. The pods run the busybox image, which is
// built from the host's static busybox, so the script, its shell and dd are
// the same binary in each place. Each run
//
//   - writes --size-mib MiB (256 by default) from /dev/zero with dd, 1 MiB
//     blocks, synced before dd ends (conv=fsync);
//   - reads them back with dd, 1 MiB blocks, with O_DIRECT (iflag=direct)
//     so from the disk, where the filesystem takes it; elsewhere through
//     the page cache, which the report marks;
//   - creates --files files of 4 KiB (2000 by default) with the shell's
//     echo, stats them (one find) and removes them (one rm -r): three
//     operations a file, none synced.
//
// busybox ts stamps each step's end with the seconds since the script
// began (gettimeofday, microseconds); the pods' stamps come back in their
// termination message, which is why --runs is at most 30. The report gives,
// for each place, the medians of the runs' write MB/s, read MB/s (MB is
// 10^6 bytes) and small-file ops/s, and each over the node disk's. After
// each volume type its pod, claim and volume are deleted and the volume's
// directory is checked gone (the node's local-path reaper or the GlusterFS
// provisioner removes a provisioned one, then its PersistentVolume; the
// benchmark the hostPath one), and a shared volume's mount on the node
// checked gone with its pod; at the end, the GlusterFS server, its mount
// and its directory, the node, the control plane, the network namespace
// and the node's root dir.
package bench
