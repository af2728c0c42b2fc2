package integration

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A pod's metadata.generation starts at 1 (whatever the client sent),
// moves with its spec only (not with scheduling, metadata or status), and
// with a graceful deletion; its kubelet reports the generation it has
// seen in status.observedGeneration and in the conditions it owns, as
// Kubernetes' "Pods Extended (pod generation)" conformance specs check.
func TestPodGeneration(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 1)
	pods := c.client.CoreV1().Pods("default")

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gen", Generation: 100},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "c", Image: "agnhost"}},
		},
	}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Generation != 1 {
		t.Fatalf("a new pod's generation is %d, want 1 whatever the client sent", created.Generation)
	}
	waitObserved := func(want int64) {
		t.Helper()
		waitFor(t, "the kubelet to observe generation", func(ctx context.Context) (bool, error) {
			p, err := pods.Get(ctx, "gen", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Generation != want {
				t.Fatalf("generation %d, want %d", p.Generation, want)
			}
			if p.Status.ObservedGeneration != want || p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
			for _, cond := range p.Status.Conditions {
				if cond.ObservedGeneration != want {
					return false, nil
				}
			}
			return len(p.Status.Conditions) > 0, nil
		})
	}
	// Scheduled and running: binding is not a spec update.
	waitObserved(1)

	update := func(what string, change func(*corev1.Pod), bump bool, want int64) {
		t.Helper()
		p, err := pods.Get(ctx, "gen", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(p)
		updated, err := pods.Update(ctx, p, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if updated.Generation != want {
			t.Fatalf("%s: generation %d, want %d", what, updated.Generation, want)
		}
		waitObserved(want)
	}
	update("an empty update", func(*corev1.Pod) {}, false, 1)
	update("new tolerations", func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "foo", Operator: corev1.TolerationOpEqual, Value: "bar", Effect: corev1.TaintEffectNoSchedule}}
	}, true, 2)
	update("activeDeadlineSeconds", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](5000) }, true, 3)
	update("the container's image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx" }, true, 4)
	update("the init container's image", func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = "pause" }, true, 5)
	update("annotations", func(p *corev1.Pod) { p.Annotations = map[string]string{"key": "value"} }, false, 5)
	update("a generation set by the client", func(p *corev1.Pod) { p.Generation = 1 }, false, 5)

	// A status writer that does not know observedGeneration does not
	// clear it.
	p, err := pods.Get(ctx, "gen", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.ObservedGeneration = 0
	for i := range p.Status.Conditions {
		p.Status.Conditions[i].ObservedGeneration = 0
	}
	written, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if written.Status.ObservedGeneration != 5 {
		t.Fatalf("a status update without observedGeneration left %d, want 5 kept", written.Status.ObservedGeneration)
	}
	for _, cond := range written.Status.Conditions {
		if cond.ObservedGeneration != 5 {
			t.Fatalf("a status update without observedGeneration left condition %s at %d, want 5 kept", cond.Type, cond.ObservedGeneration)
		}
	}

	// A graceful deletion bumps the generation, once. The pod is bound to
	// a node without a kubelet so it stays Terminating.
	ghost := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ghost"},
		Spec:       corev1.PodSpec{NodeName: "no-such-node", Containers: []corev1.Container{{Name: "c", Image: "agnhost"}}},
	}
	if _, err := pods.Create(ctx, ghost, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var status int
	var deleted corev1.Pod
	err = c.client.CoreV1().RESTClient().Delete().AbsPath("/api/v1/namespaces/default/pods/ghost").
		Param("gracePeriodSeconds", "60").Do(ctx).StatusCode(&status).Into(&deleted)
	if err != nil || status != http.StatusOK {
		t.Fatalf("graceful delete: %d %v", status, err)
	}
	got, err := pods.Get(ctx, "ghost", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != 2 || got.DeletionTimestamp == nil {
		t.Fatalf("after a graceful delete: generation %d, deletionTimestamp %v; want 2 and set", got.Generation, got.DeletionTimestamp)
	}
	if err := pods.Delete(ctx, "ghost", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](30)}); err != nil {
		t.Fatal(err)
	}
	if got, err = pods.Get(ctx, "ghost", metav1.GetOptions{}); err != nil || got.Generation != 2 {
		t.Fatalf("a second graceful delete: generation %d (%v), want 2", got.Generation, err)
	}
}
