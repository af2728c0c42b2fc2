// Package defaults holds the server-side defaulting of the kinds the
// apiserver serves, one function per kind (Pod, Service, Deployment, ...)
// and the parts they share (PodTemplateSpec). A kind's file in
// pkg/registry/kinds wires its function as the Resource's Default, which
// the apiserver calls on the decoded object before validation on both
// create and update. The functions fill the values the
// real kube-apiserver fills through its versioned defaulting functions (for
// example Pod restartPolicy, container imagePullPolicy, Service type and
// targetPort, Deployment strategy), plus a few values that upstream applies
// at the same point of the request through conversion or built-in admission
// plugins and that clients expect to see in stored objects:
//
//   - Pod: serviceAccountName "default" (ServiceAccount admission), priority 0
//     and preemptionPolicy (Priority admission), the not-ready/unreachable
//     NoExecute tolerations of 300s (DefaultTolerationSeconds admission),
//     status.phase Pending and status.qosClass (pod strategy), and the
//     deprecated spec.serviceAccount mirror of spec.serviceAccountName.
//   - Secret: stringData is merged into data and cleared (v1 conversion).
//   - Namespace: spec.finalizers ["kubernetes"] on namespaces that are not
//     being deleted (namespace strategy) and the
//     kubernetes.io/metadata.name label.
//   - Service: ipFamilyPolicy SingleStack and ipFamilies (service registry).
//   - CertificateSigningRequest: a condition's status "True" when empty.
//
// Each is idempotent: calling it on an already-defaulted object leaves the
// object unchanged. None allocates anything (cluster IPs, node ports, UIDs,
// generated selectors): that is the job of the kind's file in
// pkg/registry/kinds.
package defaults
