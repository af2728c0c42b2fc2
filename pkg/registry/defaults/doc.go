// Package defaults holds the server-side defaulting that several kinds
// share: the pod spec of Pods and of every workload template
// (PodTemplateSpec, PodSpec: restart and DNS policies, container pull
// policies and probes, volumes, resource lists), claims (which StatefulSet
// templates carry), the roleRef and subjects of RBAC bindings, and the
// kinds minik8s does not serve yet
// (ReplicationController). A kind's own defaults live in its
// file in pkg/registry/kinds, which wires them as the Resource's Default.
//
// Every function is idempotent: calling it on an already-defaulted object
// leaves the object unchanged. None allocates anything (cluster IPs, node
// ports, UIDs, generated selectors): that is the job of the kind's file.
// The package knows no table and dispatches on no type.
package defaults
