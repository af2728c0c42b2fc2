package printers

// Deployments.

// ReplicaSets.

// DaemonSets: served, see pkg/registry/kinds/daemonset.go.

// StatefulSets: served, see pkg/registry/kinds/statefulset.go.

// Jobs.

// CronJobs.
