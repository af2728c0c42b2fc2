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

// ConfigMaps: no defaults; immutable ones keep their data.
func configMaps() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap",
		Namespaced: true, ShortNames: []string{"cm"}, NoGeneration: true,
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validateConfigMap),
		ValidateUpdate: updateValidator(validateConfigMapUpdate),
		Printer:        configMapPrinter,
	}
}

// Validation.

func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	allErrs := field.ErrorList{}
	dataPath, binPath := field.NewPath("data"), field.NewPath("binaryData")
	total := 0
	for _, key := range validation.SortedKeys(cm.Data) {
		allErrs = append(allErrs, validation.DataKey(key, dataPath.Key(key))...)
		if _, dup := cm.BinaryData[key]; dup {
			allErrs = append(allErrs, field.Invalid(dataPath.Key(key), key, "duplicate of key present in binaryData"))
		}
		total += len(cm.Data[key])
	}
	for _, key := range validation.SortedKeys(cm.BinaryData) {
		allErrs = append(allErrs, validation.DataKey(key, binPath.Key(key))...)
		total += len(cm.BinaryData[key])
	}
	if total > corev1.MaxSecretSize {
		allErrs = append(allErrs, field.TooLong(field.NewPath(""), "", corev1.MaxSecretSize))
	}
	return allErrs
}

func validateConfigMapUpdate(cm, old *corev1.ConfigMap) field.ErrorList {
	return validation.ImmutableData(old.Immutable, cm.Immutable, map[string]bool{
		"data":       validation.EqualMaps(cm.Data, old.Data),
		"binaryData": validation.EqualBytesMaps(cm.BinaryData, old.BinaryData),
	})
}

// The table.

var configMapPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"]),
		printers.AgeColumn(),
	},
	func(cm *corev1.ConfigMap, now time.Time) []interface{} {
		return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), printers.Age(cm.CreationTimestamp, now)}
	},
)
