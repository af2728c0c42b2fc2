package admission

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Versioned is a as k8s.io/apiserver's admission libraries read it (CEL
// evaluation, AdmissionReview requests): the object and the old object
// in their unstructured form, with their apiVersion and kind.
func Versioned(a *Attributes) (*k8sadmission.VersionedAttributes, error) {
	object, err := ToUnstructured(a.Object, a.Kind)
	if err != nil {
		return nil, err
	}
	oldObject, err := ToUnstructured(a.OldObject, a.Kind)
	if err != nil {
		return nil, err
	}
	record := k8sadmission.NewAttributesRecord(object, oldObject, a.Kind, a.Namespace, a.Name, a.Resource, a.Subresource,
		k8sadmission.Operation(a.Operation), nil, a.DryRun, &user.DefaultInfo{Name: a.UserName, UID: a.UserUID, Groups: a.UserGroups})
	return &k8sadmission.VersionedAttributes{Attributes: record, VersionedKind: a.Kind,
		VersionedObject: k8sadmission.NewLazyObject(object), VersionedOldObject: k8sadmission.NewLazyObject(oldObject)}, nil
}

// ToUnstructured is a copy of obj in its unstructured form, with gvk;
// nil stays nil.
func ToUnstructured(obj runtime.Object, gvk schema.GroupVersionKind) (runtime.Object, error) {
	if obj == nil {
		return nil, nil
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u = u.DeepCopy()
		u.SetGroupVersionKind(gvk)
		return u, nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
