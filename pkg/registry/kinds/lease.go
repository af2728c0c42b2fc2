package kinds

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Leases: node heartbeats and leader election.
func leases() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: coordinationv1.SchemeGroupVersion.WithResource("leases"), Kind: "Lease",
		Namespaced: true, NoGeneration: true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validateLease),
		Printer:  leasePrinter,
	}
}

// Validation.

func validateLease(l *coordinationv1.Lease) field.ErrorList {
	allErrs := field.ErrorList{}
	specPath := field.NewPath("spec")
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	allErrs = append(allErrs, validation.NonnegativePtr32(l.Spec.LeaseTransitions, specPath.Child("leaseTransitions"))...)
	if l.Spec.Strategy != nil {
		allErrs = append(allErrs, validation.QualifiedName(string(*l.Spec.Strategy), specPath.Child("strategy"))...)
	}
	if l.Spec.PreferredHolder != nil && *l.Spec.PreferredHolder != "" && l.Spec.Strategy == nil {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return allErrs
}

// The table.

var leasePrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]),
		printers.AgeColumn(),
	},
	func(l *coordinationv1.Lease, now time.Time) []interface{} {
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return []interface{}{l.Name, holder, printers.Age(l.CreationTimestamp, now)}
	},
)
