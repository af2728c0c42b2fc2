package kinds

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
)

// Builtin is the table of Kubernetes kinds minik8s serves, in the order
// discovery lists them.
func Builtin() []*registry.Resource {
	return []*registry.Resource{
		namespaces(), nodes(), pods(), services(), endpoints(), configMaps(), secrets(), events(),
		serviceAccounts(), persistentVolumes(), persistentVolumeClaims(),
		deployments(), replicaSets(), jobs(), cronJobs(), horizontalPodAutoscalers(),
		endpointSlices(), leases(), storageClasses(), ingresses(), certificateSigningRequests(),
	}
}

// Minik8s is the table of minik8s' own kinds (group minik8s.io).
func Minik8s() []*registry.Resource {
	return []*registry.Resource{dnsRecords()}
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
