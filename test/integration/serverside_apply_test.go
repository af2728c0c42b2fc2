package integration

import (
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
)

// kubectl apply --server-side creates and updates, records its field
// manager, conflicts with another manager's fields until
// --force-conflicts, and merges containers by name; client-go's typed
// Apply works; apply merges two managers' fields of a custom resource.
func TestServerSideApply(t *testing.T) {
	c := startClusterWith(t, apiServerOnly)
	ctx := ctxT(t)
	k := newKubectl(t, c)
	dir := t.TempDir()

	// Create, then change the image.
	k.ok(t, "apply", "--server-side", "-f", writeTestFile(t, dir, "web.yaml", busyboxDeploymentYAML))
	changed := strings.Replace(busyboxDeploymentYAML, "image: busybox", "image: busybox:1.36", 1)
	out := k.ok(t, "apply", "--server-side", "-f", writeTestFile(t, dir, "web.yaml", changed))
	if !strings.Contains(out, "deployment.apps/web serverside-applied") {
		t.Errorf("kubectl apply --server-side: %q", out)
	}
	deployments := c.client.AppsV1().Deployments("default")
	d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "busybox:1.36" {
		t.Errorf("image after the second apply: %s", img)
	}
	if len(d.ManagedFields) != 1 || d.ManagedFields[0].Manager != "kubectl" || d.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("managedFields: %+v", d.ManagedFields)
	}

	// Another manager setting replicas conflicts, naming the field and
	// its owner; forced, it takes replicas over.
	other := writeTestFile(t, dir, "replicas.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\nspec: {replicas: 5}\n")
	msg := k.fails(t, "apply", "--server-side", "--field-manager=scaler", "-f", other)
	if !strings.Contains(msg, "conflict") || !strings.Contains(msg, `conflict with "kubectl"`) || !strings.Contains(msg, ".spec.replicas") {
		t.Errorf("conflicting apply: %s", msg)
	}
	k.ok(t, "apply", "--server-side", "--field-manager=scaler", "--force-conflicts", "-f", other)
	if d, err = deployments.Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 5 {
		t.Errorf("replicas after the forced apply: %d", *d.Spec.Replicas)
	}

	// A second manager's container is merged in by name, not replacing.
	k.ok(t, "apply", "--server-side", "--field-manager=sidecars", "-f", writeTestFile(t, dir, "sidecar.yaml",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: sidecar, image: busybox}\n"))
	if d, err = deployments.Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ct := range d.Spec.Template.Spec.Containers {
		names = append(names, ct.Name)
	}
	if strings.Join(names, ",") != "c,sidecar" {
		t.Errorf("containers after two managers' applies: %v", names)
	}
	owners := map[string]bool{}
	for _, e := range d.ManagedFields {
		owners[e.Manager] = true
	}
	if !owners["kubectl"] || !owners["scaler"] || !owners["sidecars"] {
		t.Errorf("managers: %+v", d.ManagedFields)
	}

	// client-go's typed Apply.
	configMaps := c.client.CoreV1().ConfigMaps("default")
	cm, err := configMaps.Apply(ctx, corev1ac.ConfigMap("settings", "default").WithData(map[string]string{"a": "1"}), metav1.ApplyOptions{FieldManager: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["a"] != "1" || len(cm.ManagedFields) != 1 || cm.ManagedFields[0].Manager != "app" {
		t.Errorf("applied config map: %+v %+v", cm.Data, cm.ManagedFields)
	}
	_, err = configMaps.Apply(ctx, corev1ac.ConfigMap("settings", "default").WithData(map[string]string{"a": "2"}), metav1.ApplyOptions{FieldManager: "other"})
	if !apierrors.IsConflict(err) {
		t.Errorf("typed apply of another manager's field: %v", err)
	}
	if cm, err = configMaps.Apply(ctx, corev1ac.ConfigMap("settings", "default").WithData(map[string]string{"a": "2"}), metav1.ApplyOptions{FieldManager: "other", Force: true}); err != nil {
		t.Fatal(err)
	}
	if cm.Data["a"] != "2" {
		t.Errorf("forced typed apply: %+v", cm.Data)
	}

	// An object applied client-side moves to server-side apply: kubectl's
	// client-side manager has the same values, so nothing conflicts.
	moved := writeTestFile(t, dir, "moved.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: moved, namespace: default}\ndata: {a: '1'}\n")
	k.ok(t, "apply", "-f", moved)
	k.ok(t, "apply", "--server-side", "-f", moved)
	if cm, err = configMaps.Get(ctx, "moved", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	applied := false
	for _, e := range cm.ManagedFields {
		applied = applied || e.Manager == "kubectl" && e.Operation == metav1.ManagedFieldsOperationApply
	}
	if !applied {
		t.Errorf("managedFields after moving to server-side apply: %+v", cm.ManagedFields)
	}

	// A custom resource: two managers' spec fields merge.
	k.ok(t, "apply", "-f", filepath.Join(examplesPath(t), "crd", "widget-crd.yaml"))
	k.ok(t, "wait", "--for", "condition=established", "--timeout=30s", "crd/widgets.example.com")
	widgets := dynamic.NewForConfigOrDie(c.config).Resource(widgetsV1).Namespace("default")
	apply := func(manager, spec string) *unstructured.Unstructured {
		t.Helper()
		body := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":` + spec + `}`
		var w *unstructured.Unstructured
		var err error
		for range 50 { // the resource is served a moment after Established
			w, err = widgets.Patch(ctx, "w", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: manager})
			if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "the server could not find the requested resource") {
				break
			}
		}
		if err != nil {
			t.Fatalf("apply by %s: %v", manager, err)
		}
		return w
	}
	apply("sizer", `{"replicas":3}`)
	w := apply("painter", `{"color":"red"}`)
	if spec, _, _ := unstructured.NestedMap(w.Object, "spec"); spec["replicas"] != int64(3) || spec["color"] != "red" {
		t.Errorf("widget spec after two managers' applies: %v", spec)
	}
	// The painter owns color: the sizer setting it conflicts.
	if _, err := widgets.Patch(ctx, "w", types.ApplyPatchType, []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":3,"color":"green"}}`),
		metav1.PatchOptions{FieldManager: "sizer"}); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), ".spec.color") {
		t.Errorf("sizer applying the painter's color: %v", err)
	}
}
