package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/minik8s/minik8s/pkg/registry"
)

// serveResource dispatches a resource request to its verb.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, info requestInfo) {
	gvr := schema.GroupVersionResource{Group: info.Group, Version: info.Version, Resource: info.Resource}
	res, ok := s.table.Lookup(gvr)
	if !ok || (!res.Namespaced && info.Namespace != "") || (info.Verb == "create" && info.Name != "" && info.Subresource == "") {
		writeError(w, errNoSuchResource())
		return
	}
	if res.Namespaced && info.Namespace == "" && info.Verb != "list" && info.Verb != "watch" {
		writeError(w, errNoSuchResource())
		return
	}
	if info.Name == "" && (info.Verb == "update" || info.Verb == "patch") {
		// PUT and PATCH address one object: a collection has no such route.
		writeError(w, methodNotAllowed(info))
		return
	}
	// Admission's warnings go out as the response's Warning headers.
	r = r.WithContext(withWarnings(r.Context(), w))
	var err error
	switch info.Subresource {
	case "":
		err = s.serveMain(w, r, res, info)
	case "status":
		err = s.serveStatus(w, r, res, info, statusResource)
	case "finalize":
		if !res.Finalize || info.Verb != "update" {
			err = methodNotAllowed(info)
		} else {
			err = s.serveStatus(w, r, res, info, finalizeResource)
		}
	case "approval":
		if res.Approval == nil {
			err = errNoSuchResource()
		} else if err = s.checkApprove(r.Context(), res, info); err == nil {
			err = s.serveStatus(w, r, res, info, approvalResource)
		}
	case "scale":
		if res.Scale == nil {
			err = errNoSuchResource()
		} else {
			err = s.serveScale(w, r, res, info)
		}
	case "log":
		err = s.servePodLog(w, r, res, info)
	case "exec", "attach", "portforward":
		err = s.servePodStream(w, r, res, info)
	case "proxy":
		err = s.serveProxy(w, r, res, info)
	case "token":
		err = s.serveToken(w, r, res, info)
	default:
		if _, ok := res.SpecParts[info.Subresource]; ok {
			err = s.serveStatus(w, r, res, info, subresource(info.Subresource))
		} else if a, ok := res.Action(info.Subresource); ok && info.Verb == "create" {
			err = s.serveAction(w, r, res, a, info)
		} else {
			err = errNoSuchResource()
		}
	}
	if err != nil {
		writeError(w, err)
	}
}

// refuseCreate is why no object of res may be created now, or nil.
func refuseCreate(res *registry.Resource) error {
	if res.RefuseCreate == "" {
		return nil
	}
	err := apierrors.NewMethodNotSupported(res.GroupResource(), "create")
	err.ErrStatus.Message = res.RefuseCreate
	return err
}

func methodNotAllowed(info requestInfo) error {
	return apierrors.NewMethodNotSupported(schema.GroupResource{Group: info.Group, Resource: info.Resource}, info.Verb)
}

func (s *Server) serveMain(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	ctx := r.Context()
	switch info.Verb {
	case "get":
		out, err := negotiate(s.codecsFor(res), r.Header.Get("Accept"), true)
		if err != nil {
			return err
		}
		if _, err := parseResourceVersion(r.URL.Query().Get("resourceVersion")); err != nil {
			return err
		}
		obj, _, err := s.get(ctx, res, info.Namespace, info.Name)
		if err != nil {
			return err
		}
		rendered, err := s.render(res, out, obj, nil, tableOptionsFrom(r))
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, out, rendered)
		return nil
	case "list":
		out, err := negotiate(s.codecsFor(res), r.Header.Get("Accept"), true)
		if err != nil {
			return err
		}
		opts, err := s.listOptions(r)
		if err != nil {
			return err
		}
		lr, err := s.list(ctx, res, info.Namespace, opts)
		if err != nil {
			return err
		}
		rendered, err := s.render(res, out, nil, lr, tableOptionsFrom(r))
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, out, rendered)
		return nil
	case "watch":
		return s.serveWatch(w, r, res, info)
	case "create":
		if err := refuseCreate(res); err != nil {
			return err
		}
		out, err := negotiate(s.codecsFor(res), r.Header.Get("Accept"), false)
		if err != nil {
			return err
		}
		wo, err := writeOptionsFrom(r)
		if err != nil {
			return err
		}
		obj, warnings, err := s.decodeResourceRequest(r, res)
		if err != nil {
			return err
		}
		created, err := s.create(ctx, res, info.Namespace, obj, wo)
		if err != nil {
			return err
		}
		addWarnings(w, warnings)
		encode(w, http.StatusCreated, out, created)
		return nil
	case "update":
		return s.serveUpdate(w, r, res, info, mainResource)
	case "patch":
		return s.servePatch(w, r, res, info, mainResource)
	case "delete":
		out, err := negotiate(s.codecsFor(res), r.Header.Get("Accept"), false)
		if err != nil {
			return err
		}
		opts, err := s.deleteOptionsFrom(r)
		if err != nil {
			return err
		}
		obj, err := s.deleteObject(ctx, res, info.Namespace, info.Name, opts)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, out, obj)
		return nil
	case "deletecollection":
		out, err := negotiate(s.codecsFor(res), r.Header.Get("Accept"), false)
		if err != nil {
			return err
		}
		opts, err := s.deleteOptionsFrom(r)
		if err != nil {
			return err
		}
		lopts, err := s.listOptions(r)
		if err != nil {
			return err
		}
		lr, err := s.list(ctx, res, info.Namespace, lopts)
		if err != nil {
			return err
		}
		deleted := &listResult{revision: lr.revision}
		for _, it := range lr.items {
			m, _ := meta.Accessor(it)
			obj, err := s.deleteObject(ctx, res, m.GetNamespace(), m.GetName(), opts)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			deleted.items = append(deleted.items, obj)
		}
		list, err := listObject(res, deleted)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, out, list)
		return nil
	}
	return methodNotAllowed(info)
}

// decodeRequest reads the body into obj of kind gvk, or of the same kind
// in one of accepts when its apiVersion names that, honouring
// ?fieldValidation.
func (s *Server) decodeRequest(r *http.Request, gvk schema.GroupVersionKind, obj runtime.Object, accepts ...schema.GroupVersion) ([]string, error) {
	js, directive, err := s.requestJSON(r, gvk)
	if err != nil {
		return nil, err
	}
	if len(accepts) > 0 {
		var tm metav1.TypeMeta
		if json.Unmarshal(js, &tm) == nil {
			for _, gv := range accepts {
				if tm.APIVersion == gv.String() {
					gvk = gv.WithKind(gvk.Kind)
				}
			}
		}
	}
	return decodeInto(js, gvk, obj, directive)
}

// decodeResourceRequest reads the body as an object of res, honouring
// ?fieldValidation.
func (s *Server) decodeResourceRequest(r *http.Request, res *registry.Resource) (runtime.Object, []string, error) {
	js, directive, err := s.requestJSON(r, res.GroupVersionKind())
	if err != nil {
		return nil, nil, err
	}
	return decodeObject(res, js, directive)
}

// requestJSON is the body of r as JSON, and its ?fieldValidation directive.
func (s *Server) requestJSON(r *http.Request, gvk schema.GroupVersionKind) ([]byte, string, error) {
	directive, err := fieldValidation(r)
	if err != nil {
		return nil, "", err
	}
	data, err := readBody(r)
	if err != nil {
		return nil, "", err
	}
	js, err := s.bodyJSON(r, data, gvk)
	return js, directive, err
}

func (s *Server) serveUpdate(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo, sub subresource) error {
	out, err := negotiate(s.codecsFor(res), r.Header.Get("Accept"), false)
	if err != nil {
		return err
	}
	wo, err := writeOptionsFrom(r)
	if err != nil {
		return err
	}
	desired, warnings, err := s.decodeResourceRequest(r, res)
	if err != nil {
		return err
	}
	// As Kubernetes: a body naming another object is a bad request, checked
	// before the object is looked up.
	if m, err := meta.Accessor(desired); err == nil && m.GetName() != info.Name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), info.Name))
	}
	obj, err := s.update(r.Context(), res, info.Namespace, info.Name, sub, func(runtime.Object) (runtime.Object, error) {
		return desired.DeepCopyObject(), nil
	}, wo)
	if err != nil {
		return err
	}
	addWarnings(w, warnings)
	encode(w, http.StatusOK, out, obj)
	return nil
}

func (s *Server) servePatch(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo, sub subresource) error {
	out, err := negotiate(s.codecsFor(res), r.Header.Get("Accept"), false)
	if err != nil {
		return err
	}
	wo, err := writeOptionsFrom(r)
	if err != nil {
		return err
	}
	directive, err := fieldValidation(r)
	if err != nil {
		return err
	}
	patch, err := readBody(r)
	if err != nil {
		return err
	}
	pt := types.PatchType(mediaTypeOf(r.Header.Get("Content-Type")))
	opts, err := patchOptionsFrom(r, pt)
	if err != nil {
		return err
	}
	if pt == types.ApplyYAMLPatchType {
		return s.serveApply(w, r, res, info, sub, out, wo, opts, patch)
	}
	var warnings []string
	obj, err := s.update(r.Context(), res, info.Namespace, info.Name, sub, func(current runtime.Object) (runtime.Object, error) {
		// The patch is applied to the object without its resourceVersion:
		// only a resourceVersion the patch itself carries is a precondition,
		// so a plain patch is retried when it races another writer.
		if m, err := meta.Accessor(current); err == nil {
			m.SetResourceVersion("")
		}
		patched, err := applyPatch(pt, current, patch)
		if err != nil {
			return nil, err
		}
		desired, w, err := decodeObject(res, patched, directive)
		warnings = w
		return desired, err
	}, wo)
	if err != nil {
		return err
	}
	addWarnings(w, warnings)
	encode(w, http.StatusOK, out, obj)
	return nil
}

// serveStatus serves GET/PUT/PATCH on /status and /approval and PUT on /finalize.
func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo, sub subresource) error {
	if !res.Status && sub == statusResource {
		return errNoSuchResource()
	}
	switch info.Verb {
	case "get":
		out, err := negotiate(s.codecsFor(res), r.Header.Get("Accept"), false)
		if err != nil {
			return err
		}
		obj, _, err := s.get(r.Context(), res, info.Namespace, info.Name)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, out, obj)
		return nil
	case "update":
		return s.serveUpdate(w, r, res, info, sub)
	case "patch":
		return s.servePatch(w, r, res, info, sub)
	}
	return methodNotAllowed(info)
}

// serveScale serves autoscaling/v1 Scale for resources with replicas.
func (s *Server) serveScale(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	out, err := negotiate(s.codecs, r.Header.Get("Accept"), false)
	if err != nil {
		return err
	}
	ctx := r.Context()
	scaleGVK := autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	var mutate mutateFunc
	switch info.Verb {
	case "get":
		obj, _, err := s.get(ctx, res, info.Namespace, info.Name)
		if err != nil {
			return err
		}
		scale, err := registry.ScaleOf(res, obj)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, out, scale)
		return nil
	case "update":
		desired := &autoscalingv1.Scale{}
		if _, err := s.decodeRequest(r, scaleGVK, desired); err != nil {
			return err
		}
		mutate = func(current runtime.Object) (runtime.Object, error) {
			return applyScale(res, current, desired)
		}
	case "patch":
		patch, err := readBody(r)
		if err != nil {
			return err
		}
		pt := types.PatchType(mediaTypeOf(r.Header.Get("Content-Type")))
		mutate = func(current runtime.Object) (runtime.Object, error) {
			scale, err := registry.ScaleOf(res, current)
			if err != nil {
				return nil, err
			}
			scale.ResourceVersion = ""
			patched, err := applyPatch(pt, scale, patch)
			if err != nil {
				return nil, err
			}
			desired := &autoscalingv1.Scale{}
			if _, err := decodeInto(patched, scaleGVK, desired, metav1.FieldValidationStrict); err != nil {
				return nil, err
			}
			return applyScale(res, current, desired)
		}
	default:
		return methodNotAllowed(info)
	}
	wo, err := writeOptionsFrom(r)
	if err != nil {
		return err
	}
	obj, err := s.update(ctx, res, info.Namespace, info.Name, scaleResource, mutate, wo)
	if err != nil {
		return err
	}
	scale, err := registry.ScaleOf(res, obj)
	if err != nil {
		return err
	}
	encode(w, http.StatusOK, out, scale)
	return nil
}

func applyScale(res *registry.Resource, current runtime.Object, scale *autoscalingv1.Scale) (runtime.Object, error) {
	if scale.Spec.Replicas < 0 {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.replicas: Invalid value: %d: must be greater than or equal to 0", scale.Spec.Replicas))
	}
	m, _ := meta.Accessor(current)
	if scale.Name != "" && scale.Name != m.GetName() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", scale.Name, m.GetName()))
	}
	m.SetResourceVersion(scale.ResourceVersion)
	res.Scale.Set(current, scale.Spec.Replicas)
	return current, nil
}

// serveAction serves a POST subresource that acts on one object
// (registry.Action): a pod's binding changes it in one step, a pod's
// eviction acts through registry.Objects.
func (s *Server) serveAction(w http.ResponseWriter, r *http.Request, res *registry.Resource, a *registry.Action, info requestInfo) error {
	body := a.New()
	if _, err := s.decodeRequest(r, a.BodyKind(res), body, a.Accepts...); err != nil {
		return err
	}
	if a.Check != nil {
		if err := a.Check(body); err != nil {
			return err
		}
	}
	wo, err := writeOptionsFrom(r)
	if err != nil {
		return err
	}
	if a.Do != nil {
		err = a.Do(r.Context(), actionObjects{s}, info.Namespace, info.Name, body, wo.dryRun)
	} else {
		_, err = s.update(r.Context(), res, info.Namespace, info.Name, actionResource, func(current runtime.Object) (runtime.Object, error) {
			if err := a.Apply(current, body, s.now()); err != nil {
				return nil, err
			}
			return current, nil
		}, wo)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusSuccess, Code: http.StatusCreated})
	return nil
}

func tableOptionsFrom(r *http.Request) tableOptions {
	return tableOptions{includeObject: metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject"))}
}

func writeOptionsFrom(r *http.Request) (writeOptions, error) {
	wo := writeOptions{fieldManager: fieldManagerOf(r), trackFields: true}
	for _, v := range r.URL.Query()["dryRun"] {
		if v != metav1.DryRunAll {
			return wo, apierrors.NewBadRequest(fmt.Sprintf("unsupported dryRun value %q, the only supported value is %q", v, metav1.DryRunAll))
		}
		wo.dryRun = true
	}
	kind, named := writeOptionsKind[r.Method]
	if errs := metav1validation.ValidateFieldManager(r.URL.Query().Get("fieldManager"), field.NewPath("fieldManager")); named && len(errs) > 0 {
		return wo, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
	}
	return wo, nil
}

// writeOptionsKind names the options of the writes that take a field
// manager by their method, as Kubernetes' errors about them do.
var writeOptionsKind = map[string]string{
	http.MethodPost:  "CreateOptions",
	http.MethodPut:   "UpdateOptions",
	http.MethodPatch: "PatchOptions",
}

// deleteOptionsFrom reads DeleteOptions from the body (kubectl, client-go)
// or from query parameters (curl).
func (s *Server) deleteOptionsFrom(r *http.Request) (deleteOptions, error) {
	wo, err := writeOptionsFrom(r)
	if err != nil {
		return deleteOptions{}, err
	}
	var do metav1.DeleteOptions
	data, err := readBody(r)
	if err != nil {
		return deleteOptions{}, err
	}
	if len(data) > 0 {
		var err error
		if mediaTypeOf(r.Header.Get("Content-Type")) == runtime.ContentTypeProtobuf {
			_, _, err = s.codecs.UniversalDeserializer().Decode(data, nil, &do)
		} else {
			err = json.Unmarshal(data, &do)
		}
		if err != nil {
			return deleteOptions{}, apierrors.NewBadRequest(fmt.Sprintf("invalid DeleteOptions: %v", err))
		}
	}
	q := r.URL.Query()
	if v := q.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		do.PropagationPolicy = &p
	}
	if v := q.Get("gracePeriodSeconds"); v != "" {
		var g int64
		if _, err := fmt.Sscan(v, &g); err != nil {
			return deleteOptions{}, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q", v))
		}
		do.GracePeriodSeconds = &g
	}
	opts, err := deleteOptionsOf(do, wo)
	opts.admit = true
	return opts, err
}

// deleteOptionsOf checks do and turns it, with the request's wo, into
// what deleteObject follows.
func deleteOptionsOf(do metav1.DeleteOptions, wo writeOptions) (deleteOptions, error) {
	opts := deleteOptions{writeOptions: wo}
	if len(do.DryRun) > 0 {
		opts.dryRun = true
	}
	opts.grace = do.GracePeriodSeconds
	opts.preconditions = do.Preconditions
	if errs := metav1validation.ValidateDeleteOptions(&do); len(errs) > 0 {
		return opts, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	if do.OrphanDependents != nil && do.PropagationPolicy == nil {
		p := metav1.DeletePropagationBackground
		if *do.OrphanDependents {
			p = metav1.DeletePropagationOrphan
		}
		do.PropagationPolicy = &p
	}
	if do.PropagationPolicy != nil {
		opts.propagation = *do.PropagationPolicy
	}
	return opts, nil
}

// listOptions reads and checks the list and watch query parameters as
// Kubernetes does: a value that does not parse is a 400, a combination
// that means nothing (resourceVersionMatch without a resourceVersion, or
// on a watch without sendInitialEvents) a 422 on ListOptions.
func (s *Server) listOptions(r *http.Request) (*metav1.ListOptions, error) {
	opts := &metav1.ListOptions{}
	if err := clientgoscheme.ParameterCodec.DecodeParameters(r.URL.Query(), schema.GroupVersion{Version: "v1"}, opts); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid list options: %v", err))
	}
	if opts.Limit < 0 {
		return nil, apierrors.NewBadRequest("limit must not be negative")
	}
	if errs := metainternalvalidation.ValidateListOptions(&metainternalversion.ListOptions{
		Watch:                parseRequestInfo(r).Verb == "watch",
		ResourceVersion:      opts.ResourceVersion,
		ResourceVersionMatch: opts.ResourceVersionMatch,
		Continue:             opts.Continue,
		SendInitialEvents:    opts.SendInitialEvents,
	}, true); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	if _, err := parseResourceVersion(opts.ResourceVersion); err != nil {
		return nil, err
	}
	if opts.Continue != "" && opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		return nil, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	return opts, nil
}

// parseResourceVersion reads a resourceVersion parameter; empty is 0.
func parseResourceVersion(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(rv, 10, 63)
	if err != nil {
		return 0, apierrors.NewBadRequest("invalid resource version: " + field.Invalid(field.NewPath("resourceVersion"), rv, err.Error()).Error())
	}
	return int64(v), nil
}
