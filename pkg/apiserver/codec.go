package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/storage"
)

// MaxRequestBodyBytes is the largest body the server reads, as Kubernetes'
// 3 MiB: anything bigger could not be stored in etcd anyway.
const MaxRequestBodyBytes = 3 << 20

// encodeStored renders obj for etcd. resourceVersion is not stored: it is
// the key's ModRevision, filled in on every read.
func encodeStored(res *registry.Resource, obj runtime.Object) ([]byte, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	defer m.SetResourceVersion(rv)
	if res.StoredAs != nil {
		stored, err := res.StoredAs.ToStored(obj)
		if err != nil {
			return nil, err
		}
		return json.Marshal(stored)
	}
	return json.Marshal(obj)
}

// decodeStored reads a stored object back and stamps its resourceVersion.
func decodeStored(res *registry.Resource, kv storage.KV) (runtime.Object, error) {
	obj := res.New()
	if res.StoredAs != nil {
		stored := res.StoredAs.New()
		if err := json.Unmarshal(kv.Value, stored); err != nil {
			return nil, fmt.Errorf("decode %s from storage: %w", kv.Key, err)
		}
		var err error
		if obj, err = res.StoredAs.FromStored(stored); err != nil {
			return nil, fmt.Errorf("convert %s from storage: %w", kv.Key, err)
		}
	} else if err := json.Unmarshal(kv.Value, obj); err != nil {
		return nil, fmt.Errorf("decode %s from storage: %w", kv.Key, err)
	}
	return decoded(res, obj, kv)
}

// decodeStoredList reads a page of stored objects back, as decodeStored
// does, converting them together where the resource can.
func decodeStoredList(res *registry.Resource, kvs []storage.KV) ([]runtime.Object, error) {
	out := make([]runtime.Object, 0, len(kvs))
	if res.StoredAs == nil || res.StoredAs.FromStoredList == nil {
		for _, kv := range kvs {
			obj, err := decodeStored(res, kv)
			if err != nil {
				return nil, err
			}
			out = append(out, obj)
		}
		return out, nil
	}
	stored := make([]runtime.Object, len(kvs))
	for i, kv := range kvs {
		stored[i] = res.StoredAs.New()
		if err := json.Unmarshal(kv.Value, stored[i]); err != nil {
			return nil, fmt.Errorf("decode %s from storage: %w", kv.Key, err)
		}
	}
	objs, err := res.StoredAs.FromStoredList(stored)
	if err != nil {
		return nil, fmt.Errorf("convert %s from storage: %w", res.GroupResource(), err)
	}
	if len(objs) != len(kvs) {
		return nil, fmt.Errorf("convert %s from storage: %d objects for %d", res.GroupResource(), len(objs), len(kvs))
	}
	for i, obj := range objs {
		if obj, err = decoded(res, obj, kvs[i]); err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

// decoded finishes an object read from kv: its kind, a custom
// resource's defaults, and its resourceVersion.
func decoded(res *registry.Resource, obj runtime.Object, kv storage.KV) (runtime.Object, error) {
	obj.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
	if res.NewObject != nil {
		// A custom resource gets the defaults its schema has now, even
		// when they came after the object was stored, as in Kubernetes.
		res.ApplyDefaults(obj)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(strconv.FormatInt(kv.ModRevision, 10))
	return obj, nil
}

// readBody reads a request body within MaxRequestBodyBytes.
func readBody(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxRequestBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", MaxRequestBodyBytes))
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("read request body: %v", err))
	}
	return data, nil
}

// bodyJSON returns the body as JSON whatever its Content-Type.
func bodyJSON(r *http.Request, data []byte) ([]byte, error) {
	ct := r.Header.Get("Content-Type")
	mediaType := runtime.ContentTypeJSON
	if ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return nil, unsupportedMediaType(ct)
		}
		mediaType = mt
	}
	switch mediaType {
	case runtime.ContentTypeJSON:
		return data, nil
	case runtime.ContentTypeYAML, "application/x-yaml", "text/yaml":
		js, err := yaml.YAMLToJSONStrict(data)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf: %v", err))
		}
		return js, nil
	}
	return nil, unsupportedMediaType(ct)
}

// fieldValidation is the ?fieldValidation= directive: what to do with
// unknown or duplicated fields in a body.
func fieldValidation(r *http.Request) (string, error) {
	v := r.URL.Query().Get("fieldValidation")
	switch v {
	case "":
		return metav1.FieldValidationWarn, nil
	case metav1.FieldValidationIgnore, metav1.FieldValidationWarn, metav1.FieldValidationStrict:
		return v, nil
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation must be one of %q, %q or %q, got %q",
		metav1.FieldValidationIgnore, metav1.FieldValidationWarn, metav1.FieldValidationStrict, v))
}

// decodeInto decodes a JSON object of gvk into into, applying the
// fieldValidation directive. It returns warnings for the response header.
func decodeInto(data []byte, gvk schema.GroupVersionKind, into runtime.Object, directive string) ([]string, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("couldn't get version/kind; json parse error: %v", err))
	}
	if tm.APIVersion != "" && tm.APIVersion != gvk.GroupVersion().String() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", tm.APIVersion, gvk.GroupVersion()))
	}
	if tm.Kind != "" && tm.Kind != gvk.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: the kind in the data (%s) does not match the expected kind (%s)", tm.Kind, gvk.Version, gvk.Kind, tm.Kind, gvk.Kind))
	}
	var strictErrs []error
	var err error
	if u, ok := into.(*unstructured.Unstructured); ok {
		// A custom resource: duplicates are found here, unknown fields by
		// the schema's pruning (decodeObject).
		u.Object = nil
		strictErrs, err = sigsjson.UnmarshalStrict(data, &u.Object, sigsjson.DisallowDuplicateFields)
		if err == nil && u.Object == nil {
			err = errors.New("the body is not a JSON object")
		}
	} else {
		strictErrs, err = sigsjson.UnmarshalStrict(data, into, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
	}
	into.GetObjectKind().SetGroupVersionKind(gvk)
	if len(strictErrs) == 0 || directive == metav1.FieldValidationIgnore {
		return nil, nil
	}
	msgs := make([]string, 0, len(strictErrs))
	for _, e := range strictErrs {
		msgs = append(msgs, e.Error())
	}
	if directive == metav1.FieldValidationStrict {
		return nil, apierrors.NewBadRequest("strict decoding error: " + strings.Join(msgs, ", "))
	}
	return msgs, nil
}

// decodeObject decodes a JSON object of res's kind as decodeInto does;
// what a custom resource's schema does not know is dropped (pruned) and
// reported as an unknown field would be.
func decodeObject(res *registry.Resource, data []byte, directive string) (runtime.Object, []string, error) {
	obj := res.New()
	warnings, err := decodeInto(data, res.GroupVersionKind(), obj, directive)
	if err != nil || res.Prune == nil {
		return obj, warnings, err
	}
	pruned := res.Prune(obj)
	if len(pruned) == 0 || directive == metav1.FieldValidationIgnore {
		return obj, warnings, nil
	}
	msgs := make([]string, 0, len(pruned))
	for _, path := range pruned {
		msgs = append(msgs, fmt.Sprintf("unknown field %q", path))
	}
	if directive == metav1.FieldValidationStrict {
		return nil, nil, apierrors.NewBadRequest("strict decoding error: " + strings.Join(msgs, ", "))
	}
	return obj, append(warnings, msgs...), nil
}

func addWarnings(w http.ResponseWriter, warnings []string) {
	for _, msg := range warnings {
		w.Header().Add("Warning", warningHeader(msg))
	}
}

func unsupportedMediaType(ct string) error {
	return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "",
		fmt.Sprintf("the body of the request was in an unknown format (%s) - accepted media types include: application/json, application/yaml", ct), 0, false)
}
