// Package runtime is the kubelet's container runtime: the Runtime interface
// its pod workers call (image, sandbox, container, exec, stats), and its
// implementation on containerd, Containerd.
//
// A pod is a sandbox, a pause container that holds the pod's network, IPC
// and UTS namespaces, plus one container per spec container that joins them,
// each in its own cgroup under the pod's (cgroupfs, v1 or v2). Everything it
// creates lives in one containerd namespace ("minik8s") and carries labels
// naming its pod (and, with Config.Node, its node, so several nodes on one
// machine share the namespace and the images without seeing each other's
// pods), so a restarted kubelet finds its pods again from containerd
// alone (ListContainers) and New re-attaches the log copiers of running
// containers. Optional extras sit beside Runtime as their own interfaces:
// Attacher (kubectl attach) and Versioner (the node's runtime version).
//
// Decisions: a pod's network namespace is created by the runtime and bound
// under /var/run/netns before the pause container starts (as containerd's
// CRI does), so CNI can run against it and tear it down after the pause
// process is gone; loopback is brought up there, so containers share a
// working localhost without CNI. A container's exit is recorded in its
// labels and its task deleted as soon as it exits, so no shim lingers for
// dead containers and the exit survives a kubelet restart. Stdout and
// stderr are copied by this process from the shim's fifos; during a
// kubelet restart the fifo buffers them (a container that writes more
// than 64KiB meanwhile waits).
//
// It owns: containerd containers, tasks and snapshots in its namespace, the
// pods' network namespace files (/var/run/netns/minik8s-<sandbox>), the pods'
// cgroups and the log files the kubelet names (written in the CRI format).
// It does not own: pod networking beyond bringing loopback up (CNI is the
// network package's), volumes (the kubelet prepares host paths and passes
// bind mounts), log rotation and file layout, or any API object.
package runtime
