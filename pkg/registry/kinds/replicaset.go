package kinds

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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

// The table, the same for ReplicaSets and ReplicationControllers.

var replicaSetPrinter = replicasPrinter(appsv1.ReplicaSetSpec{}.SwaggerDoc(), appsv1.ReplicaSetStatus{}.SwaggerDoc(),
	func(rs *appsv1.ReplicaSet) replicasRow {
		return replicasRow{rs.Name, rs.CreationTimestamp, rs.Spec.Replicas, rs.Status.Replicas, rs.Status.ReadyReplicas,
			&rs.Spec.Template, metav1.FormatLabelSelector(rs.Spec.Selector)}
	})

// replicasRow is what a row of replicasPrinter shows.
type replicasRow struct {
	name           string
	created        metav1.Time
	desired        *int32
	current, ready int32
	template       *corev1.PodTemplateSpec
	selector       string
}

// replicasPrinter is kubectl's table of a kind of replicated pods: NAME
// DESIRED CURRENT READY AGE and, wide, CONTAINERS IMAGES SELECTOR, the
// columns described by the kind's spec and status docs.
func replicasPrinter[T any, P interface {
	*T
	runtime.Object
}](specDoc, statusDoc map[string]string, row func(P) replicasRow) printers.Printer {
	return printers.Typed(
		append([]metav1.TableColumnDefinition{
			printers.NameColumn(),
			printers.Column("Desired", "integer", specDoc["replicas"]),
			printers.Column("Current", "integer", statusDoc["replicas"]),
			printers.Column("Ready", "integer", statusDoc["readyReplicas"]),
			printers.AgeColumn(),
		}, printers.TemplateColumns(specDoc["selector"])...),
		func(obj P, now time.Time) []interface{} {
			r := row(obj)
			var names, images string
			if r.template != nil {
				names, images = printers.ContainerCells(r.template.Spec.Containers)
			}
			return []interface{}{
				r.name,
				int64(printers.DerefInt32(r.desired, 1)),
				int64(r.current),
				int64(r.ready),
				printers.Age(r.created, now),
				names,
				images,
				r.selector,
			}
		},
	)
}
