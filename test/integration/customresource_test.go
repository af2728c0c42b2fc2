package integration

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

var widgetsV1 = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// A CustomResourceDefinition applied with kubectl is established, and its
// resource is served as Kubernetes serves one: in discovery, checked,
// pruned and defaulted by its schema and CEL rules, in both its versions,
// with status and scale subresources, printer columns, a selectable
// field and watch; it survives a restart, and deleting the definition
// deletes its objects.
func TestCustomResources(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	k := newKubectl(t, c)
	examples := filepath.Join(examplesPath(t), "crd")
	k.ok(t, "apply", "-f", filepath.Join(examples, "widget-crd.yaml"))
	k.ok(t, "wait", "--for", "condition=established", "--timeout=30s", "crd/widgets.example.com")
	k.ok(t, "apply", "-f", filepath.Join(examples, "widget.yaml"))

	crds := apiextensionsclient.NewForConfigOrDie(c.config).ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(ctx, "widgets.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if crd.Status.AcceptedNames.Kind != "Widget" || !slicesEqual(crd.Status.StoredVersions, []string{"v1"}) || !hasFinalizer(crd.Finalizers, "customresourcecleanup.apiextensions.k8s.io") {
		t.Errorf("definition: accepted %+v, stored versions %v, finalizers %v", crd.Status.AcceptedNames, crd.Status.StoredVersions, crd.Finalizers)
	}
	for _, gv := range []string{"example.com/v1", "example.com/v2"} {
		list, err := c.client.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatalf("discovery of %s: %v", gv, err)
		}
		names := map[string]bool{}
		for _, r := range list.APIResources {
			names[r.Name] = true
		}
		if !names["widgets"] || !names["widgets/status"] || !names["widgets/scale"] {
			t.Errorf("discovery of %s: %v", gv, names)
		}
	}

	// Its schema is published: kubectl explain reads it from /openapi/v3.
	// It is published after the resource is served, as in Kubernetes.
	var explain string
	wants := []string{"GROUP:      example.com", "KIND:       Widget", "replicas\t<integer>", "color\t<string>"}
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
		explain, _, _ = k.run(t, "explain", "widgets.spec")
		for _, want := range wants {
			if !strings.Contains(explain, want) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("kubectl explain widgets.spec, want %q:\n%s", wants, explain)
	}
	if _, err := c.client.Discovery().OpenAPISchema(); err != nil {
		t.Errorf("/openapi/v2: %v", err)
	}

	dyn := dynamic.NewForConfigOrDie(c.config)
	widgets := dyn.Resource(widgetsV1).Namespace("default")
	small, err := widgets.Get(ctx, "small", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if color, _, _ := unstructured.NestedString(small.Object, "spec", "color"); color != "blue" {
		t.Errorf("spec.color of the applied widget: %q, want the schema's default blue", color)
	}

	widget := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name}, "spec": spec,
		}}
	}
	// Unknown fields: pruned with a warning, refused when strict.
	big, err := widgets.Create(ctx, widget("big", map[string]any{"replicas": int64(3), "color": "red", "shape": "round"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(big.Object, "spec", "shape"); found {
		t.Errorf("spec.shape is not in the schema but was stored: %v", big.Object["spec"])
	}
	_, err = widgets.Create(ctx, widget("strict", map[string]any{"replicas": int64(1), "shape": "round"}), metav1.CreateOptions{FieldValidation: "Strict"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `unknown field "spec.shape"`) {
		t.Errorf("strict create with an unknown field: %v", err)
	}
	// The schema and the CEL rule.
	for _, tc := range []struct {
		spec map[string]any
		want string
	}{
		{map[string]any{"replicas": int64(-1)}, "spec.replicas"},
		{map[string]any{"replicas": int64(1), "color": "pink"}, `Unsupported value: "pink"`},
		{map[string]any{"replicas": int64(11)}, "at most 10 replicas"},
	} {
		_, err := widgets.Create(ctx, widget("bad", tc.spec), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("create %v: %v, want Invalid naming %q", tc.spec, err, tc.want)
		}
	}
	if _, err := widgets.Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("an invalid widget was stored: %v", err)
	}

	// v2 reads the same objects ("None" conversion).
	v2, err := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}).Namespace("default").Get(ctx, "big", metav1.GetOptions{})
	if err != nil || v2.GetAPIVersion() != "example.com/v2" || v2.GetUID() != big.GetUID() {
		t.Errorf("big through v2: %v, %v", err, v2)
	}

	// Status and spec move only through their own endpoints.
	big.Object["status"] = map[string]any{"replicas": int64(3), "selector": "app=big"}
	big.Object["spec"].(map[string]any)["replicas"] = int64(5)
	st, err := widgets.UpdateStatus(ctx, big, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(st.Object, "spec", "replicas"); r != 3 {
		t.Errorf("a status update changed spec.replicas to %d", r)
	}
	if st.GetGeneration() != 1 {
		t.Errorf("a status update moved the generation to %d", st.GetGeneration())
	}
	scale, err := c.client.CoreV1().RESTClient().Get().AbsPath("/apis/example.com/v1/namespaces/default/widgets/big/scale").DoRaw(ctx)
	if err != nil || !strings.Contains(string(scale), `"replicas":3`) || !strings.Contains(string(scale), `"selector":"app=big"`) {
		t.Errorf("GET /scale: %v, %s", err, scale)
	}
	_, err = c.client.CoreV1().RESTClient().Patch(types.MergePatchType).AbsPath("/apis/example.com/v1/namespaces/default/widgets/big/scale").
		Body([]byte(`{"spec":{"replicas":4}}`)).DoRaw(ctx)
	if err != nil {
		t.Fatalf("PATCH /scale: %v", err)
	}
	got, err := widgets.Get(ctx, "big", metav1.GetOptions{})
	if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); err != nil || r != 4 || got.GetGeneration() != 2 {
		t.Errorf("after scaling to 4: %v, spec.replicas %d, generation %d", err, r, got.GetGeneration())
	}
	if _, err := widgets.Patch(ctx, "big", types.StrategicMergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); !apierrors.IsUnsupportedMediaType(err) {
		t.Errorf("a strategic merge patch of a custom resource: %v, want 415", err)
	}

	// The selectable field, and the table.
	reds, err := widgets.List(ctx, metav1.ListOptions{FieldSelector: "spec.color=red"})
	if err != nil || len(reds.Items) != 1 || reds.Items[0].GetName() != "big" {
		t.Errorf("widgets with spec.color=red: %v, %v", err, reds)
	}
	if _, err := widgets.List(ctx, metav1.ListOptions{FieldSelector: "spec.shape=round"}); !apierrors.IsBadRequest(err) {
		t.Errorf("a field selector on a field that is not selectable: %v, want 400", err)
	}
	out := k.ok(t, "get", "wd", "-n", "default")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "NAME REPLICAS COLOR AGE" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "big 4 red ") {
		t.Errorf("kubectl get wd:\n%s", out)
	}

	// Watch.
	w, err := widgets.Watch(ctx, metav1.ListOptions{ResourceVersion: got.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := widgets.Delete(ctx, "small", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if u, ok := ev.Object.(*unstructured.Unstructured); ev.Type != watch.Deleted || !ok || u.GetName() != "small" {
			t.Errorf("watch: %v %v", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event for the deleted widget")
	}

	// A restart serves the stored definition at once.
	c.restart()
	widgets = dynamic.NewForConfigOrDie(c.config).Resource(widgetsV1).Namespace("default")
	if _, err := widgets.Get(ctx, "big", metav1.GetOptions{}); err != nil {
		t.Fatalf("big after a restart: %v", err)
	}

	// Deleting the definition deletes its objects, then the definition.
	crds = apiextensionsclient.NewForConfigOrDie(c.config).ApiextensionsV1().CustomResourceDefinitions()
	if err := crds.Delete(ctx, "widgets.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := crds.Get(ctx, "widgets.example.com", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the definition was not deleted: %v", err)
	}
	if _, err := c.client.Discovery().ServerResourcesForGroupVersion("example.com/v1"); !apierrors.IsNotFound(err) {
		t.Errorf("example.com/v1 in discovery after the definition went: %v", err)
	}
	// A new definition of the same resource starts empty.
	k.ok(t, "apply", "-f", filepath.Join(examples, "widget-crd.yaml"))
	k.ok(t, "wait", "--for", "condition=established", "--timeout=30s", "crd/widgets.example.com")
	list, err := widgets.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("widgets of the new definition: %v, %v", err, list)
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

func hasFinalizer(fs []string, f string) bool {
	for _, x := range fs {
		if x == f {
			return true
		}
	}
	return false
}

// Custom resources take part in the cluster's lifecycle: the garbage
// collector deletes one whose owner is gone, and deleting a namespace
// deletes the custom resources in it.
func TestCustomResourceLifecycle(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	k := newKubectl(t, c)
	k.ok(t, "apply", "-f", filepath.Join(examplesPath(t), "crd", "widget-crd.yaml"))
	k.ok(t, "wait", "--for", "condition=established", "--timeout=30s", "crd/widgets.example.com")
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner, err := c.client.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	widgets := dynamic.NewForConfigOrDie(c.config).Resource(widgetsV1).Namespace("shop")
	for _, name := range []string{"owned", "kept"} {
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"replicas": int64(1)},
		}}
		if name == "owned" {
			w.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}})
		}
		if _, err := widgets.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.client.CoreV1().ConfigMaps("shop").Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := widgets.Get(ctx, "owned", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the widget whose owner was deleted is still there: %v", err)
	}
	if _, err := widgets.Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Fatalf("the widget without an owner: %v", err)
	}
	if err := c.client.CoreV1().Namespaces().Delete(ctx, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("namespace shop with a widget in it was not deleted: %v", err)
	}
	if list, err := widgets.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("widgets left in the deleted namespace: %v, %v", err, list)
	}
}

// Aggregated discovery (apidiscovery.k8s.io/v2) lists every group in one
// document, custom resources included, with the preferred version first.
func TestAggregatedDiscovery(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	k := newKubectl(t, c)
	k.ok(t, "apply", "-f", filepath.Join(examplesPath(t), "crd", "widget-crd.yaml"))
	k.ok(t, "wait", "--for", "condition=established", "--timeout=30s", "crd/widgets.example.com")
	get := func(path, accept string) ([]byte, string) {
		t.Helper()
		res := c.client.CoreV1().RESTClient().Get().AbsPath(path).SetHeader("Accept", accept).Do(ctx)
		raw, err := res.Raw()
		if err != nil {
			t.Fatalf("GET %s (%s): %v", path, accept, err)
		}
		var ct string
		res.ContentType(&ct)
		return raw, ct
	}
	const v2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	if _, ct := get("/apis", "application/json"); ct != "application/json" {
		t.Errorf("plain /apis: Content-Type %q", ct)
	}
	raw, ct := get("/apis", v2+",application/json")
	if ct != v2 {
		t.Errorf("aggregated /apis: Content-Type %q, want %q", ct, v2)
	}
	var groups apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(raw, &groups); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range groups.Items {
		if g.Name != "example.com" {
			continue
		}
		found = true
		if len(g.Versions) != 2 || g.Versions[0].Version != "v2" || g.Versions[1].Version != "v1" {
			t.Errorf("example.com versions: %+v, want v2 then v1", g.Versions)
		}
		r := g.Versions[0].Resources
		if len(r) != 1 || r[0].Resource != "widgets" || r[0].Scope != apidiscoveryv2.ScopeNamespace || len(r[0].Subresources) != 2 {
			t.Errorf("example.com/v2 resources: %+v", r)
		}
	}
	if !found {
		t.Errorf("example.com is not in the aggregated /apis")
	}
	raw, _ = get("/api", v2)
	if !strings.Contains(string(raw), `"resource":"pods"`) {
		t.Errorf("aggregated /api lacks pods: %.300s", raw)
	}
	// kubectl reads the aggregated documents.
	out := k.ok(t, "api-resources", "--api-group", "example.com")
	if !strings.Contains(out, "widgets") || !strings.Contains(out, "example.com/v2") {
		t.Errorf("kubectl api-resources --api-group example.com:\n%s", out)
	}
}
