package kinds

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ReplicaSets: scalable through /scale; the selector never changes.
func replicaSets() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: appsv1.SchemeGroupVersion.WithResource("replicasets"), Kind: "ReplicaSet",
		Namespaced: true, ShortNames: []string{"rs"}, Categories: []string{"all"}, Status: true,
		Scale: replicasScale(func(rs *appsv1.ReplicaSet) (**int32, int32, *metav1.LabelSelector) {
			return &rs.Spec.Replicas, rs.Status.Replicas, rs.Spec.Selector
		}),
		Default:        defaulter(defaultReplicaSet),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validateReplicaSet),
		ValidateUpdate: selectorImmutable(func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }),
		Printer:        replicaSetPrinter,
		FieldLabels: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.replicas": strconv.Itoa(int(obj.(*appsv1.ReplicaSet).Status.Replicas))}
		},
	}
}

// Defaults.

func defaultReplicaSet(rs *appsv1.ReplicaSet) {
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = ptr.To[int32](1)
	}
	defaults.PodTemplateSpec(&rs.Spec.Template)
}

// Validation.

func validateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	specPath := field.NewPath("spec")
	allErrs := validation.NonnegativePtr32(rs.Spec.Replicas, specPath.Child("replicas"))
	allErrs = append(allErrs, validation.ReplicatedTemplate(rs.Spec.Selector, &rs.Spec.Template, specPath, "replicaset")...)
	allErrs = append(allErrs, validation.Nonnegative(int64(rs.Spec.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	return allErrs
}

// The table.

var replicaSetPrinter = printers.Typed(
	append([]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Desired", "integer", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
		printers.Column("Current", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
		printers.Column("Ready", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
		printers.AgeColumn(),
	}, printers.TemplateColumns(appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"])...),
	func(rs *appsv1.ReplicaSet, now time.Time) []interface{} {
		names, images := printers.ContainerCells(rs.Spec.Template.Spec.Containers)
		return []interface{}{
			rs.Name,
			int64(printers.DerefInt32(rs.Spec.Replicas, 1)),
			int64(rs.Status.Replicas),
			int64(rs.Status.ReadyReplicas),
			printers.Age(rs.CreationTimestamp, now),
			names,
			images,
			metav1.FormatLabelSelector(rs.Spec.Selector),
		}
	},
)
