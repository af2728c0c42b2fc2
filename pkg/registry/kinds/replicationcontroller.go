package kinds

import (
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ReplicationControllers: the core/v1 predecessor of ReplicaSets, with a
// map selector that, unlike a ReplicaSet's, may change. Scalable through
// /scale, whose selector is the map as a label selector. A delete without
// a propagationPolicy orphans the pods, as in Kubernetes (kubectl delete
// asks for Background).
func replicationControllers() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("replicationcontrollers"), Kind: "ReplicationController",
		Namespaced: true, ShortNames: []string{"rc"}, Categories: []string{"all"}, Status: true, OrphanByDefault: true,
		Scale: replicasScale(func(rc *corev1.ReplicationController) (**int32, int32, *metav1.LabelSelector) {
			return &rc.Spec.Replicas, rc.Status.Replicas, rcSelector(rc.Spec.Selector)
		}),
		Default:  defaulter(defaultReplicationController),
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validateReplicationController),
		Printer:  replicationControllerPrinter,
		FieldLabels: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.replicas": strconv.Itoa(int(obj.(*corev1.ReplicationController).Status.Replicas))}
		},
	}
}

// rcSelector is a ReplicationController's selector as a label selector;
// nil when it is empty.
func rcSelector(sel map[string]string) *metav1.LabelSelector {
	if len(sel) == 0 {
		return nil
	}
	return &metav1.LabelSelector{MatchLabels: maps.Clone(sel)}
}

// Defaults: as Kubernetes, an empty selector and empty labels are the
// template's labels.

func defaultReplicationController(rc *corev1.ReplicationController) {
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptr.To[int32](1)
	}
	if t := rc.Spec.Template; t != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = maps.Clone(t.Labels)
		}
		if len(rc.Labels) == 0 {
			rc.Labels = maps.Clone(t.Labels)
		}
		defaults.PodTemplateSpec(t)
	}
}

// Validation: the template is required and its labels must match the
// non-empty selector.

func validateReplicationController(rc *corev1.ReplicationController) field.ErrorList {
	specPath := field.NewPath("spec")
	allErrs := validation.NonnegativePtr32(rc.Spec.Replicas, specPath.Child("replicas"))
	allErrs = append(allErrs, validation.Nonnegative(int64(rc.Spec.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	if rc.Spec.Template == nil {
		return append(allErrs, field.Required(specPath.Child("template"), ""))
	}
	return append(allErrs, validation.ReplicatedTemplate(rcSelector(rc.Spec.Selector), rc.Spec.Template, specPath, "replicationcontroller")...)
}

// The table: a ReplicaSet's (replicasPrinter).

var replicationControllerPrinter = replicasPrinter(corev1.ReplicationControllerSpec{}.SwaggerDoc(), corev1.ReplicationControllerStatus{}.SwaggerDoc(),
	func(rc *corev1.ReplicationController) replicasRow {
		return replicasRow{rc.Name, rc.CreationTimestamp, rc.Spec.Replicas, rc.Status.Replicas, rc.Status.ReadyReplicas,
			rc.Spec.Template, labels.FormatLabels(rc.Spec.Selector)}
	})
