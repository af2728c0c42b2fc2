package apiserver

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"reflect"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// maxJSONPatchOperations is Kubernetes' limit on the operations in one JSON patch.
const maxJSONPatchOperations = 10000

func init() {
	// Kubernetes' JSONPatchMaxCopyBytes: without it, a short patch of
	// "copy" operations doubles the document again and again.
	jsonpatch.AccumulatedCopySizeLimit = MaxRequestBodyBytes
}

func mediaTypeOf(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ct
	}
	return mt
}

// applyPatch applies a JSON patch, JSON merge patch or strategic merge
// patch to current and returns the patched JSON.
func applyPatch(pt types.PatchType, current runtime.Object, patch []byte) (_ []byte, err error) {
	defer func() {
		// The patch libraries panic on some malformed patches (a strategic
		// merge key that is a list, for one): that is the client's error.
		if v := recover(); v != nil {
			err = apierrors.NewBadRequest(fmt.Sprintf("unable to apply %s patch: %v", pt, v))
		}
	}()
	original, err := json.Marshal(current)
	if err != nil {
		return nil, err
	}
	var out []byte
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid JSON patch: %v", err))
		}
		if len(p) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("the allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
		}
		out, err = p.Apply(original)
		if err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", schema.GroupResource{}, "",
				fmt.Sprintf("the server rejected our request due to an error in our request: %v", err), 0, false)
		}
	case types.MergePatchType:
		out, err = jsonpatch.MergePatch(original, patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid JSON merge patch: %v", err))
		}
	case types.StrategicMergePatchType:
		if _, custom := current.(*unstructured.Unstructured); custom {
			// A custom resource has no Go type to read merge keys from.
			return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", schema.GroupResource{}, "",
				"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json", 0, false)
		}
		var patchMap map[string]any
		if err := json.Unmarshal(patch, &patchMap); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid strategic merge patch: %v", err))
		}
		meta, err := strategicpatch.NewPatchMetaFromStruct(current)
		if err != nil {
			return nil, err
		}
		out, err = strategicpatch.StrategicMergePatchUsingLookupPatchMeta(original, patch, structPatchMeta{meta})
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to apply strategic merge patch: %v", err))
		}
	default:
		return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", schema.GroupResource{}, "",
			fmt.Sprintf("the body of the request was in an unknown format (%s) - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json", pt), 0, false)
	}
	return out, nil
}

// structPatchMeta is the strategic merge patch schema of an object's Go
// type, as strategicpatch.PatchMetaFromStruct reads it, but for the values
// with a JSON encoding of their own (minik8s' JSON: a workflow's definition,
// a run's input; runtime.RawExtension): these hold any JSON, and a patch
// merges into them as a JSON merge patch does (objects merged key by key,
// null deleting a key, lists replaced), where PatchMetaFromStruct would
// find no Go field for their keys.
type structPatchMeta struct {
	strategicpatch.PatchMetaFromStruct
}

func (m structPatchMeta) LookupPatchMetadataForStruct(key string) (strategicpatch.LookupPatchMeta, strategicpatch.PatchMeta, error) {
	sub, pm, err := m.PatchMetaFromStruct.LookupPatchMetadataForStruct(key)
	if err != nil {
		return nil, pm, err
	}
	return subPatchMeta(sub), pm, nil
}

func (m structPatchMeta) LookupPatchMetadataForSlice(key string) (strategicpatch.LookupPatchMeta, strategicpatch.PatchMeta, error) {
	sub, pm, err := m.PatchMetaFromStruct.LookupPatchMetadataForSlice(key)
	if err != nil {
		return nil, pm, err
	}
	return subPatchMeta(sub), pm, nil
}

var jsonUnmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

func subPatchMeta(sub strategicpatch.LookupPatchMeta) strategicpatch.LookupPatchMeta {
	s, ok := sub.(strategicpatch.PatchMetaFromStruct)
	if !ok {
		return sub
	}
	t := s.T
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct && reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		return anyJSONPatchMeta{}
	}
	return structPatchMeta{s}
}

// anyJSONPatchMeta is the schema of any JSON value: no field has a patch
// strategy, so maps merge and lists are replaced.
type anyJSONPatchMeta struct{}

func (anyJSONPatchMeta) LookupPatchMetadataForStruct(string) (strategicpatch.LookupPatchMeta, strategicpatch.PatchMeta, error) {
	return anyJSONPatchMeta{}, strategicpatch.PatchMeta{}, nil
}

func (anyJSONPatchMeta) LookupPatchMetadataForSlice(string) (strategicpatch.LookupPatchMeta, strategicpatch.PatchMeta, error) {
	return anyJSONPatchMeta{}, strategicpatch.PatchMeta{}, nil
}

func (anyJSONPatchMeta) Name() string { return "JSON" }
