package kinds

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
)

// Priority values, as Kubernetes bounds them: user classes may not go
// above HighestUserDefinablePriority; the system- classes are above it.
const (
	HighestUserDefinablePriority = int32(1000000000)
	SystemCriticalPriority       = 2 * HighestUserDefinablePriority
)

// SystemPriorityClasses are the classes Kubernetes creates at start.
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	class := func(name string, value int32, desc string) *schedulingv1.PriorityClass {
		return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, Description: desc,
			PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority)}
	}
	return []*schedulingv1.PriorityClass{
		class("system-node-critical", SystemCriticalPriority+1000, "Used for system critical pods that must not be moved from their current node."),
		class("system-cluster-critical", SystemCriticalPriority, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
	}
}

// PriorityClasses: named pod priorities (scheduling.k8s.io/v1).
func priorityClasses() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), Kind: "PriorityClass",
		ShortNames: []string{"pc"}, NoGeneration: true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Default: defaulter(func(pc *schedulingv1.PriorityClass) {
			if pc.PreemptionPolicy == nil {
				pc.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
			}
		}),
		Validate:       validator(validatePriorityClass),
		ValidateUpdate: updateValidator(validatePriorityClassUpdate),
		Printer:        priorityClassPrinter,
	}
}

func validatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	var allErrs field.ErrorList
	if strings.HasPrefix(pc.Name, "system-") {
		system := false
		for _, s := range SystemPriorityClasses() {
			if s.Name == pc.Name {
				system = true
				if s.Value != pc.Value {
					allErrs = append(allErrs, field.Forbidden(field.NewPath("value"), "the value of a system priority class may not change"))
				}
			}
		}
		if !system {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("metadata", "name"), "priority class names with 'system-' prefix are reserved for system use only"))
		}
	} else if pc.Value > HighestUserDefinablePriority {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("value"), "maximum allowed value of a user defined priority is 1000000000"))
	}
	if p := pc.PreemptionPolicy; p != nil && *p != corev1.PreemptLowerPriority && *p != corev1.PreemptNever {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("preemptionPolicy"), *p, []string{string(corev1.PreemptLowerPriority), string(corev1.PreemptNever)}))
	}
	return allErrs
}

func validatePriorityClassUpdate(pc, old *schedulingv1.PriorityClass) field.ErrorList {
	allErrs := validatePriorityClass(pc)
	if pc.Value != old.Value {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	if !apiequality.Semantic.DeepEqual(pc.PreemptionPolicy, old.PreemptionPolicy) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("preemptionPolicy"), pc.PreemptionPolicy, "field is immutable"))
	}
	return allErrs
}

var priorityClassPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Value", "integer", schedulingv1.PriorityClass{}.SwaggerDoc()["value"]),
		printers.Column("Global-Default", "boolean", schedulingv1.PriorityClass{}.SwaggerDoc()["globalDefault"]),
		printers.AgeColumn(),
		printers.Column("PreemptionPolicy", "string", schedulingv1.PriorityClass{}.SwaggerDoc()["preemptionPolicy"]),
	},
	func(pc *schedulingv1.PriorityClass, now time.Time) []interface{} {
		policy := ""
		if pc.PreemptionPolicy != nil {
			policy = string(*pc.PreemptionPolicy)
		}
		return []interface{}{pc.Name, int64(pc.Value), pc.GlobalDefault, printers.Age(pc.CreationTimestamp, now), policy}
	},
)
