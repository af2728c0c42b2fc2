package openapi

import (
	"fmt"
	"reflect"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Media types listed in the documents.
const (
	mimeJSON           = "application/json"
	mimeYAML           = "application/yaml"
	mimeJSONPatch      = "application/json-patch+json"
	mimeMergePatch     = "application/merge-patch+json"
	mimeStrategicPatch = "application/strategic-merge-patch+json"
	mimeApplyPatch     = "application/apply-patch+yaml"
	mimeWatchJSON      = "application/json;stream=watch"
	mimeAny            = "*/*"
)

var (
	objectProduces = []string{mimeJSON, mimeYAML}
	listProduces   = []string{mimeJSON, mimeYAML, mimeWatchJSON}
	watchProduces  = []string{mimeJSON, mimeWatchJSON}
	patchConsumes  = []string{mimeJSONPatch, mimeMergePatch, mimeStrategicPatch, mimeApplyPatch}
	anyConsumes    = []string{mimeAny}
	textProduces   = []string{"text/plain", mimeJSON, mimeYAML}

	statusType        = reflect.TypeOf(metav1.Status{})
	deleteOptionsType = reflect.TypeOf(metav1.DeleteOptions{})
	watchEventType    = reflect.TypeOf(metav1.WatchEvent{})
	patchType         = reflect.TypeOf(metav1.Patch{})
)

// param describes a path or query parameter.
type param struct {
	name, in, typ, desc string
	required            bool
	uniqueItems         bool
}

// response describes one status code of an operation. A nil model means a
// plain string body.
type response struct {
	code  int
	desc  string
	model reflect.Type
}

// operation is the version-neutral description of one HTTP operation; it is
// rendered into both the v2 and the v3 documents.
type operation struct {
	method    string // get, put, post, patch, delete
	id        string
	desc      string
	action    string
	gvk       schema.GroupVersionKind
	params    []param
	body      reflect.Type // nil: no body
	consumes  []string
	produces  []string
	responses []response
	tag       string
}

type pathItem struct {
	gv     schema.GroupVersion
	path   string
	params []param
	ops    []operation
}

// Query parameters, with descriptions of what our server does with them.
var (
	pPretty = param{name: "pretty", in: "query", typ: "string",
		desc: "If 'true', then the output is pretty printed."}
	pDryRun = param{name: "dryRun", in: "query", typ: "string",
		desc: "When present, indicates that modifications should not be persisted. The only valid value is \"All\", which processes the request fully without storing the result."}
	pFieldManager = param{name: "fieldManager", in: "query", typ: "string",
		desc: "Name of the actor making the change, recorded in the managed fields of the object."}
	pFieldValidation = param{name: "fieldValidation", in: "query", typ: "string",
		desc: "How the server treats unknown or duplicate fields in the request body: Ignore drops them silently, Warn drops them and returns a warning header per field, Strict fails the request."}
	pForce = param{name: "force", in: "query", typ: "boolean",
		desc: "Force an apply request through even if it conflicts with fields owned by other managers. Only valid for apply patches."}
	pGracePeriod = param{name: "gracePeriodSeconds", in: "query", typ: "integer",
		desc: "Seconds to wait before the object is deleted; zero means delete immediately."}
	pIgnoreStoreReadError = param{name: "ignoreStoreReadErrorWithClusterBreakingPotential", in: "query", typ: "boolean",
		desc: "Delete an object that cannot be read from storage (corrupt or undecryptable)."}
	pOrphan = param{name: "orphanDependents", in: "query", typ: "boolean",
		desc: "Deprecated: use propagationPolicy. Whether dependents should be orphaned."}
	pPropagation = param{name: "propagationPolicy", in: "query", typ: "string",
		desc: "Garbage collection policy for dependents: Orphan, Background or Foreground."}
	pAllowWatchBookmarks = param{name: "allowWatchBookmarks", in: "query", typ: "boolean", uniqueItems: true,
		desc: "Request BOOKMARK events on a watch."}
	pContinue = param{name: "continue", in: "query", typ: "string", uniqueItems: true,
		desc: "Continue token returned by a previous paginated list call."}
	pFieldSelector = param{name: "fieldSelector", in: "query", typ: "string", uniqueItems: true,
		desc: "Restrict the returned objects by their fields."}
	pLabelSelector = param{name: "labelSelector", in: "query", typ: "string", uniqueItems: true,
		desc: "Restrict the returned objects by their labels."}
	pLimit = param{name: "limit", in: "query", typ: "integer", uniqueItems: true,
		desc: "Maximum number of items to return in one list call."}
	pResourceVersion = param{name: "resourceVersion", in: "query", typ: "string", uniqueItems: true,
		desc: "Resource version the request is served at (list) or starts from (watch)."}
	pResourceVersionMatch = param{name: "resourceVersionMatch", in: "query", typ: "string", uniqueItems: true,
		desc: "How resourceVersion is applied to list calls: Exact or NotOlderThan."}
	pSendInitialEvents = param{name: "sendInitialEvents", in: "query", typ: "boolean", uniqueItems: true,
		desc: "Start a watch with synthetic ADDED events for the current state."}
	pTimeoutSeconds = param{name: "timeoutSeconds", in: "query", typ: "integer", uniqueItems: true,
		desc: "Timeout for the list/watch call."}
	pWatch = param{name: "watch", in: "query", typ: "boolean", uniqueItems: true,
		desc: "Watch for changes to the described resources instead of listing them."}

	listParams     = []param{pAllowWatchBookmarks, pContinue, pFieldSelector, pLabelSelector, pLimit, pResourceVersion, pResourceVersionMatch, pSendInitialEvents, pTimeoutSeconds, pWatch}
	writeParams    = []param{pDryRun, pFieldManager, pFieldValidation}
	patchParams    = []param{pDryRun, pFieldManager, pFieldValidation, pForce}
	deleteParams   = []param{pDryRun, pGracePeriod, pIgnoreStoreReadError, pOrphan, pPropagation}
	deleteColParam = []param{pContinue, pDryRun, pFieldSelector, pGracePeriod, pIgnoreStoreReadError, pLabelSelector, pLimit, pOrphan, pPropagation, pResourceVersion, pResourceVersionMatch, pSendInitialEvents, pTimeoutSeconds}
)

func queryParams(names ...string) []param {
	out := make([]param, 0, len(names))
	for _, n := range names {
		typ := "string"
		switch n {
		case "follow", "insecureSkipTLSVerifyBackend", "previous", "timestamps", "stderr", "stdin", "stdout", "tty":
			typ = "boolean"
		case "limitBytes", "sinceSeconds", "tailLines", "ports":
			typ = "integer"
		}
		out = append(out, param{name: n, in: "query", typ: typ, uniqueItems: true})
	}
	return out
}

// subresourceInfo describes how a subresource is exposed.
type subresourceInfo struct {
	// object is the Go type of the subresource; nil means the parent type.
	object reflect.Type
	// gvk of the subresource; zero means the parent's.
	gvk schema.GroupVersionKind
	// methods of the subresource.
	methods []string
	// connect marks streaming/proxy subresources with a string body.
	connect bool
	// optionsKind is the kind of the options of a connect subresource
	// (PodExecOptions, ...), used as its group-version-kind.
	optionsKind string
	params      []param
}

func subresourceFor(parent Resource, sub string) subresourceInfo {
	core := func(kind string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Version: "v1", Kind: kind}
	}
	switch sub {
	case "scale":
		return subresourceInfo{
			object:  reflect.TypeOf(autoscalingv1.Scale{}),
			gvk:     schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
			methods: []string{"get", "put", "patch"},
		}
	case "binding":
		return subresourceInfo{object: reflect.TypeOf(corev1.Binding{}), gvk: core("Binding"), methods: []string{"post"}}
	case "eviction":
		return subresourceInfo{
			object:  reflect.TypeOf(policyv1.Eviction{}),
			gvk:     schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"},
			methods: []string{"post"},
		}
	case "token":
		return subresourceInfo{
			object:  reflect.TypeOf(authenticationv1.TokenRequest{}),
			gvk:     schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"},
			methods: []string{"post"},
		}
	case "finalize":
		return subresourceInfo{methods: []string{"put"}}
	case "log":
		return subresourceInfo{methods: []string{"get"}, connect: true,
			params: queryParams("container", "follow", "insecureSkipTLSVerifyBackend", "limitBytes", "previous", "sinceSeconds", "stream", "tailLines", "timestamps")}
	case "exec":
		return subresourceInfo{methods: []string{"get", "post"}, connect: true, optionsKind: parent.GroupVersionKind.Kind + "ExecOptions",
			params: queryParams("command", "container", "stderr", "stdin", "stdout", "tty")}
	case "attach":
		return subresourceInfo{methods: []string{"get", "post"}, connect: true, optionsKind: parent.GroupVersionKind.Kind + "AttachOptions",
			params: queryParams("container", "stderr", "stdin", "stdout", "tty")}
	case "portforward":
		return subresourceInfo{methods: []string{"get", "post"}, connect: true, optionsKind: parent.GroupVersionKind.Kind + "PortForwardOptions",
			params: queryParams("ports")}
	case "proxy":
		return subresourceInfo{methods: []string{"get", "put", "post", "patch", "delete"}, connect: true, optionsKind: parent.GroupVersionKind.Kind + "ProxyOptions",
			params: queryParams("path")}
	}
	// status, ephemeralcontainers, resize, approval and anything unknown:
	// the parent object read and written through the subresource path.
	return subresourceInfo{methods: []string{"get", "put", "patch"}}
}

// groupPrefix returns the REST prefix of a group version: /api/v1 or
// /apis/<group>/<version>.
func groupPrefix(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

// gvDocPath is the key of a group version in the v3 discovery document.
func gvDocPath(gv schema.GroupVersion) string {
	return strings.TrimPrefix(groupPrefix(gv), "/")
}

// opIDPart is the group-version part of operation ids: CoreV1, AppsV1,
// RbacAuthorizationV1, ...
func opIDPart(gv schema.GroupVersion) string {
	group := gv.Group
	if group == "" {
		group = "core"
	}
	group = strings.TrimSuffix(group, ".k8s.io")
	var b strings.Builder
	for _, p := range strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(title(p))
	}
	b.WriteString(title(gv.Version))
	return b.String()
}

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// resourcePaths describes all paths of one resource.
func resourcePaths(r Resource) ([]pathItem, error) {
	gvk := r.GroupVersionKind
	if gvk.Version == "" || gvk.Kind == "" {
		return nil, fmt.Errorf("resource %q: group version kind %v is incomplete", r.Resource, gvk)
	}
	if r.Resource == "" || strings.Contains(r.Resource, "/") {
		return nil, fmt.Errorf("resource %v: invalid plural name %q", gvk, r.Resource)
	}
	if r.Object == nil {
		return nil, fmt.Errorf("resource %q: Object is nil", r.Resource)
	}
	gv := gvk.GroupVersion()
	objType := indirect(reflect.TypeOf(r.Object))
	verbs := map[string]bool{}
	for _, v := range r.Verbs {
		verbs[v] = true
	}
	var listType reflect.Type
	if r.ListObject != nil {
		listType = indirect(reflect.TypeOf(r.ListObject))
	} else if verbs["list"] || verbs["watch"] {
		return nil, fmt.Errorf("resource %q: ListObject is nil but list/watch are served", r.Resource)
	}

	prefix := groupPrefix(gv)
	tag := strings.ReplaceAll(strings.TrimSuffix(gv.Group, ".k8s.io"), ".", "_")
	if tag == "" {
		tag = "core"
	}
	tag += "_" + gv.Version
	idPart := opIDPart(gv)
	kind := gvk.Kind
	scope := ""
	if r.Namespaced {
		scope = "Namespaced"
	}

	pName := param{name: "name", in: "path", typ: "string", required: true, uniqueItems: true,
		desc: "name of the " + kind}
	pNamespace := param{name: "namespace", in: "path", typ: "string", required: true, uniqueItems: true,
		desc: "object name and auth scope, such as for teams and projects"}

	collection := prefix + "/" + r.Resource
	watchCollection := prefix + "/watch/" + r.Resource
	collectionParams := []param{pPretty}
	itemParams := []param{pName, pPretty}
	if r.Namespaced {
		collection = prefix + "/namespaces/{namespace}/" + r.Resource
		watchCollection = prefix + "/watch/namespaces/{namespace}/" + r.Resource
		collectionParams = []param{pNamespace, pPretty}
		itemParams = []param{pName, pNamespace, pPretty}
	}
	item := collection + "/{name}"

	objResponses := func(codes ...int) []response {
		var out []response
		for _, c := range codes {
			out = append(out, response{code: c, desc: statusText(c), model: objType})
		}
		return out
	}
	mk := func(method, id, desc, action string, g schema.GroupVersionKind) operation {
		return operation{method: method, id: id, desc: desc, action: action, gvk: g, tag: tag,
			consumes: anyConsumes, produces: objectProduces}
	}

	var paths []pathItem

	// Collection: list, create, deletecollection.
	coll := pathItem{gv: gv, path: collection, params: collectionParams}
	if verbs["list"] {
		op := mk("get", "list"+idPart+scope+kind, "list or watch objects of kind "+kind, "list", gvk)
		op.params = listParams
		op.produces = listProduces
		op.responses = []response{{code: 200, desc: "OK", model: listType}}
		coll.ops = append(coll.ops, op)
	}
	if verbs["create"] {
		op := mk("post", "create"+idPart+scope+kind, "create a "+kind, "post", gvk)
		op.params = writeParams
		op.body = objType
		op.responses = objResponses(200, 201, 202)
		coll.ops = append(coll.ops, op)
	}
	if verbs["deletecollection"] {
		op := mk("delete", "delete"+idPart+"Collection"+scope+kind, "delete collection of "+kind, "deletecollection", gvk)
		op.params = deleteColParam
		op.body = deleteOptionsType
		op.responses = []response{{code: 200, desc: "OK", model: statusType}}
		coll.ops = append(coll.ops, op)
	}
	if len(coll.ops) > 0 {
		paths = append(paths, coll)
	}

	// Item: get, replace, patch, delete.
	it := pathItem{gv: gv, path: item, params: itemParams}
	if verbs["get"] {
		op := mk("get", "read"+idPart+scope+kind, "read the specified "+kind, "get", gvk)
		op.responses = objResponses(200)
		it.ops = append(it.ops, op)
	}
	if verbs["update"] {
		op := mk("put", "replace"+idPart+scope+kind, "replace the specified "+kind, "put", gvk)
		op.params = writeParams
		op.body = objType
		op.responses = objResponses(200, 201)
		it.ops = append(it.ops, op)
	}
	if verbs["patch"] {
		op := mk("patch", "patch"+idPart+scope+kind, "partially update the specified "+kind, "patch", gvk)
		op.params = patchParams
		op.body = patchType
		op.consumes = patchConsumes
		op.responses = objResponses(200, 201)
		it.ops = append(it.ops, op)
	}
	if verbs["delete"] {
		op := mk("delete", "delete"+idPart+scope+kind, "delete a "+kind, "delete", gvk)
		op.params = deleteParams
		op.body = deleteOptionsType
		op.responses = []response{{code: 200, desc: "OK", model: statusType}, {code: 202, desc: "Accepted", model: statusType}}
		it.ops = append(it.ops, op)
	}
	if len(it.ops) > 0 {
		paths = append(paths, it)
	}

	// Lists across all namespaces.
	if r.Namespaced && verbs["list"] {
		op := mk("get", "list"+idPart+kind+"ForAllNamespaces", "list or watch objects of kind "+kind, "list", gvk)
		op.params = listParams
		op.produces = listProduces
		op.responses = []response{{code: 200, desc: "OK", model: listType}}
		paths = append(paths, pathItem{gv: gv, path: prefix + "/" + r.Resource, params: []param{pPretty}, ops: []operation{op}})
	}

	// Deprecated watch paths, still served by upstream.
	if verbs["watch"] {
		watchOp := func(id, desc, action string) operation {
			op := mk("get", id, desc, action, gvk)
			op.params = listParams
			op.produces = watchProduces
			op.responses = []response{{code: 200, desc: "OK", model: watchEventType}}
			return op
		}
		paths = append(paths,
			pathItem{gv: gv, path: watchCollection, params: collectionParams, ops: []operation{
				watchOp("watch"+idPart+scope+kind+"List", "watch individual changes to a list of "+kind+". deprecated: use the 'watch' parameter with a list operation instead.", "watchlist")}},
			pathItem{gv: gv, path: watchCollection + "/{name}", params: itemParams, ops: []operation{
				watchOp("watch"+idPart+scope+kind, "watch changes to an object of kind "+kind+". deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.", "watch")}},
		)
		if r.Namespaced {
			paths = append(paths, pathItem{gv: gv, path: prefix + "/watch/" + r.Resource, params: []param{pPretty}, ops: []operation{
				watchOp("watch"+idPart+kind+"ListForAllNamespaces", "watch individual changes to a list of "+kind+". deprecated: use the 'watch' parameter with a list operation instead.", "watchlist")}})
		}
	}

	// Subresources.
	seen := map[string]bool{}
	for _, sub := range r.Subresources {
		if sub == "" || seen[sub] || strings.Contains(sub, "/") {
			continue
		}
		seen[sub] = true
		info := subresourceFor(r, sub)
		subType := objType
		subGVK := gvk
		if info.object != nil {
			subType = info.object
			subGVK = info.gvk
		}
		if info.optionsKind != "" {
			subGVK = schema.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: info.optionsKind}
		}
		name := kind + title(sub)
		p := pathItem{gv: gv, path: item + "/" + sub, params: itemParams}
		for _, m := range info.methods {
			var op operation
			if info.connect {
				verb := "connect" + idPart + title(m) + scope + name
				action := "connect"
				if sub == "log" {
					verb, action = "read"+idPart+scope+name, "get"
				}
				op = mk(m, verb, "connect "+strings.ToUpper(m)+" requests to "+sub+" of "+kind, action, subGVK)
				op.params = info.params
				op.produces = textProduces
				op.responses = []response{{code: 200, desc: "OK"}}
				p.ops = append(p.ops, op)
				continue
			}
			switch m {
			case "get":
				op = mk(m, "read"+idPart+scope+name, "read "+sub+" of the specified "+kind, "get", subGVK)
				op.responses = []response{{code: 200, desc: "OK", model: subType}}
			case "put":
				op = mk(m, "replace"+idPart+scope+name, "replace "+sub+" of the specified "+kind, "put", subGVK)
				op.params = writeParams
				op.body = subType
				op.responses = []response{{code: 200, desc: "OK", model: subType}, {code: 201, desc: "Created", model: subType}}
			case "patch":
				op = mk(m, "patch"+idPart+scope+name, "partially update "+sub+" of the specified "+kind, "patch", subGVK)
				op.params = patchParams
				op.body = patchType
				op.consumes = patchConsumes
				op.responses = []response{{code: 200, desc: "OK", model: subType}, {code: 201, desc: "Created", model: subType}}
			case "post":
				op = mk(m, "create"+idPart+scope+name, "create "+sub+" of a "+kind, "post", subGVK)
				op.params = writeParams
				op.body = subType
				op.responses = []response{{code: 200, desc: "OK", model: subType}, {code: 201, desc: "Created", model: subType}, {code: 202, desc: "Accepted", model: subType}}
			}
			p.ops = append(p.ops, op)
		}
		if len(p.ops) > 0 {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

func statusText(code int) string {
	switch code {
	case 200:
		return "OK"
	case 201:
		return "Created"
	case 202:
		return "Accepted"
	case 401:
		return "Unauthorized"
	}
	return fmt.Sprint(code)
}
