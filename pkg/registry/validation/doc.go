// Package validation holds the server-side validation of the kinds the
// apiserver serves: one function per kind for its fields (Pod, Service,
// ...) and one for what its updates may not change (PodUpdate, ...), the
// checks they share (pod templates, selectors, ports, names), and the
// generic entry points the registry.Resource calls after defaulting:
//
//	Object(obj, namespaced, nameRule, kind)                    on create
//	ObjectUpdate(obj, old, namespaced, nameRule, kind, update) on update
//
// A kind's file in pkg/registry/kinds picks its name rule and functions.
// Both return a field.ErrorList whose entries carry Kubernetes' field paths
// and messages (for example "spec.containers[0].image: Required value"), so
// the caller can answer 422 with apierrors.NewInvalid(groupKind, name, errs).
// namespaced says whether the kind is namespace-scoped: namespaced objects
// must carry metadata.namespace, cluster-scoped ones must not.
//
// Coverage: ObjectMeta for every kind (name rule per kind, labels,
// annotations, owner references, finalizers), plus the spec checks users meet
// in practice for core/v1 Namespace, Node, Pod, PodTemplate, Service,
// Endpoints, ConfigMap, Secret, Event, ServiceAccount, PersistentVolume,
// PersistentVolumeClaim; apps/v1 Deployment, ReplicaSet; batch/v1 Job,
// CronJob; autoscaling/v2 HorizontalPodAutoscaler; discovery.k8s.io/v1
// EndpointSlice; coordination.k8s.io/v1 Lease; storage.k8s.io/v1
// StorageClass; networking.k8s.io/v1 Ingress; certificates.k8s.io/v1
// CertificateSigningRequest (the request's PEM and signature, signer name,
// usages, conditions, the issued certificate's PEM). Kinds without
// checks of their own get ObjectMeta checks only, with path-segment name
// rules (the rule RBAC kinds use) unless their file picks another.
//
// ObjectUpdate runs everything Object does plus the metadata update
// rules (name/namespace/uid immutable, resourceVersion required) and the
// per-kind immutability rules: Pod spec (except images, activeDeadlineSeconds,
// added tolerations, removed scheduling gates), Deployment/ReplicaSet/Job
// selectors, Job template, Service clusterIP, PVC spec (except storage
// growth, first binding), PV source, StorageClass parameters, immutable
// ConfigMaps/Secrets, Secret type, EndpointSlice addressType, Node podCIDR,
// CSR spec, issued certificate and Approved/Denied conditions. CronJob
// schedules and time zones are parsed by pkg/cronschedule, as the CronJob
// controller parses them.
//
// It is a deliberately small re-implementation of upstream's
// pkg/apis/*/validation; it does not try to cover every field.
package validation
