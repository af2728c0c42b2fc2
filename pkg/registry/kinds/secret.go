package kinds

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Secrets are stored encrypted when the apiserver has a key.
func secrets() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("secrets"), Kind: "Secret",
		Namespaced: true, Encrypted: true, NoGeneration: true,
		Default:        defaulter(defaultSecret),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validateSecret),
		ValidateUpdate: updateValidator(validateSecretUpdate),
		Printer:        secretPrinter,
		FieldLabels: func(obj runtime.Object) fields.Set {
			return fields.Set{"type": string(obj.(*corev1.Secret).Type)}
		},
	}
}

// Defaults.

func defaultSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	// stringData is write-only: it is merged into data and never stored.
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
}

// Validation.

func validateSecret(s *corev1.Secret) field.ErrorList {
	allErrs := field.ErrorList{}
	dataPath := field.NewPath("data")
	total := 0
	for _, key := range validation.SortedKeys(s.Data) {
		allErrs = append(allErrs, validation.DataKey(key, dataPath.Key(key))...)
		total += len(s.Data[key])
	}
	if total > corev1.MaxSecretSize {
		allErrs = append(allErrs, field.TooLong(dataPath, "", corev1.MaxSecretSize))
	}
	required := func(keys ...string) {
		for _, k := range keys {
			if _, ok := s.Data[k]; !ok {
				allErrs = append(allErrs, field.Required(dataPath.Key(k), ""))
			}
		}
	}
	requireJSON := func(key string) {
		b, ok := s.Data[key]
		if !ok {
			allErrs = append(allErrs, field.Required(dataPath.Key(key), ""))
			return
		}
		if err := json.Unmarshal(b, &map[string]any{}); err != nil {
			allErrs = append(allErrs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		requireJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		requireJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		_, hasUser := s.Data[corev1.BasicAuthUsernameKey]
		_, hasPass := s.Data[corev1.BasicAuthPasswordKey]
		if !hasUser && !hasPass {
			required(corev1.BasicAuthUsernameKey, corev1.BasicAuthPasswordKey)
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		required(corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	return allErrs
}

func validateSecretUpdate(s, old *corev1.Secret) field.ErrorList {
	allErrs := validation.Immutable(s.Type, old.Type, field.NewPath("type"))
	return append(allErrs, validation.ImmutableData(old.Immutable, s.Immutable, map[string]bool{
		"data": validation.EqualBytesMaps(s.Data, old.Data),
	})...)
}

// The table.

var secretPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Type", "string", corev1.Secret{}.SwaggerDoc()["type"]),
		printers.Column("Data", "string", corev1.Secret{}.SwaggerDoc()["data"]),
		printers.AgeColumn(),
	},
	secretCells,
)

func secretCells(s *corev1.Secret, now time.Time) []interface{} {
	// stringData is write-only and merged into data by the API; count the
	// union in case an object still carries it.
	keys := len(s.Data)
	for k := range s.StringData {
		if _, dup := s.Data[k]; !dup {
			keys++
		}
	}
	return []interface{}{s.Name, string(s.Type), int64(keys), printers.Age(s.CreationTimestamp, now)}
}
