package kinds

import (
	"strings"
	"time"

	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// StorageVersionMigrations: a request to rewrite every stored object of
// a resource (storagemigration.k8s.io/v1), stored only: nothing migrates
// them yet. The spec never changes; a Succeeded or Failed migration stays so.
func storageVersionMigrations() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: storagemigrationv1.SchemeGroupVersion.WithResource("storageversionmigrations"), Kind: "StorageVersionMigration",
		Status:   true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validateStorageVersionMigration),
		ValidateUpdate: updateValidator(func(m, old *storagemigrationv1.StorageVersionMigration) field.ErrorList {
			allErrs := validation.Immutable(m.Spec, old.Spec, field.NewPath("spec"))
			conds := field.NewPath("status", "conditions")
			if migrationIs(old, storagemigrationv1.MigrationSucceeded) && !migrationIs(m, storagemigrationv1.MigrationSucceeded) {
				allErrs = append(allErrs, field.Invalid(conds, m.Status.Conditions, "Success condition cannot be set to false once it is true"))
			}
			if migrationIs(old, storagemigrationv1.MigrationFailed) && !migrationIs(m, storagemigrationv1.MigrationFailed) {
				allErrs = append(allErrs, field.Invalid(conds, m.Status.Conditions, "Failed condition cannot be set to false once it is true"))
			}
			return allErrs
		}),
		Printer: storageVersionMigrationPrinter,
	}
}

func validateStorageVersionMigration(m *storagemigrationv1.StorageVersionMigration) field.ErrorList {
	var allErrs field.ErrorList
	res := field.NewPath("spec", "resource")
	if r := m.Spec.Resource.Resource; r == "" {
		allErrs = append(allErrs, field.Required(res.Child("resource"), "resource is required to be set"))
	} else if errs := utilvalidation.IsDNS1035Label(r); len(errs) > 0 {
		allErrs = append(allErrs, field.Invalid(res.Child("resource"), r, strings.Join(errs, ",")))
	}
	if g := m.Spec.Resource.Group; g != "" {
		if errs := utilvalidation.IsDNS1123Subdomain(g); len(errs) > 0 {
			allErrs = append(allErrs, field.Invalid(res.Child("group"), g, strings.Join(errs, ",")))
		}
	}
	conds := field.NewPath("status", "conditions")
	allErrs = append(allErrs, metav1validation.ValidateConditions(m.Status.Conditions, conds)...)
	succeeded, failed, running := migrationIs(m, storagemigrationv1.MigrationSucceeded), migrationIs(m, storagemigrationv1.MigrationFailed), migrationIs(m, storagemigrationv1.MigrationRunning)
	if succeeded && failed {
		allErrs = append(allErrs, field.Invalid(conds, m.Status.Conditions, "Both success and failed conditions cannot be true at the same time"))
	}
	if succeeded && running {
		allErrs = append(allErrs, field.Invalid(conds, m.Status.Conditions, "Running condition cannot be true when success condition is true"))
	}
	if failed && running {
		allErrs = append(allErrs, field.Invalid(conds, m.Status.Conditions, "Running condition cannot be true when failed condition is true"))
	}
	return allErrs
}

func migrationIs(m *storagemigrationv1.StorageVersionMigration, t storagemigrationv1.MigrationConditionType) bool {
	return apimeta.IsStatusConditionTrue(m.Status.Conditions, string(t))
}

var storageVersionMigrationPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Resource", "string", "Fully qualified resource to migrate"),
	},
	func(m *storagemigrationv1.StorageVersionMigration, _ time.Time) []interface{} {
		return []interface{}{m.Name, m.Spec.Resource.String()}
	},
)
