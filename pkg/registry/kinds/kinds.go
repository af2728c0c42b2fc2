package kinds

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Builtin is the table of Kubernetes kinds minik8s serves, in the order
// discovery lists them.
func Builtin() []*registry.Resource {
	return []*registry.Resource{
		namespaces(), nodes(), pods(), services(), endpoints(), configMaps(), secrets(), events(),
		serviceAccounts(), persistentVolumes(), persistentVolumeClaims(),
		deployments(), replicaSets(), replicationControllers(), daemonSets(), jobs(), cronJobs(), horizontalPodAutoscalers(), horizontalPodAutoscalersV1(),
		endpointSlices(), leases(), storageClasses(), ingresses(), certificateSigningRequests(),
		controllerRevisions(), statefulSets(),
		clusterRoleBindings(), clusterRoles(), roleBindings(), roles(),
		podTemplates(), priorityClasses(), runtimeClasses(), ingressClasses(),
		csiDrivers(), csiNodes(), csiStorageCapacities(), volumeAttachments(), volumeAttributesClasses(),
		clusterTrustBundles(), podCertificateRequests(), serviceCIDRs(), ipAddresses(), flowSchemas(), priorityLevelConfigurations(),
		storageVersionMigrations(), customResourceDefinitions(), podDisruptionBudgets(), resourceQuotas(), limitRanges(),
		eventsAPIEvents(), deviceClasses(), deviceTaintRules(), resourceClaims(), resourceClaimTemplates(), resourceSlices(),
		validatingAdmissionPolicies(), validatingAdmissionPolicyBindings(), validatingWebhookConfigurations(), mutatingWebhookConfigurations(),
		mutatingAdmissionPolicies(), mutatingAdmissionPolicyBindings(),
		apiServices(),
	}
}

// Minik8s is the table of minik8s' own kinds (group minik8s.io).
func Minik8s() []*registry.Resource {
	return []*registry.Resource{dnsRecords(), functions(), workflows(), workflowRuns(), triggers()}
}

// All is every resource minik8s serves: Kubernetes' kinds, then its own.
func All() []*registry.Resource {
	return append(Builtin(), Minik8s()...)
}

// The adapters below turn a function over one kind's Go type into the
// registry's hooks over runtime.Object.

func defaulter[T runtime.Object](f func(T)) func(runtime.Object) {
	return func(obj runtime.Object) { f(obj.(T)) }
}

func validator[T runtime.Object](f func(T) field.ErrorList) func(runtime.Object) field.ErrorList {
	return func(obj runtime.Object) field.ErrorList { return f(obj.(T)) }
}

func updateValidator[T runtime.Object](f func(obj, old T) field.ErrorList) func(obj, old runtime.Object) field.ErrorList {
	return func(obj, old runtime.Object) field.ErrorList { return f(obj.(T), old.(T)) }
}

// replicas is a replica count, 1 when unset.
func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// replicasScale serves /scale from the spec.replicas, status.replicas and
// spec.selector fields points to.
func replicasScale[T runtime.Object](fields func(T) (spec **int32, status int32, selector *metav1.LabelSelector)) *registry.ScaleAccessor {
	return &registry.ScaleAccessor{
		Get: func(obj runtime.Object) (int32, int32, *metav1.LabelSelector) {
			spec, status, selector := fields(obj.(T))
			return replicas(*spec), status, selector
		},
		Set: func(obj runtime.Object, n int32) {
			spec, _, _ := fields(obj.(T))
			*spec = &n
		},
	}
}

// selectorImmutable is the update rule of workloads whose spec.selector
// never changes.
func selectorImmutable[T runtime.Object](selector func(T) *metav1.LabelSelector) validation.KindUpdateFunc {
	return updateValidator(func(obj, old T) field.ErrorList {
		return validation.SelectorUpdate(selector(obj), selector(old), field.NewPath("spec", "selector"))
	})
}
