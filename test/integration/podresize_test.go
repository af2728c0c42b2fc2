package integration

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// pods/resize changes the containers' cpu and memory in place, as
// Kubernetes' InPlacePodVerticalScaling does: get, patch and update,
// moving the generation; a plain update still may not change resources,
// and a resize may not change anything else, remove a limit or change
// the pod's QoS class.
func TestPodResizeSubresource(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 1)
	pods := c.client.CoreV1().Pods("default")
	q := resource.MustParse
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "resize"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("20m"), corev1.ResourceMemory: q("35Mi")}},
		}}},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The main resource refuses a change of resources.
	p, err := pods.Get(ctx, "resize", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = q("25m")
	if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "pod updates may not change fields") {
		t.Fatalf("a plain update changing resources: %v, want refused", err)
	}

	// PATCH .../resize.
	patch := `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"25m"},"limits":{"cpu":"35m"}}}]}}`
	patched, err := pods.Patch(ctx, "resize", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	if err != nil {
		t.Fatal(err)
	}
	r := patched.Spec.Containers[0].Resources
	if r.Requests.Cpu().MilliValue() != 25 || r.Limits.Cpu().MilliValue() != 35 || r.Requests.Memory().Cmp(q("35Mi")) != 0 {
		t.Fatalf("resources after the resize patch: %v", r)
	}
	if patched.Generation != 2 {
		t.Fatalf("generation %d after a resize, want 2", patched.Generation)
	}

	// PUT .../resize changes resources only: the labels it carries stay out.
	p = patched.DeepCopy()
	p.Labels = map[string]string{"sneaky": "yes"}
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = q("40Mi")
	updated, err := pods.UpdateResize(ctx, "resize", p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := updated.Spec.Containers[0].Resources.Requests.Memory(); got.Cmp(q("40Mi")) != 0 || updated.Labels["sneaky"] != "" || updated.Generation != 3 {
		t.Fatalf("after a resize update: memory %v, labels %v, generation %d", got, updated.Labels, updated.Generation)
	}

	// The kubelet reports the new size for the new generation.
	waitFor(t, "the kubelet to report the resize", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "resize", metav1.GetOptions{})
		if err != nil || p.Status.ObservedGeneration != 3 || len(p.Status.ContainerStatuses) != 1 {
			return false, err
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.Resources != nil && cs.Resources.Requests.Memory().Cmp(q("40Mi")) == 0 && cs.Resources.Limits.Cpu().MilliValue() == 35 &&
			cs.AllocatedResources.Memory().Cmp(q("40Mi")) == 0, nil
	})

	// GET .../resize is the pod.
	u, err := dynamic.NewForConfigOrDie(c.config).Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("default").Get(ctx, "resize", metav1.GetOptions{}, "resize")
	if err != nil {
		t.Fatal(err)
	}
	if u.GetKind() != "Pod" || u.GetUID() != updated.UID || u.GetGeneration() != 3 {
		t.Fatalf("GET resize: kind %q uid %s generation %d, want the pod (%s) at generation 3", u.GetKind(), u.GetUID(), u.GetGeneration(), updated.UID)
	}

	// What a resize may not do.
	for _, tc := range []struct{ what, patch, msg string }{
		{"change the image", `{"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, ""},
		{"remove a limit", `{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":null}}}]}}`, "resource limits cannot be removed"},
		{"change the QoS class", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"35m","memory":"50Mi"},"limits":{"cpu":"35m","memory":"50Mi"}}}]}}`, "Pod QOS Class may not change as a result of resizing"},
		{"resize other resources", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"ephemeral-storage":"1Gi"}}}]}}`, "only cpu and memory resources are mutable"},
	} {
		got, err := pods.Patch(ctx, "resize", types.StrategicMergePatchType, []byte(tc.patch), metav1.PatchOptions{}, "resize")
		if tc.msg == "" {
			// Fields other than resources are not the resize's: kept as stored.
			if err != nil || got.Spec.Containers[0].Image != "busybox" {
				t.Fatalf("%s: %v, image %q", tc.what, err, got.Spec.Containers[0].Image)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Fatalf("%s: %v, want %q", tc.what, err, tc.msg)
		}
	}
}
