package validation

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// KindFunc checks the fields of one kind's object (nil: none).
type KindFunc func(obj runtime.Object) field.ErrorList

// KindUpdateFunc checks what an update of old to obj may not change;
// both have the kind's Go type (nil: nothing).
type KindUpdateFunc func(obj, old runtime.Object) field.ErrorList

// Object checks an object that is about to be created: its metadata, with
// name the kind's metadata.name rule (nil: PathSegmentName), then kind's
// own checks. namespaced says whether the kind is namespace-scoped.
func Object(obj runtime.Object, namespaced bool, name apimachineryvalidation.ValidateNameFunc, kind KindFunc) field.ErrorList {
	if isNil(obj) {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("nil object"))}
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		// Not an object with metadata: nothing we know how to check.
		return nil
	}
	if name == nil {
		name = PathSegmentName
	}
	allErrs := apimachineryvalidation.ValidateObjectMetaAccessor(accessor, namespaced, name, field.NewPath("metadata"))
	if kind != nil {
		allErrs = append(allErrs, kind(obj)...)
	}
	return dedupe(allErrs)
}

// ObjectUpdate checks an update of old to obj: everything Object checks
// on obj, the metadata update rules and the kind's immutability rules.
// The caller must have filled obj's resourceVersion (from the stored object
// for unconditional updates), as upstream does before validating.
func ObjectUpdate(obj, old runtime.Object, namespaced bool, name apimachineryvalidation.ValidateNameFunc, kind KindFunc, kindUpdate KindUpdateFunc) field.ErrorList {
	if isNil(obj) || isNil(old) {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("nil object"))}
	}
	if reflect.TypeOf(obj) != reflect.TypeOf(old) {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("cannot update a %T with a %T", old, obj))}
	}
	allErrs := Object(obj, namespaced, name, kind)
	newMeta, err1 := meta.Accessor(obj)
	oldMeta, err2 := meta.Accessor(old)
	if err1 == nil && err2 == nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateObjectMetaAccessorUpdate(newMeta, oldMeta, field.NewPath("metadata"))...)
	}
	if kindUpdate != nil {
		allErrs = append(allErrs, kindUpdate(obj, old)...)
	}
	return dedupe(allErrs)
}

func isNil(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// dedupe drops errors that were reported twice by overlapping checks,
// keeping the first occurrence's position.
func dedupe(errs field.ErrorList) field.ErrorList {
	if len(errs) < 2 {
		return errs
	}
	seen := make(map[string]bool, len(errs))
	out := errs[:0]
	for _, e := range errs {
		key := string(e.Type) + "\x00" + e.Error()
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, e)
	}
	return out
}
