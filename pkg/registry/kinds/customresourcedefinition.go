package kinds

import (
	"context"
	"slices"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/customresource"
	"github.com/minik8s/minik8s/pkg/registry/printers"
)

// CustomResourceDefinitions (apiextensions.k8s.io/v1): checked by
// apiextensions-apiserver's own validation, on its internal types, so
// a definition minik8s accepts is one Kubernetes accepts. Serving the
// resources they define is the apiserver's (customresources.go).
func customResourceDefinitions() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"), Kind: "CustomResourceDefinition",
		ShortNames: []string{"crd", "crds"}, Categories: []string{"api-extensions"}, Status: true,
		NameRule: func(string, bool) []string { return nil }, // <plural>.<group>, checked with the spec
		Default:  defaulter(apiextensionsv1.SetObjectDefaults_CustomResourceDefinition),
		Validate: validator(func(crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
			in, err := internalCRD(crd)
			if err != nil {
				return field.ErrorList{field.InternalError(nil, err)}
			}
			return crdvalidation.ValidateCustomResourceDefinition(context.Background(), in)
		}),
		ValidateUpdate: updateValidator(func(crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
			in, err := internalCRD(crd)
			if err != nil {
				return field.ErrorList{field.InternalError(nil, err)}
			}
			oldIn, err := internalCRD(old)
			if err != nil {
				return field.ErrorList{field.InternalError(nil, err)}
			}
			return crdvalidation.ValidateCustomResourceDefinitionUpdate(context.Background(), in, oldIn)
		}),
		PrepareForCreate: func(obj runtime.Object) {
			crd := obj.(*apiextensionsv1.CustomResourceDefinition)
			crd.Status.StoredVersions = []string{StorageVersion(crd)}
			// An empty list, not null: `kubectl wait --for condition=`
			// reads the list before the apiserver has set one.
			crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{}
			if !slices.Contains(crd.Finalizers, customresource.Finalizer) {
				crd.Finalizers = append(crd.Finalizers, customresource.Finalizer)
			}
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			crd := obj.(*apiextensionsv1.CustomResourceDefinition)
			if v := StorageVersion(crd); v != "" && !slices.Contains(crd.Status.StoredVersions, v) {
				crd.Status.StoredVersions = append(crd.Status.StoredVersions, v)
			}
		},
		Printer: crdPrinter,
	}
}

// internalCRD converts crd to apiextensions' internal version, which its
// validation reads.
func internalCRD(crd *apiextensionsv1.CustomResourceDefinition) (*apiextensions.CustomResourceDefinition, error) {
	out := &apiextensions.CustomResourceDefinition{}
	err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd.DeepCopy(), out, nil)
	return out, err
}

// StorageVersion is the version crd's objects are stored in; "" when
// none is marked.
func StorageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

var crdPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Created At", "date", metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]),
	},
	func(crd *apiextensionsv1.CustomResourceDefinition, _ time.Time) []interface{} {
		return []interface{}{crd.Name, crd.CreationTimestamp.UTC().Format(time.RFC3339)}
	},
)
