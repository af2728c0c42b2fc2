// Package validation holds the server-side checks that several kinds
// share, and the generic entry points a registry.Resource calls after
// defaulting:
//
//	Object(obj, namespaced, nameRule, kind)                    on create
//	ObjectUpdate(obj, old, namespaced, nameRule, kind, update) on update
//
// Object checks ObjectMeta for every kind (the kind's name rule, labels,
// annotations, owner references, finalizers; namespaced objects must carry
// metadata.namespace, cluster-scoped ones must not), then the kind's own
// checks. ObjectUpdate adds the metadata update rules (name, namespace and
// uid immutable, resourceVersion required) and the kind's update rules.
// Both return a field.ErrorList whose entries carry Kubernetes' field paths
// and messages (for example "spec.containers[0].image: Required value"), so
// the caller can answer 422 with apierrors.NewInvalid(groupKind, name, errs).
//
// The shared checks are the pod spec of Pods and workload templates
// (PodTemplateSpec, PodSpec), selectors against templates, names, labels,
// ports, protocols, enums, resource lists, storage access modes, data keys
// of ConfigMaps and Secrets, the rules, roleRefs and subjects of the RBAC
// kinds, and ParseCSR, which the certificates controller uses too. A kind's own checks live in its file in
// pkg/registry/kinds; the package knows no table and dispatches on no type.
//
// It is a deliberately small re-implementation of upstream's
// pkg/apis/*/validation; it does not try to cover every field.
package validation
