package openapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	clientopenapi "k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi/cached"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	explainv2 "k8s.io/kubectl/pkg/explain/v2"
	kubectlopenapi "k8s.io/kubectl/pkg/util/openapi"
	"k8s.io/kubectl/pkg/validation"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/apiserver/openapi"
)

var allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

func res(gvk schema.GroupVersionKind, plural string, namespaced bool, obj, list runtime.Object, subs ...string) openapi.Resource {
	return openapi.Resource{
		GroupVersionKind: gvk,
		Resource:         plural,
		Namespaced:       namespaced,
		Verbs:            allVerbs,
		Subresources:     subs,
		Object:           obj,
		ListObject:       list,
	}
}

func core(kind string) schema.GroupVersionKind { return corev1.SchemeGroupVersion.WithKind(kind) }
func apps(kind string) schema.GroupVersionKind { return appsv1.SchemeGroupVersion.WithKind(kind) }

// testResources resembles what the minik8s apiserver serves.
func testResources() []openapi.Resource {
	return []openapi.Resource{
		res(core("Pod"), "pods", true, &corev1.Pod{}, &corev1.PodList{},
			"status", "binding", "eviction", "log", "exec", "attach", "portforward", "ephemeralcontainers", "resize", "proxy"),
		res(core("Service"), "services", true, &corev1.Service{}, &corev1.ServiceList{}, "status", "proxy"),
		res(core("ConfigMap"), "configmaps", true, &corev1.ConfigMap{}, &corev1.ConfigMapList{}),
		res(core("Secret"), "secrets", true, &corev1.Secret{}, &corev1.SecretList{}),
		res(core("Namespace"), "namespaces", false, &corev1.Namespace{}, &corev1.NamespaceList{}, "status", "finalize"),
		res(core("Node"), "nodes", false, &corev1.Node{}, &corev1.NodeList{}, "status", "proxy"),
		res(core("ServiceAccount"), "serviceaccounts", true, &corev1.ServiceAccount{}, &corev1.ServiceAccountList{}, "token"),
		res(core("Endpoints"), "endpoints", true, &corev1.Endpoints{}, &corev1.EndpointsList{}),
		res(core("Event"), "events", true, &corev1.Event{}, &corev1.EventList{}),
		res(core("PersistentVolume"), "persistentvolumes", false, &corev1.PersistentVolume{}, &corev1.PersistentVolumeList{}, "status"),
		res(core("PersistentVolumeClaim"), "persistentvolumeclaims", true, &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolumeClaimList{}, "status"),
		res(core("ReplicationController"), "replicationcontrollers", true, &corev1.ReplicationController{}, &corev1.ReplicationControllerList{}, "status", "scale"),
		{
			GroupVersionKind: core("Binding"), Resource: "bindings", Namespaced: true,
			Verbs: []string{"create"}, Object: &corev1.Binding{},
		},
		res(apps("Deployment"), "deployments", true, &appsv1.Deployment{}, &appsv1.DeploymentList{}, "status", "scale"),
		res(apps("ReplicaSet"), "replicasets", true, &appsv1.ReplicaSet{}, &appsv1.ReplicaSetList{}, "status", "scale"),
		res(apps("StatefulSet"), "statefulsets", true, &appsv1.StatefulSet{}, &appsv1.StatefulSetList{}, "status", "scale"),
		res(apps("DaemonSet"), "daemonsets", true, &appsv1.DaemonSet{}, &appsv1.DaemonSetList{}, "status"),
		res(apps("ControllerRevision"), "controllerrevisions", true, &appsv1.ControllerRevision{}, &appsv1.ControllerRevisionList{}),
		res(batchv1.SchemeGroupVersion.WithKind("Job"), "jobs", true, &batchv1.Job{}, &batchv1.JobList{}, "status"),
		res(batchv1.SchemeGroupVersion.WithKind("CronJob"), "cronjobs", true, &batchv1.CronJob{}, &batchv1.CronJobList{}, "status"),
		res(autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), "horizontalpodautoscalers", true,
			&autoscalingv2.HorizontalPodAutoscaler{}, &autoscalingv2.HorizontalPodAutoscalerList{}, "status"),
		res(rbacv1.SchemeGroupVersion.WithKind("Role"), "roles", true, &rbacv1.Role{}, &rbacv1.RoleList{}),
		res(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), "clusterroles", false, &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleList{}),
		res(rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), "rolebindings", true, &rbacv1.RoleBinding{}, &rbacv1.RoleBindingList{}),
		res(rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"), "clusterrolebindings", false, &rbacv1.ClusterRoleBinding{}, &rbacv1.ClusterRoleBindingList{}),
		res(networkingv1.SchemeGroupVersion.WithKind("Ingress"), "ingresses", true, &networkingv1.Ingress{}, &networkingv1.IngressList{}, "status"),
		res(networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"), "networkpolicies", true, &networkingv1.NetworkPolicy{}, &networkingv1.NetworkPolicyList{}),
		res(policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), "poddisruptionbudgets", true, &policyv1.PodDisruptionBudget{}, &policyv1.PodDisruptionBudgetList{}, "status"),
		res(coordinationv1.SchemeGroupVersion.WithKind("Lease"), "leases", true, &coordinationv1.Lease{}, &coordinationv1.LeaseList{}),
	}
}

type env struct {
	server    *httptest.Server
	config    *rest.Config
	discovery *discovery.DiscoveryClient
	dynamic   dynamic.Interface
}

func newEnv(t *testing.T, resources []openapi.Resource) *env {
	t.Helper()
	h, err := openapi.NewHandler(resources)
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/openapi/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{server: srv, config: cfg, discovery: dc, dynamic: dyn}
}

func (e *env) v3Spec(t *testing.T, gv schema.GroupVersion) *spec3.OpenAPI {
	t.Helper()
	doc, err := openapi3.NewRoot(e.discovery.OpenAPIV3()).GVSpec(gv)
	if err != nil {
		t.Fatalf("GVSpec(%v): %v", gv, err)
	}
	return doc
}

func TestNewHandlerRejectsBadResources(t *testing.T) {
	tests := []struct {
		name string
		res  []openapi.Resource
	}{
		{"no object", []openapi.Resource{{GroupVersionKind: core("Pod"), Resource: "pods", Verbs: []string{"get"}}}},
		{"no kind", []openapi.Resource{{GroupVersionKind: schema.GroupVersionKind{Version: "v1"}, Resource: "pods", Object: &corev1.Pod{}}}},
		{"no plural", []openapi.Resource{{GroupVersionKind: core("Pod"), Object: &corev1.Pod{}}}},
		{"list without list object", []openapi.Resource{{GroupVersionKind: core("Pod"), Resource: "pods", Verbs: []string{"list"}, Object: &corev1.Pod{}}}},
		{"duplicate", []openapi.Resource{
			res(core("Pod"), "pods", true, &corev1.Pod{}, &corev1.PodList{}),
			res(core("Pod"), "pods", true, &corev1.Pod{}, &corev1.PodList{}),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := openapi.NewHandler(tt.res); err == nil {
				t.Fatal("expected an error")
			}
		})
	}
}

func TestQueryParamVerifierV3(t *testing.T) {
	e := newEnv(t, testResources())
	tests := []struct {
		gvk       schema.GroupVersionKind
		supported bool
	}{
		{apps("Deployment"), true},
		{core("Pod"), true},
		{core("Namespace"), true},
		{core("ConfigMap"), true},
		{batchv1.SchemeGroupVersion.WithKind("Job"), true},
		{schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, false}, // no autoscaling/v1 document
		{apps("Nonexistent"), false},
		{schema.GroupVersionKind{Version: "v1", Kind: "List"}, false},
	}
	// The verifier walks a map of paths; repeat to shake out any PATCH
	// operation of the kind that lacks the parameter.
	for i := 0; i < 5; i++ {
		// kubectl memory-caches the v3 client; exercise both.
		for _, client := range []clientopenapi.Client{e.discovery.OpenAPIV3(), cached.NewClient(e.discovery.OpenAPIV3())} {
			v := resource.NewQueryParamVerifierV3(e.dynamic, client, resource.QueryParamFieldValidation)
			for _, tt := range tests {
				err := v.HasSupport(tt.gvk)
				if tt.supported && err != nil {
					t.Errorf("HasSupport(%v) = %v, want nil", tt.gvk, err)
				}
				if !tt.supported && err == nil {
					t.Errorf("HasSupport(%v) = nil, want error", tt.gvk)
				}
			}
		}
	}
}

func TestQueryParamVerifierV2(t *testing.T) {
	e := newEnv(t, testResources())
	v := resource.NewQueryParamVerifier(e.dynamic, e.discovery, resource.QueryParamFieldValidation)
	for _, gvk := range []schema.GroupVersionKind{apps("Deployment"), core("Pod"), core("Service")} {
		if err := v.HasSupport(gvk); err != nil {
			t.Errorf("HasSupport(%v) = %v", gvk, err)
		}
	}
}

// Every write operation carries the query parameters kubectl and server
// side apply rely on.
func TestWriteOperationParameters(t *testing.T) {
	e := newEnv(t, testResources())
	root := openapi3.NewRoot(e.discovery.OpenAPIV3())
	gvs, err := root.GroupVersions()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"patch": {"dryRun", "fieldManager", "fieldValidation", "force"},
		"put":   {"dryRun", "fieldManager", "fieldValidation"},
		"post":  {"dryRun", "fieldManager", "fieldValidation"},
	}
	for _, gv := range gvs {
		doc := e.v3Spec(t, gv)
		for path, item := range doc.Paths.Paths {
			ops := map[string]*spec3.Operation{"patch": item.Patch, "put": item.Put, "post": item.Post}
			for method, op := range ops {
				if op == nil || op.Extensions[`x-kubernetes-action`] == "connect" {
					continue
				}
				names := map[string]bool{}
				for _, p := range op.Parameters {
					if p.In == "query" {
						names[p.Name] = true
					}
				}
				for _, n := range want[method] {
					if !names[n] {
						t.Errorf("%s %s: missing query parameter %q", method, path, n)
					}
				}
				if op.RequestBody == nil || len(op.RequestBody.Content) == 0 {
					t.Errorf("%s %s: no request body", method, path)
				}
				if method == "patch" {
					if _, ok := op.RequestBody.Content["application/strategic-merge-patch+json"]; !ok {
						t.Errorf("%s %s: strategic merge patch not accepted", method, path)
					}
				}
			}
		}
	}
}

func TestV3Discovery(t *testing.T) {
	e := newEnv(t, testResources())
	paths, err := e.discovery.OpenAPIV3().Paths()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"api/v1", "apis/apps/v1", "apis/autoscaling/v2", "apis/batch/v1", "apis/coordination.k8s.io/v1",
		"apis/networking.k8s.io/v1", "apis/policy/v1", "apis/rbac.authorization.k8s.io/v1"}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("paths = %v, want %v", keys, want)
	}
	for k, gv := range paths {
		if !strings.HasPrefix(gv.ServerRelativeURL(), "/openapi/v3/"+k+"?hash=") {
			t.Errorf("%s: serverRelativeURL %q", k, gv.ServerRelativeURL())
		}
		data, err := gv.Schema("application/json")
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		var doc spec3.OpenAPI
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		pb, err := gv.Schema(clientopenapi.ContentTypeOpenAPIV3PB)
		if err != nil {
			t.Fatalf("%s protobuf: %v", k, err)
		}
		var pdoc openapi_v3.Document
		if err := proto.Unmarshal(pb, &pdoc); err != nil {
			t.Fatalf("%s protobuf: %v", k, err)
		}
		if len(pdoc.GetComponents().GetSchemas().GetAdditionalProperties()) != len(doc.Components.Schemas) {
			t.Errorf("%s: protobuf and JSON disagree on the number of schemas", k)
		}
	}
}

func findKind(t *testing.T, doc *spec3.OpenAPI, gvk schema.GroupVersionKind) (string, *spec.Schema) {
	t.Helper()
	for name, s := range doc.Components.Schemas {
		var list []map[string]string
		if err := s.Extensions.GetObject("x-kubernetes-group-version-kind", &list); err != nil {
			continue
		}
		for _, g := range list {
			if g["group"] == gvk.Group && g["version"] == gvk.Version && g["kind"] == gvk.Kind {
				return name, s
			}
		}
	}
	t.Fatalf("no component schema for %v", gvk)
	return "", nil
}

func TestStrategicMergePatchMetaV3(t *testing.T) {
	e := newEnv(t, testResources())
	tests := []struct {
		gvk      schema.GroupVersionKind
		path     []string // struct fields, then the list field
		mergeKey string
		strategy []string
	}{
		{core("Pod"), []string{"spec", "containers"}, "name", []string{"merge"}},
		{core("Pod"), []string{"spec", "volumes"}, "name", []string{"merge", "retainKeys"}},
		{core("Pod"), []string{"metadata", "ownerReferences"}, "uid", []string{"merge"}},
		{core("Pod"), []string{"metadata", "finalizers"}, "", []string{"merge"}},
		{apps("Deployment"), []string{"spec", "template", "spec", "containers"}, "name", []string{"merge"}},
		{core("Service"), []string{"spec", "ports"}, "port", []string{"merge"}},
		{core("Pod"), []string{"spec", "tolerations"}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.gvk.Kind+"."+strings.Join(tt.path, "."), func(t *testing.T) {
			doc := e.v3Spec(t, tt.gvk.GroupVersion())
			_, s := findKind(t, doc, tt.gvk)
			var meta strategicpatch.LookupPatchMeta = strategicpatch.PatchMetaFromOpenAPIV3{Schema: s, SchemaList: doc.Components.Schemas}
			for _, f := range tt.path[:len(tt.path)-1] {
				next, _, err := meta.LookupPatchMetadataForStruct(f)
				if err != nil {
					t.Fatalf("struct %s: %v", f, err)
				}
				meta = next
			}
			_, pm, err := meta.LookupPatchMetadataForSlice(tt.path[len(tt.path)-1])
			if err != nil {
				t.Fatal(err)
			}
			if pm.GetPatchMergeKey() != tt.mergeKey {
				t.Errorf("merge key %q, want %q", pm.GetPatchMergeKey(), tt.mergeKey)
			}
			if strings.Join(pm.GetPatchStrategies(), ",") != strings.Join(tt.strategy, ",") {
				t.Errorf("strategies %v, want %v", pm.GetPatchStrategies(), tt.strategy)
			}
		})
	}
}

// The same three-way merge kubectl apply computes from the v3 schema.
func TestThreeWayMergePatchV3(t *testing.T) {
	e := newEnv(t, testResources())
	doc := e.v3Spec(t, appsv1.SchemeGroupVersion)
	_, s := findKind(t, doc, apps("Deployment"))
	meta := strategicpatch.PatchMetaFromOpenAPIV3{Schema: s, SchemaList: doc.Components.Schemas}
	original := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[{"name":"a","image":"nginx:1"},{"name":"b","image":"busybox"}]}}}}`
	modified := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[{"name":"a","image":"nginx:2"}]}}}}`
	current := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":1,"template":{"spec":{"containers":[{"name":"a","image":"nginx:1","imagePullPolicy":"IfNotPresent"},{"name":"b","image":"busybox"}]}}}}`
	patch, err := strategicpatch.CreateThreeWayMergePatch([]byte(original), []byte(modified), []byte(current), meta, false)
	if err != nil {
		t.Fatal(err)
	}
	got := string(patch)
	for _, want := range []string{`"$setElementOrder/containers":[{"name":"a"}]`, `{"$patch":"delete","name":"b"}`, `{"image":"nginx:2","name":"a"}`} {
		if !strings.Contains(got, want) {
			t.Errorf("patch %s lacks %s", got, want)
		}
	}
}

func TestOpenAPIV2Validation(t *testing.T) {
	e := newEnv(t, testResources())
	doc, err := e.discovery.OpenAPISchema()
	if err != nil {
		t.Fatalf("OpenAPISchema: %v", err)
	}
	resources, err := kubectlopenapi.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("NewOpenAPIData: %v", err)
	}
	for _, gvk := range []schema.GroupVersionKind{core("Pod"), apps("Deployment"), core("PodList"), core("Status")} {
		if resources.LookupResource(gvk) == nil {
			t.Errorf("no v2 schema for %v", gvk)
		}
	}
	consumes := resources.GetConsumes(core("Pod"), "PATCH")
	if !contains(consumes, "application/strategic-merge-patch+json") {
		t.Errorf("PATCH consumes %v", consumes)
	}

	validator := validation.NewSchemaValidation(parserGetter{kubectlopenapi.NewOpenAPIParser(e.discovery)})
	tests := []struct {
		name    string
		doc     string
		wantErr string
	}{
		{"valid pod", `
apiVersion: v1
kind: Pod
metadata:
  name: p
  labels: {app: web}
  creationTimestamp: null
spec:
  containers:
  - name: c
    image: nginx
    ports: [{containerPort: 80}]
    resources: {limits: {cpu: 500m, memory: 1Gi}}
    readinessProbe: {httpGet: {port: http, path: /}}
  volumes:
  - name: v
    configMap: {name: cm}
`, ""},
		{"unknown pod field", `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    image: nginx
    imagePullPolicyy: Always
`, `unknown field "imagePullPolicyy"`},
		{"missing required field", `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - image: nginx
`, `missing required field "name"`},
		{"wrong type", `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: {name: c}
`, `invalid type`},
		{"valid deployment", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  replicas: 2
  selector: {matchLabels: {app: d}}
  strategy: {rollingUpdate: {maxSurge: 25%, maxUnavailable: 1}}
  template:
    metadata: {labels: {app: d}}
    spec:
      containers: [{name: c, image: nginx}]
`, ""},
		{"valid secret", `
apiVersion: v1
kind: Secret
metadata: {name: s}
data: {k: dmFsdWU=}
stringData: {x: y}
`, ""},
		{"unknown kind is skipped", `
apiVersion: example.com/v1
kind: Widget
spec: {anything: 1}
`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validator.ValidateBytes([]byte(tt.doc))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("expected error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

// parserGetter is what kubectl's factory hands to NewSchemaValidation.
type parserGetter struct {
	p *kubectlopenapi.CachedOpenAPIParser
}

func (g parserGetter) OpenAPISchema() (kubectlopenapi.Resources, error) { return g.p.Parse() }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestExplain(t *testing.T) {
	e := newEnv(t, testResources())
	tests := []struct {
		gvr    schema.GroupVersionResource
		fields []string
		want   []string
	}{
		{corev1.SchemeGroupVersion.WithResource("pods"), []string{"spec", "containers"},
			[]string{"KIND:       Pod", "VERSION:    v1", "FIELD: containers <[]Container>", "name\t<string> -required-", "image\t<string>"}},
		{corev1.SchemeGroupVersion.WithResource("pods"), nil,
			[]string{"KIND:       Pod", "metadata\t<ObjectMeta>", "spec\t<PodSpec>"}},
		{appsv1.SchemeGroupVersion.WithResource("deployments"), []string{"spec", "strategy"},
			[]string{"GROUP:      apps", "KIND:       Deployment", "rollingUpdate\t<RollingUpdateDeployment>"}},
		{corev1.SchemeGroupVersion.WithResource("nodes"), []string{"metadata", "creationTimestamp"},
			[]string{"FIELD: creationTimestamp <string>"}},
	}
	for _, tt := range tests {
		t.Run(tt.gvr.Resource+"."+strings.Join(tt.fields, "."), func(t *testing.T) {
			var buf bytes.Buffer
			if err := explainv2.PrintModelDescription(tt.fields, &buf, e.discovery.OpenAPIV3(), tt.gvr, false, 0, "plaintext"); err != nil {
				t.Fatalf("explain: %v", err)
			}
			out := buf.String()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// Spot checks of the generated schemas.
func TestSchemas(t *testing.T) {
	e := newEnv(t, testResources())
	doc := e.v3Spec(t, corev1.SchemeGroupVersion)
	schemas := doc.Components.Schemas
	get := func(name string) *spec.Schema {
		t.Helper()
		s, ok := schemas[name]
		if !ok {
			t.Fatalf("no schema %s", name)
		}
		return s
	}
	asJSON := func(v interface{}) string {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	tests := []struct {
		name   string
		schema string
		field  string // empty: the schema itself
		want   []string
	}{
		{"pod gvk", "io.k8s.api.core.v1.Pod", "", []string{`"x-kubernetes-group-version-kind":[{"group":"","kind":"Pod","version":"v1"}]`, `"type":"object"`}},
		{"pod list gvk", "io.k8s.api.core.v1.PodList", "", []string{`"kind":"PodList"`, `"required":["items"]`}},
		{"metadata ref", "io.k8s.api.core.v1.Pod", "metadata", []string{`"allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]`}},
		{"time", "io.k8s.apimachinery.pkg.apis.meta.v1.Time", "", []string{`"type":"string"`, `"format":"date-time"`}},
		{"micro time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime", "", []string{`"format":"date-time"`}},
		{"int or string", "io.k8s.apimachinery.pkg.util.intstr.IntOrString", "", []string{`"x-kubernetes-int-or-string":true`, `"oneOf":[{"type":"integer"},{"type":"string"}]`, `"format":"int-or-string"`}},
		{"quantity", "io.k8s.apimachinery.pkg.api.resource.Quantity", "", []string{`"x-kubernetes-int-or-string":true`, `"oneOf":[{"type":"string"},{"type":"number"}]`}},
		{"raw extension", "io.k8s.apimachinery.pkg.runtime.RawExtension", "", []string{`"type":"object"`, `"x-kubernetes-preserve-unknown-fields":true`}},
		{"managed fields", "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1", "", []string{`"type":"object"`}},
		{"secret data", "io.k8s.api.core.v1.Secret", "data", []string{`"additionalProperties":{"type":"string","format":"byte"}`}},
		{"labels", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "labels", []string{`"additionalProperties":{"type":"string"}`}},
		{"resource list", "io.k8s.api.core.v1.ResourceRequirements", "limits", []string{`"additionalProperties":{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"}`}},
		{"containers", "io.k8s.api.core.v1.PodSpec", "containers", []string{`"type":"array"`, `"items":{"$ref":"#/components/schemas/io.k8s.api.core.v1.Container"}`, `"x-kubernetes-patch-merge-key":"name"`, `"x-kubernetes-patch-strategy":"merge"`}},
		{"required", "io.k8s.api.core.v1.Container", "", []string{`"required":["name"]`}},
		{"int32", "io.k8s.api.core.v1.ContainerPort", "containerPort", []string{`"format":"int32"`, `"type":"integer"`}},
		{"int64", "io.k8s.api.core.v1.PodSpec", "activeDeadlineSeconds", []string{`"format":"int64"`}},
		{"inline volume source", "io.k8s.api.core.v1.Volume", "configMap", []string{`io.k8s.api.core.v1.ConfigMapVolumeSource`}},
		{"inline type meta", "io.k8s.api.core.v1.Pod", "apiVersion", []string{`"type":"string"`}},
		{"description", "io.k8s.api.core.v1.Pod", "", []string{`"description":"Pod is a collection of containers`}},
		{"delete options", "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", "", []string{`{"group":"","kind":"DeleteOptions","version":"v1"}`}},
		{"status", "io.k8s.apimachinery.pkg.apis.meta.v1.Status", "", []string{`{"group":"","kind":"Status","version":"v1"}`}},
		{"binding", "io.k8s.api.core.v1.Binding", "", []string{`"kind":"Binding"`}},
		{"eviction", "io.k8s.api.policy.v1.Eviction", "", []string{`"kind":"Eviction"`}},
		{"scale", "io.k8s.api.autoscaling.v1.Scale", "", []string{`{"group":"autoscaling","kind":"Scale","version":"v1"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := get(tt.schema)
			var got string
			if tt.field == "" {
				got = asJSON(s)
			} else {
				f, ok := s.Properties[tt.field]
				if !ok {
					t.Fatalf("%s has no field %s", tt.schema, tt.field)
				}
				got = asJSON(f)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("%s lacks %s", got, w)
				}
			}
		})
	}
	if _, ok := schemas["io.k8s.api.apps.v1.Deployment"]; ok {
		t.Error("core/v1 document contains apps/v1 schemas")
	}
}

func TestPaths(t *testing.T) {
	e := newEnv(t, testResources())
	type opCheck struct {
		path, method, action, kind, id string
	}
	tests := []struct {
		gv  schema.GroupVersion
		ops []opCheck
	}{
		{corev1.SchemeGroupVersion, []opCheck{
			{"/api/v1/namespaces/{namespace}/pods", "get", "list", "Pod", "listCoreV1NamespacedPod"},
			{"/api/v1/namespaces/{namespace}/pods", "post", "post", "Pod", "createCoreV1NamespacedPod"},
			{"/api/v1/namespaces/{namespace}/pods", "delete", "deletecollection", "Pod", "deleteCoreV1CollectionNamespacedPod"},
			{"/api/v1/namespaces/{namespace}/pods/{name}", "get", "get", "Pod", "readCoreV1NamespacedPod"},
			{"/api/v1/namespaces/{namespace}/pods/{name}", "put", "put", "Pod", "replaceCoreV1NamespacedPod"},
			{"/api/v1/namespaces/{namespace}/pods/{name}", "patch", "patch", "Pod", "patchCoreV1NamespacedPod"},
			{"/api/v1/namespaces/{namespace}/pods/{name}", "delete", "delete", "Pod", "deleteCoreV1NamespacedPod"},
			{"/api/v1/namespaces/{namespace}/pods/{name}/status", "patch", "patch", "Pod", "patchCoreV1NamespacedPodStatus"},
			{"/api/v1/namespaces/{namespace}/pods/{name}/binding", "post", "post", "Binding", "createCoreV1NamespacedPodBinding"},
			{"/api/v1/namespaces/{namespace}/pods/{name}/eviction", "post", "post", "Eviction", "createCoreV1NamespacedPodEviction"},
			{"/api/v1/namespaces/{namespace}/pods/{name}/exec", "post", "connect", "PodExecOptions", "connectCoreV1PostNamespacedPodExec"},
			{"/api/v1/namespaces/{namespace}/pods/{name}/log", "get", "get", "Pod", "readCoreV1NamespacedPodLog"},
			{"/api/v1/pods", "get", "list", "Pod", "listCoreV1PodForAllNamespaces"},
			{"/api/v1/watch/namespaces/{namespace}/pods", "get", "watchlist", "Pod", "watchCoreV1NamespacedPodList"},
			{"/api/v1/watch/namespaces/{namespace}/pods/{name}", "get", "watch", "Pod", "watchCoreV1NamespacedPod"},
			{"/api/v1/watch/pods", "get", "watchlist", "Pod", "watchCoreV1PodListForAllNamespaces"},
			{"/api/v1/nodes/{name}", "patch", "patch", "Node", "patchCoreV1Node"},
			{"/api/v1/namespaces/{name}/finalize", "put", "put", "Namespace", "replaceCoreV1NamespaceFinalize"},
			{"/api/v1/namespaces/{namespace}/bindings", "post", "post", "Binding", "createCoreV1NamespacedBinding"},
			{"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", "post", "post", "TokenRequest", "createCoreV1NamespacedServiceAccountToken"},
		}},
		{appsv1.SchemeGroupVersion, []opCheck{
			{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "patch", "patch", "Deployment", "patchAppsV1NamespacedDeployment"},
			{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "patch", "patch", "Scale", "patchAppsV1NamespacedDeploymentScale"},
		}},
		{rbacv1.SchemeGroupVersion, []opCheck{
			{"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}", "get", "get", "ClusterRole", "readRbacAuthorizationV1ClusterRole"},
			{"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles", "post", "post", "Role", "createRbacAuthorizationV1NamespacedRole"},
			{"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings/{name}", "put", "put", "RoleBinding", "replaceRbacAuthorizationV1NamespacedRoleBinding"},
			{"/apis/rbac.authorization.k8s.io/v1/rolebindings", "get", "list", "RoleBinding", "listRbacAuthorizationV1RoleBindingForAllNamespaces"},
			{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}", "patch", "patch", "ClusterRoleBinding", "patchRbacAuthorizationV1ClusterRoleBinding"},
		}},
	}
	for _, tt := range tests {
		doc := e.v3Spec(t, tt.gv)
		for _, c := range tt.ops {
			t.Run(c.method+" "+c.path, func(t *testing.T) {
				item, ok := doc.Paths.Paths[c.path]
				if !ok {
					t.Fatalf("no path %s", c.path)
				}
				op := map[string]*spec3.Operation{"get": item.Get, "put": item.Put, "post": item.Post, "patch": item.Patch, "delete": item.Delete}[c.method]
				if op == nil {
					t.Fatalf("no %s operation", c.method)
				}
				if got := op.Extensions["x-kubernetes-action"]; got != c.action {
					t.Errorf("action %v, want %s", got, c.action)
				}
				var gvk map[string]string
				if err := op.Extensions.GetObject("x-kubernetes-group-version-kind", &gvk); err != nil || gvk["kind"] != c.kind {
					t.Errorf("gvk %v (%v), want kind %s", gvk, err, c.kind)
				}
				if op.OperationId != c.id {
					t.Errorf("operationId %s, want %s", op.OperationId, c.id)
				}
			})
		}
	}
	// Verbs limit the operations.
	doc := e.v3Spec(t, corev1.SchemeGroupVersion)
	if item := doc.Paths.Paths["/api/v1/namespaces/{namespace}/bindings"]; item == nil || item.Get != nil || item.Delete != nil {
		t.Errorf("bindings path should only allow create: %+v", item)
	}
	if _, ok := doc.Paths.Paths["/api/v1/namespaces/{namespace}/bindings/{name}"]; ok {
		t.Error("bindings has no item operations")
	}
}

func TestHTTP(t *testing.T) {
	e := newEnv(t, testResources())
	var disc struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	resp := mustGet(t, e.server.URL+"/openapi/v3", nil, http.StatusOK)
	if err := json.Unmarshal(resp.body, &disc); err != nil {
		t.Fatal(err)
	}
	appsURL := disc.Paths["apis/apps/v1"].ServerRelativeURL
	if appsURL == "" {
		t.Fatalf("no apps/v1 in discovery: %s", resp.body)
	}
	hashed := mustGet(t, e.server.URL+appsURL, nil, http.StatusOK)
	v2 := mustGet(t, e.server.URL+"/openapi/v2", nil, http.StatusOK)

	tests := []struct {
		name        string
		path        string
		method      string
		header      map[string]string
		status      int
		contentType string
		headers     map[string]string
		check       func(t *testing.T, body []byte)
	}{
		{name: "discovery", path: "/openapi/v3", status: 200, contentType: "application/json"},
		{name: "v2 json by default", path: "/openapi/v2", status: 200, contentType: "application/json",
			check: func(t *testing.T, body []byte) {
				var sw spec.Swagger
				if err := json.Unmarshal(body, &sw); err != nil {
					t.Fatal(err)
				}
				if sw.Swagger != "2.0" || sw.Definitions["io.k8s.api.core.v1.Pod"].Type[0] != "object" {
					t.Errorf("unexpected v2 document")
				}
			}},
		{name: "v2 protobuf", path: "/openapi/v2", header: map[string]string{"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"},
			status: 200, contentType: "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
			check: func(t *testing.T, body []byte) {
				var doc openapi_v2.Document
				if err := proto.Unmarshal(body, &doc); err != nil {
					t.Fatal(err)
				}
				if doc.GetSwagger() != "2.0" {
					t.Errorf("swagger = %q", doc.GetSwagger())
				}
			}},
		{name: "v2 protobuf by preference", path: "/openapi/v2",
			header: map[string]string{"Accept": "application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf"},
			status: 200, contentType: "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"},
		{name: "v2 not acceptable", path: "/openapi/v2", header: map[string]string{"Accept": "text/html"}, status: 406},
		{name: "v2 etag", path: "/openapi/v2", header: map[string]string{"If-None-Match": v2.header.Get("Etag")}, status: 304},
		{name: "group with hash", path: appsURL, status: 200, contentType: "application/json",
			headers: map[string]string{"Cache-Control": "public, immutable", "Vary": "Accept"}},
		{name: "group without hash", path: "/openapi/v3/apis/apps/v1", status: 200, contentType: "application/json",
			headers: map[string]string{"Cache-Control": "no-cache, private", "Etag": hashed.header.Get("Etag")}},
		{name: "stale hash redirects", path: "/openapi/v3/apis/apps/v1?hash=0123", status: 301,
			headers: map[string]string{"Location": appsURL}},
		{name: "group etag", path: "/openapi/v3/api/v1", header: map[string]string{"If-None-Match": `"` + strings.TrimPrefix(disc.Paths["api/v1"].ServerRelativeURL, "/openapi/v3/api/v1?hash=") + `"`}, status: 304},
		{name: "group protobuf", path: "/openapi/v3/api/v1", header: map[string]string{"Accept": "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"},
			status: 200, contentType: "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"},
		{name: "unknown group", path: "/openapi/v3/apis/example.com/v1", status: 404},
		{name: "unknown path", path: "/openapi/v4", status: 404},
		{name: "post", path: "/openapi/v2", method: "POST", status: 405},
		{name: "head", path: "/openapi/v3", method: "HEAD", status: 200},
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "GET"
			}
			req, err := http.NewRequest(method, e.server.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.contentType != "" && resp.Header.Get("Content-Type") != tt.contentType {
				t.Errorf("content type %q, want %q", resp.Header.Get("Content-Type"), tt.contentType)
			}
			for k, v := range tt.headers {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if tt.check != nil {
				tt.check(t, body)
			}
		})
	}
}

type result struct {
	header http.Header
	body   []byte
}

func mustGet(t *testing.T, url string, header map[string]string, status int) result {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status {
		t.Fatalf("GET %s: status %d, want %d", url, resp.StatusCode, status)
	}
	return result{header: resp.Header, body: body}
}

// Tree is a recursive kind, like apiextensions' JSONSchemaProps.
type Tree struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Children          []Tree               `json:"children,omitempty"`
	Next              *Tree                `json:"next,omitempty"`
	ByName            map[string]Tree      `json:"byName,omitempty"`
	Value             interface{}          `json:"value,omitempty"`
	Extra             runtime.RawExtension `json:"extra,omitempty"`
	Payload           []byte               `json:"payload,omitempty"`
	Weight            float64              `json:"weight"`
	Flag              bool                 `json:"flag"`
	Hidden            string               `json:"-"`
	unexported        string
	Inline            `json:",inline"`
}

// Inline is embedded with its fields promoted.
type Inline struct {
	Promoted string `json:"promoted,omitempty"`
	Weight   string `json:"weight,omitempty"` // shadowed by Tree.Weight
}

func (t *Tree) DeepCopyObject() runtime.Object {
	out := *t
	_ = out.unexported
	return &out
}

type TreeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tree `json:"items"`
}

func (t *TreeList) DeepCopyObject() runtime.Object { out := *t; return &out }

func TestRecursiveCustomType(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.minik8s.io", Version: "v1", Kind: "Tree"}
	e := newEnv(t, []openapi.Resource{res(gvk, "trees", false, &Tree{}, &TreeList{}, "status")})
	doc := e.v3Spec(t, gvk.GroupVersion())
	name, s := findKind(t, doc, gvk)
	if name != "com.github.minik8s.minik8s.pkg.apiserver.openapi_test.Tree" {
		t.Errorf("model name %s", name)
	}
	ref := "#/components/schemas/" + name
	if got := s.Properties["children"].Items.Schema.Ref.String(); got != ref {
		t.Errorf("children items ref %q", got)
	}
	if next := s.Properties["next"]; next.Ref.String() != ref {
		got := next.Ref.String()
		t.Errorf("next ref %q", got)
	}
	if got := s.Properties["byName"].AdditionalProperties.Schema.Ref.String(); got != ref {
		t.Errorf("byName ref %q", got)
	}
	if s.Properties["value"].Extensions["x-kubernetes-preserve-unknown-fields"] != true {
		t.Errorf("value: %+v", s.Properties["value"])
	}
	if got := s.Properties["payload"].Format; got != "byte" {
		t.Errorf("payload format %q", got)
	}
	if got := s.Properties["weight"].Type; len(got) != 1 || got[0] != "number" {
		t.Errorf("weight type %v (inline field must not shadow it)", got)
	}
	for _, f := range []string{"Hidden", "unexported", "Inline", "kind", "apiVersion", "metadata", "promoted", "extra"} {
		_, has := s.Properties[f]
		want := f == "kind" || f == "apiVersion" || f == "metadata" || f == "promoted" || f == "extra"
		if has != want {
			t.Errorf("property %s present=%v, want %v", f, has, want)
		}
	}
	sort.Strings(s.Required)
	if strings.Join(s.Required, ",") != "flag,weight" {
		t.Errorf("required %v", s.Required)
	}
	// The v2 document of the recursive type must be usable by kubectl.
	v2, err := e.discovery.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	models, err := kubectlopenapi.NewOpenAPIData(v2)
	if err != nil {
		t.Fatal(err)
	}
	if models.LookupResource(gvk) == nil {
		t.Error("no v2 model for Tree")
	}
	if err := validation.NewSchemaValidation(parserGetter{kubectlopenapi.NewOpenAPIParser(e.discovery)}).ValidateBytes([]byte(
		`{"apiVersion":"example.minik8s.io/v1","kind":"Tree","weight":1,"flag":true,"children":[{"weight":2,"flag":false,"bogus":1}]}`)); err == nil ||
		!strings.Contains(err.Error(), `unknown field "bogus"`) {
		t.Errorf("validation error %v", err)
	}
}

// A JSON field (minik8sv1.JSON: a run's input, a workflow's definition)
// is any JSON value: untyped, and in v3 preserving unknown fields, so that
// kubectl accepts objects, lists, strings, numbers and booleans with any
// nested fields there, and still refuses unknown fields elsewhere.
func TestAnyJSONValue(t *testing.T) {
	gvk := minik8sv1.SchemeGroupVersion.WithKind("WorkflowRun")
	e := newEnv(t, []openapi.Resource{res(gvk, "workflowruns", true, &minik8sv1.WorkflowRun{}, &minik8sv1.WorkflowRunList{}, "status")})
	doc := e.v3Spec(t, gvk.GroupVersion())
	jsonName := "com.github.minik8s.minik8s.pkg.apis.minik8s.v1.JSON"
	def, ok := doc.Components.Schemas[jsonName]
	if !ok {
		t.Fatalf("no schema %s", jsonName)
	}
	if len(def.Type) != 0 || def.Extensions["x-kubernetes-preserve-unknown-fields"] != true || len(def.Properties) != 0 {
		t.Errorf("v3 JSON schema: type %v, extensions %v, properties %v; want no type, preserving unknown fields", def.Type, def.Extensions, def.Properties)
	}
	_, run := findKind(t, doc, gvk)
	specRef := run.Properties["spec"].AllOf[0].Ref.String()
	runSpec := doc.Components.Schemas[strings.TrimPrefix(specRef, "#/components/schemas/")]
	input := runSpec.Properties["input"]
	if len(input.AllOf) != 1 || input.AllOf[0].Ref.String() != "#/components/schemas/"+jsonName || !strings.Contains(input.Description, "any JSON value") {
		t.Errorf("spec.input: %+v", input)
	}

	v2, err := e.discovery.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range v2.Definitions.AdditionalProperties {
		if d.Name == jsonName {
			found = true
			if d.Value.Type != nil && len(d.Value.Type.Value) > 0 {
				t.Errorf("v2 JSON schema has type %v", d.Value.Type.Value)
			}
		}
	}
	if !found {
		t.Errorf("no v2 definition %s", jsonName)
	}
	validator := validation.NewSchemaValidation(parserGetter{kubectlopenapi.NewOpenAPIParser(e.discovery)})
	for _, input := range []string{`{"a":{"b":[1,{"c":true}]},"d":null}`, `[1,"two",{"three":3}]`, `"text"`, `12.5`, `true`} {
		body := `{"apiVersion":"minik8s.io/v1","kind":"WorkflowRun","metadata":{"name":"r"},"spec":{"workflow":"wf","input":` + input + `}}`
		if err := validator.ValidateBytes([]byte(body)); err != nil {
			t.Errorf("input %s refused: %v", input, err)
		}
	}
	if err := validator.ValidateBytes([]byte(`{"apiVersion":"minik8s.io/v1","kind":"WorkflowRun","metadata":{"name":"r"},"spec":{"workflow":"wf","bogus":1,"input":{"x":1}}}`)); err == nil ||
		!strings.Contains(err.Error(), `unknown field "bogus"`) {
		t.Errorf("unknown field next to input: %v", err)
	}
}

// Every kind client-go knows must produce documents that the client side
// parsers accept.
func TestAllBuiltinKinds(t *testing.T) {
	var resources []openapi.Resource
	plurals := map[string]bool{}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
		if !scheme.Scheme.Recognizes(listGVK) {
			continue
		}
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		list, err := scheme.Scheme.New(listGVK)
		if err != nil {
			t.Fatal(err)
		}
		plural := strings.ToLower(gvk.Kind) + "s"
		key := gvk.GroupVersion().String() + "/" + plural
		if plurals[key] {
			continue
		}
		plurals[key] = true
		resources = append(resources, res(gvk, plural, true, obj, list, "status", "scale"))
	}
	if len(resources) < 100 {
		t.Fatalf("only %d kinds found", len(resources))
	}
	e := newEnv(t, resources)
	v2, err := e.discovery.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	models, err := kubectlopenapi.NewOpenAPIData(v2)
	if err != nil {
		t.Fatalf("NewOpenAPIData: %v", err)
	}
	v3 := cached.NewClient(e.discovery.OpenAPIV3())
	verifier := resource.NewQueryParamVerifierV3(e.dynamic, v3, resource.QueryParamFieldValidation)
	for _, r := range resources {
		if models.LookupResource(r.GroupVersionKind) == nil {
			t.Errorf("no v2 model for %v", r.GroupVersionKind)
		}
		if err := verifier.HasSupport(r.GroupVersionKind); err != nil {
			t.Errorf("HasSupport(%v): %v", r.GroupVersionKind, err)
		}
	}
	paths, err := v3.Paths()
	if err != nil {
		t.Fatal(err)
	}
	for key, gv := range paths {
		pb, err := gv.Schema(clientopenapi.ContentTypeOpenAPIV3PB)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if err := proto.Unmarshal(pb, &openapi_v3.Document{}); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
	}
}
