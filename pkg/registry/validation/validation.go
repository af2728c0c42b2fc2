package validation

import (
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// Validate checks an object that is about to be created. namespaced says
// whether the object's kind is namespace-scoped.
func Validate(obj runtime.Object, namespaced bool) field.ErrorList {
	if isNil(obj) {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("nil object"))}
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		// Not an object with metadata: nothing we know how to check.
		return nil
	}
	allErrs := apimachineryvalidation.ValidateObjectMetaAccessor(accessor, namespaced, nameRule(obj), field.NewPath("metadata"))
	allErrs = append(allErrs, validateKind(obj)...)
	return dedupe(allErrs)
}

// ValidateUpdate checks an update of old to obj: everything Validate checks
// on obj, the metadata update rules and the kind's immutability rules.
// The caller must have filled obj's resourceVersion (from the stored object
// for unconditional updates), as upstream does before validating.
func ValidateUpdate(obj, old runtime.Object, namespaced bool) field.ErrorList {
	if isNil(obj) || isNil(old) {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("nil object"))}
	}
	if reflect.TypeOf(obj) != reflect.TypeOf(old) {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("cannot update a %T with a %T", old, obj))}
	}
	allErrs := Validate(obj, namespaced)
	newMeta, err1 := meta.Accessor(obj)
	oldMeta, err2 := meta.Accessor(old)
	if err1 == nil && err2 == nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateObjectMetaAccessorUpdate(newMeta, oldMeta, field.NewPath("metadata"))...)
	}
	allErrs = append(allErrs, validateKindUpdate(obj, old)...)
	return dedupe(allErrs)
}

// nameRule returns the metadata.name rule of the object's kind.
func nameRule(obj runtime.Object) apimachineryvalidation.ValidateNameFunc {
	switch obj.(type) {
	case *corev1.Namespace, *corev1.Service:
		return apimachineryvalidation.NameIsDNSLabel
	case *corev1.Event, *autoscalingv2.HorizontalPodAutoscaler, *corev1.PersistentVolume:
		return pathSegmentName
	case *corev1.Pod, *corev1.PodTemplate, *corev1.Node, *corev1.Endpoints, *corev1.ConfigMap,
		*corev1.Secret, *corev1.ServiceAccount, *corev1.PersistentVolumeClaim, *corev1.ReplicationController,
		*appsv1.Deployment, *appsv1.ReplicaSet, *appsv1.DaemonSet, *appsv1.StatefulSet,
		*batchv1.Job, *batchv1.CronJob, *discoveryv1.EndpointSlice, *coordinationv1.Lease,
		*storagev1.StorageClass, *networkingv1.Ingress, *networkingv1.IngressClass, *networkingv1.NetworkPolicy,
		*minik8sv1.DNSRecord:
		return apimachineryvalidation.NameIsDNSSubdomain
	default:
		return pathSegmentName
	}
}

// validateKind dispatches to the create-time spec checks of a kind.
func validateKind(obj runtime.Object) field.ErrorList {
	switch o := obj.(type) {
	case *corev1.Namespace:
		return validateNamespace(o)
	case *corev1.Node:
		return validateNode(o)
	case *corev1.Pod:
		return validatePod(o)
	case *corev1.PodTemplate:
		return validatePodTemplateSpec(&o.Template, field.NewPath("template"))
	case *corev1.Service:
		return validateService(o)
	case *corev1.Endpoints:
		return validateEndpoints(o)
	case *corev1.ConfigMap:
		return validateConfigMap(o)
	case *corev1.Secret:
		return validateSecret(o)
	case *corev1.Event:
		return validateEvent(o)
	case *corev1.ServiceAccount:
		return validateServiceAccount(o)
	case *corev1.PersistentVolume:
		return validatePersistentVolume(o)
	case *corev1.PersistentVolumeClaim:
		return validatePersistentVolumeClaim(o)
	case *appsv1.Deployment:
		return validateDeployment(o)
	case *appsv1.ReplicaSet:
		return validateReplicaSet(o)
	case *batchv1.Job:
		return validateJob(o)
	case *batchv1.CronJob:
		return validateCronJob(o)
	case *autoscalingv2.HorizontalPodAutoscaler:
		return validateHPA(o)
	case *discoveryv1.EndpointSlice:
		return validateEndpointSlice(o)
	case *coordinationv1.Lease:
		return validateLease(o)
	case *storagev1.StorageClass:
		return validateStorageClass(o)
	case *networkingv1.Ingress:
		return validateIngress(o)
	case *certificatesv1.CertificateSigningRequest:
		return validateCSR(o)
	case *minik8sv1.DNSRecord:
		return validateDNSRecord(o)
	}
	return nil
}

// validateKindUpdate dispatches to the update-only checks of a kind; both
// objects have the same Go type.
func validateKindUpdate(obj, old runtime.Object) field.ErrorList {
	switch o := obj.(type) {
	case *corev1.Pod:
		return validatePodUpdate(o, old.(*corev1.Pod))
	case *corev1.Node:
		return validateNodeUpdate(o, old.(*corev1.Node))
	case *corev1.Service:
		return validateServiceUpdate(o, old.(*corev1.Service))
	case *corev1.ConfigMap:
		return validateConfigMapUpdate(o, old.(*corev1.ConfigMap))
	case *corev1.Secret:
		return validateSecretUpdate(o, old.(*corev1.Secret))
	case *corev1.PersistentVolume:
		return validatePersistentVolumeUpdate(o, old.(*corev1.PersistentVolume))
	case *corev1.PersistentVolumeClaim:
		return validatePersistentVolumeClaimUpdate(o, old.(*corev1.PersistentVolumeClaim))
	case *appsv1.Deployment:
		return validateSelectorUpdate(o.Spec.Selector, old.(*appsv1.Deployment).Spec.Selector, field.NewPath("spec", "selector"))
	case *appsv1.ReplicaSet:
		return validateSelectorUpdate(o.Spec.Selector, old.(*appsv1.ReplicaSet).Spec.Selector, field.NewPath("spec", "selector"))
	case *batchv1.Job:
		return validateJobUpdate(o, old.(*batchv1.Job))
	case *discoveryv1.EndpointSlice:
		return validateEndpointSliceUpdate(o, old.(*discoveryv1.EndpointSlice))
	case *storagev1.StorageClass:
		return validateStorageClassUpdate(o, old.(*storagev1.StorageClass))
	case *certificatesv1.CertificateSigningRequest:
		return validateCSRUpdate(o, old.(*certificatesv1.CertificateSigningRequest))
	}
	return nil
}

func isNil(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// dedupe drops errors that were reported twice by overlapping checks,
// keeping the first occurrence's position.
func dedupe(errs field.ErrorList) field.ErrorList {
	if len(errs) < 2 {
		return errs
	}
	seen := make(map[string]bool, len(errs))
	out := errs[:0]
	for _, e := range errs {
		key := string(e.Type) + "\x00" + e.Error()
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, e)
	}
	return out
}
