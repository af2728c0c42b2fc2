package integration

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// pods/ephemeralcontainers adds debugging containers to a running pod, as
// Kubernetes does: listed in discovery, get, strategic-merge and JSON
// patch and update, moving the generation, with upstream's validation
// (422): none at create, none through a plain update, existing ones
// fixed, names unique, no ports, a target that exists. The node runs
// what is added and reports it in status.ephemeralContainerStatuses;
// `kubectl debug` works, and `kubectl exec -c` reaches the new container.
func TestPodEphemeralContainersSubresource(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startServingNode(t, c, "ec-node")
	pods := c.client.CoreV1().Pods("default")

	// Discovery lists the subresource under pods, as kube-apiserver does.
	v1, err := c.client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(v1.APIResources, func(r metav1.APIResource) bool { return r.Name == "pods/ephemeralcontainers" })
	if i < 0 {
		t.Fatal("discovery does not list pods/ephemeralcontainers")
	}
	if r := v1.APIResources[i]; r.Kind != "Pod" || !r.Namespaced || !slices.Equal(r.Verbs, []string{"get", "patch", "update"}) {
		t.Fatalf("pods/ephemeralcontainers in discovery: %+v", r)
	}

	debugger := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox", Command: []string{"sh", "-c", "while true; do echo polo; sleep 2; done"}, Stdin: true, TTY: true,
	}}

	// Not at create.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "target"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox", Command: []string{"sleep", "10000"}}}},
	}
	withEC := pod.DeepCopy()
	withEC.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger}
	if _, err := pods.Create(ctx, withEC, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "spec.ephemeralContainers: Forbidden: cannot be set on create") {
		t.Fatalf("creating a pod with an ephemeral container: %v, want 422 cannot be set on create", err)
	}
	// Nor in a pod template.
	tmpl := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "t"}, Template: corev1.PodTemplateSpec{Spec: withEC.Spec}}
	if _, err := c.client.CoreV1().PodTemplates("default").Create(ctx, tmpl, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "ephemeral containers not allowed in pod template") {
		t.Fatalf("a pod template with an ephemeral container: %v, want 422", err)
	}

	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Generation != 1 {
		t.Fatalf("generation %d at create", created.Generation)
	}
	waitFor(t, "the pod to run", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "target", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})

	// A plain update may not add one.
	p, err := pods.Get(ctx, "target", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(p)
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger}
	if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "pod updates may not change fields") {
		t.Fatalf("a plain update adding an ephemeral container: %v, want 422", err)
	}

	// A strategic merge patch of the subresource, as the e2e framework's
	// AddEphemeralContainerSync makes it; labels in it stay out.
	after := p.DeepCopy()
	after.Labels = map[string]string{"sneaky": "yes"}
	afterJS, _ := json.Marshal(after)
	patch, err := strategicpatch.CreateTwoWayMergePatch(before, afterJS, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	patched, err := pods.Patch(ctx, "target", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "ephemeralcontainers")
	if err != nil {
		t.Fatal(err)
	}
	if len(patched.Spec.EphemeralContainers) != 1 || patched.Generation != 2 || patched.Labels["sneaky"] != "" {
		t.Fatalf("after the patch: ephemeral containers %v, generation %d, labels %v", patched.Spec.EphemeralContainers, patched.Generation, patched.Labels)
	}
	if ec := patched.Spec.EphemeralContainers[0]; ec.ImagePullPolicy != corev1.PullAlways || ec.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
		t.Fatalf("the ephemeral container is not defaulted: %+v", ec)
	}
	waitFor(t, "the kubelet to report the ephemeral container running", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "target", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cs := range p.Status.EphemeralContainerStatuses {
			if cs.Name == "debugger" && cs.State.Running != nil {
				return p.Status.ObservedGeneration == 2, nil
			}
		}
		return false, nil
	})

	// GET of the subresource is the pod.
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	u, err := dynamic.NewForConfigOrDie(c.config).Resource(gvr).Namespace("default").Get(ctx, "target", metav1.GetOptions{}, "ephemeralcontainers")
	if err != nil {
		t.Fatal(err)
	}
	ecs, _, _ := unstructured.NestedSlice(u.Object, "spec", "ephemeralContainers")
	if u.GetKind() != "Pod" || len(ecs) != 1 {
		t.Fatalf("GET ephemeralcontainers: kind %q, %d ephemeral containers", u.GetKind(), len(ecs))
	}

	// PUT adds a second one, as the conformance spec does.
	p, err = pods.Get(ctx, "target", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger2", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}})
	updated, err := pods.UpdateEphemeralContainers(ctx, "target", p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(updated.Spec.EphemeralContainers) != 2 || updated.Generation != 3 {
		t.Fatalf("after the update: %d ephemeral containers, generation %d", len(updated.Spec.EphemeralContainers), updated.Generation)
	}

	// A JSON patch adds a third, targeting the app container.
	jsonPatch := `[{"op":"add","path":"/spec/ephemeralContainers/-","value":{"name":"debugger3","image":"busybox","targetContainerName":"app"}}]`
	patched, err = pods.Patch(ctx, "target", types.JSONPatchType, []byte(jsonPatch), metav1.PatchOptions{}, "ephemeralcontainers")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(patched.Spec.EphemeralContainers); n != 3 || patched.Spec.EphemeralContainers[2].TargetContainerName != "app" {
		t.Fatalf("after the JSON patch: %v", patched.Spec.EphemeralContainers)
	}

	// What the subresource refuses, with upstream's messages, as 422.
	for _, tc := range []struct{ what, patch, msg string }{
		{"change an existing one", `[{"op":"replace","path":"/spec/ephemeralContainers/0/image","value":"nginx"}]`,
			`spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may not be changed`},
		{"remove one", `[{"op":"remove","path":"/spec/ephemeralContainers/1"}]`,
			`spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger2" may not be removed`},
		{"reuse an app container's name", `[{"op":"add","path":"/spec/ephemeralContainers/-","value":{"name":"app","image":"busybox"}}]`,
			`spec.ephemeralContainers[3].name: Duplicate value: "app"`},
		{"reuse an ephemeral container's name", `[{"op":"add","path":"/spec/ephemeralContainers/-","value":{"name":"debugger","image":"busybox"}}]`,
			`spec.ephemeralContainers[3].name: Duplicate value: "debugger"`},
		{"set ports", `[{"op":"add","path":"/spec/ephemeralContainers/-","value":{"name":"d4","image":"busybox","ports":[{"containerPort":80}]}}]`,
			`spec.ephemeralContainers[3].ports: Forbidden: cannot be set for an Ephemeral Container`},
		{"set a probe", `[{"op":"add","path":"/spec/ephemeralContainers/-","value":{"name":"d4","image":"busybox","readinessProbe":{"exec":{"command":["true"]}}}}]`,
			`spec.ephemeralContainers[3].readinessProbe: Forbidden: cannot be set for an Ephemeral Container`},
		{"set resources", `[{"op":"add","path":"/spec/ephemeralContainers/-","value":{"name":"d4","image":"busybox","resources":{"limits":{"cpu":"1"}}}}]`,
			`spec.ephemeralContainers[3].resources: Forbidden: cannot be set for an Ephemeral Container`},
		{"set a lifecycle", `[{"op":"add","path":"/spec/ephemeralContainers/-","value":{"name":"d4","image":"busybox","lifecycle":{"preStop":{"sleep":{"seconds":1}}}}}]`,
			`spec.ephemeralContainers[3].lifecycle: Forbidden: cannot be set for an Ephemeral Container`},
		{"target a container that does not exist", `[{"op":"add","path":"/spec/ephemeralContainers/-","value":{"name":"d4","image":"busybox","targetContainerName":"nope"}}]`,
			`spec.ephemeralContainers[3].targetContainerName: Not found: "nope"`},
		{"target an ephemeral container", `[{"op":"add","path":"/spec/ephemeralContainers/-","value":{"name":"d4","image":"busybox","targetContainerName":"debugger"}}]`,
			`spec.ephemeralContainers[3].targetContainerName: Not found: "debugger"`},
		{"use a subPath", `[{"op":"add","path":"/spec/ephemeralContainers/-","value":{"name":"d4","image":"busybox","volumeMounts":[{"name":"kube-api-access","mountPath":"/x","subPath":"a"}]}}]`,
			`spec.ephemeralContainers[3].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container`},
	} {
		_, err := pods.Patch(ctx, "target", types.JSONPatchType, []byte(tc.patch), metav1.PatchOptions{}, "ephemeralcontainers")
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want 422 %q", tc.what, err, tc.msg)
		}
	}
	// Through the subresource only the ephemeral containers change.
	_, err = pods.Patch(ctx, "target", types.StrategicMergePatchType,
		[]byte(`{"spec":{"activeDeadlineSeconds":5,"containers":[{"name":"app","image":"nginx"}]}}`), metav1.PatchOptions{}, "ephemeralcontainers")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := pods.Get(ctx, "target", metav1.GetOptions{}); err != nil || p.Spec.Containers[0].Image != "busybox" || p.Spec.ActiveDeadlineSeconds != nil || p.Generation != 4 {
		t.Fatalf("the subresource changed more than ephemeral containers: %v %+v", err, p.Spec)
	}

	// kubectl debug adds one with --target, and kubectl exec -c reaches it.
	k := newKubectl(t, c)
	k.ok(t, "debug", "target", "--image=busybox", "--target=app", "-c", "debugger4", "--", "sleep", "1000")
	p, err = pods.Get(ctx, "target", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ec := p.Spec.EphemeralContainers[len(p.Spec.EphemeralContainers)-1]; ec.Name != "debugger4" || ec.TargetContainerName != "app" {
		t.Fatalf("kubectl debug added %+v", ec)
	}
	waitFor(t, "debugger4 to run", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "target", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		i := slices.IndexFunc(p.Status.EphemeralContainerStatuses, func(cs corev1.ContainerStatus) bool { return cs.Name == "debugger4" })
		return i >= 0 && p.Status.EphemeralContainerStatuses[i].State.Running != nil, nil
	})
	if out := k.ok(t, "exec", "target", "-c", "debugger4", "--", "echo", "marco"); !strings.Contains(out, "marco") {
		t.Fatalf("kubectl exec -c debugger4: %q", out)
	}
	// Its logs are its own.
	if out := k.ok(t, "logs", "target", "-c", "debugger4"); out != "simulated container debugger4 started\n" {
		t.Fatalf("kubectl logs -c debugger4: %q", out)
	}
	if msg := k.fails(t, "logs", "target", "-c", "nope"); !strings.Contains(msg, "container nope is not valid for pod target") {
		t.Fatalf("kubectl logs -c nope: %q", msg)
	}
}

// Admission sees a write of pods/ephemeralcontainers as such: PodSecurity
// checks the containers it adds against the namespace's level, as
// Kubernetes' does.
func TestPodEphemeralContainersAdmission(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "psa-ec", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}}
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := c.client.CoreV1().Pods("psa-ec")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "target"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	privileged := `{"spec":{"ephemeralContainers":[{"name":"debugger","image":"busybox","securityContext":{"privileged":true}}]}}`
	_, err := pods.Patch(ctx, "target", types.StrategicMergePatchType, []byte(privileged), metav1.PatchOptions{}, "ephemeralcontainers")
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "baseline:latest": privileged (container "debugger"`) {
		t.Fatalf("a privileged ephemeral container in a baseline namespace: %v, want forbidden by PodSecurity", err)
	}
	plain := `{"spec":{"ephemeralContainers":[{"name":"debugger","image":"busybox","securityContext":{"privileged":false}}]}}`
	got, err := pods.Patch(ctx, "target", types.StrategicMergePatchType, []byte(plain), metav1.PatchOptions{}, "ephemeralcontainers")
	if err != nil {
		t.Fatal(err)
	}
	if sc := got.Spec.EphemeralContainers[0].SecurityContext; sc == nil || ptr.Deref(sc.Privileged, true) {
		t.Fatalf("ephemeral container's security context: %+v", sc)
	}
}
