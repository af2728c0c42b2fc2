// Package authz owns authorization: whether the user authentication
// found (pkg/apiserver/authn) may do what a request asks. It is
// Kubernetes' model:
//
//   - Attributes describe a request: user, verb, and either the resource
//     (API group, namespace, resource, subresource, name) or the
//     non-resource path;
//   - an Authorizer answers Allow, Deny or NoOpinion, and Union asks
//     several in turn until one decides; no decision is a denial;
//   - Masters allows the group system:masters everything (the admin
//     credential and the control plane's own components);
//   - Node is Kubernetes' Node authorizer and NodeRestriction rolled into
//     one: a kubelet (system:node:<name> in system:nodes) reads the
//     Secrets, ConfigMaps, claims, service accounts and their tokens of
//     the pods bound to it only, and the PodCertificateRequests made for
//     it, writes only its own Node, Lease and pods' status;
//   - RBAC evaluates Roles, ClusterRoles and their bindings
//     (rbac.authorization.k8s.io/v1) from informers;
//   - Policy is the default roles and bindings Kubernetes bootstraps,
//     reconciled at every start (Reconcile).
//
// A denial is a 403 Status whose message names the user and what was
// refused, as kube-apiserver words it.
package authz
