package kinds

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ServiceAccounts: names pods run as.
func serviceAccounts() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("serviceaccounts"), Kind: "ServiceAccount",
		Namespaced: true, ShortNames: []string{"sa"}, NoGeneration: true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validateServiceAccount),
		Printer:  serviceAccountPrinter,
	}
}

// Validation.

func validateServiceAccount(sa *corev1.ServiceAccount) field.ErrorList {
	allErrs := field.ErrorList{}
	for i, s := range sa.Secrets {
		if s.Name != "" {
			allErrs = append(allErrs, validation.DNS1123Subdomain(s.Name, field.NewPath("secrets").Index(i).Child("name"))...)
		}
	}
	for i, s := range sa.ImagePullSecrets {
		if s.Name == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("imagePullSecrets").Index(i).Child("name"), ""))
		}
	}
	return allErrs
}

// The table.

var serviceAccountPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Secrets", "string", corev1.ServiceAccount{}.SwaggerDoc()["secrets"]),
		printers.AgeColumn(),
	},
	func(sa *corev1.ServiceAccount, now time.Time) []interface{} {
		return []interface{}{sa.Name, int64(len(sa.Secrets)), printers.Age(sa.CreationTimestamp, now)}
	},
)
