package apiserver

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/minik8s/minik8s/pkg/registry"
)

// patchOptionsFrom reads the query of a patch and checks it as Kubernetes
// does: an apply names its field manager, and only an apply may force.
func patchOptionsFrom(r *http.Request, pt types.PatchType) (*metav1.PatchOptions, error) {
	opts := &metav1.PatchOptions{}
	if err := clientgoscheme.ParameterCodec.DecodeParameters(r.URL.Query(), schema.GroupVersion{Version: "v1"}, opts); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid patch options: %v", err))
	}
	if errs := metav1validation.ValidatePatchOptions(opts, pt); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs)
	}
	return opts, nil
}

// serveApply serves a server-side apply (application/apply-patch+yaml):
// the body is the manager's whole intent for the fields it names; they are
// merged into the stored object, lists by their merge keys, and the
// manager becomes their owner. A field another manager owns with another
// value is a conflict (409) unless ?force=true takes it over. Applying to
// an object that does not exist creates it (201).
func (s *Server) serveApply(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo, sub subresource, out output, wo writeOptions, opts *metav1.PatchOptions, patch []byte) error {
	applied := &unstructured.Unstructured{}
	js, err := yaml.YAMLToJSON(patch)
	if err == nil {
		// utiljson keeps integers int64, as every unstructured object has
		// them, where encoding/json makes them float64.
		err = utiljson.Unmarshal(js, &applied.Object)
	}
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	if applied.Object == nil {
		return apierrors.NewBadRequest("error decoding patch: the body is not an object")
	}
	// Unknown fields are the merge's errors; duplicated ones are found
	// here, as ?fieldValidation says.
	directive, err := fieldValidation(r)
	if err != nil {
		return err
	}
	var warnings []string
	if directive != metav1.FieldValidationIgnore {
		if err := yaml.UnmarshalStrict(patch, &map[string]any{}); err != nil {
			if directive == metav1.FieldValidationStrict {
				return apierrors.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", err))
			}
			warnings = append(warnings, err.Error())
		}
	}
	if name := applied.GetName(); name != info.Name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", name, info.Name))
	}
	fm, err := s.fieldManager(res, sub)
	if err != nil {
		return err
	}
	force := ptr.Deref(opts.Force, false)
	wo.applied = true
	merge := func(live runtime.Object) (runtime.Object, error) {
		// As for every patch, only a resourceVersion the applied
		// configuration carries is a precondition.
		metaOf(live).SetResourceVersion("")
		return fm.Apply(live, applied.DeepCopy(), wo.fieldManager, force)
	}
	for {
		obj, err := s.update(r.Context(), res, info.Namespace, info.Name, sub, merge, wo)
		if err == nil {
			addWarnings(w, warnings)
			encode(w, http.StatusOK, out, obj)
			return nil
		}
		if !apierrors.IsNotFound(err) || sub != mainResource {
			return err
		}
		if err := refuseCreate(res); err != nil {
			return err
		}
		obj, err = merge(res.New())
		if err != nil {
			return err
		}
		if obj, err = s.create(r.Context(), res, info.Namespace, obj, wo); apierrors.IsAlreadyExists(err) {
			// Created meanwhile: apply to what was created.
			continue
		} else if err != nil {
			return err
		}
		addWarnings(w, warnings)
		encode(w, http.StatusCreated, out, obj)
		return nil
	}
}
