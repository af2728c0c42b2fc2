package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/replicaset"
)

// A ReplicaSet keeps its replicas through a deleted pod and through
// kubectl scale, and reports them in its status.
func TestReplicaSetKeepsReplicas(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 2)
	rsStartControllers(t, c, false)

	rs, err := c.client.AppsV1().ReplicaSets("default").Create(ctx, rsNew("web", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	pods := rsWaitReadyPods(t, c, "default", labels, 3)
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != rs.UID || !ptr.Deref(ref.BlockOwnerDeletion, false) || !strings.HasPrefix(p.Name, "web-") {
			t.Fatalf("pod %s: controller %+v", p.Name, ref)
		}
	}
	waitFor(t, "status of 3 available replicas", func(ctx context.Context) (bool, error) {
		got, err := c.client.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		return st.Replicas == 3 && st.FullyLabeledReplicas == 3 && st.ReadyReplicas == 3 && st.AvailableReplicas == 3 &&
			st.ObservedGeneration == got.Generation, nil
	})

	// A deleted pod is replaced.
	victim := pods[1].Name
	if err := c.client.CoreV1().Pods("default").Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	after := rsWaitReadyPods(t, c, "default", labels, 3)
	if strings.Contains(rsPodNames(after), victim) {
		t.Fatalf("deleted pod %s still counted: %s", victim, rsPodNames(after))
	}
	waitFor(t, victim+" to be gone", func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().Pods("default").Get(ctx, victim, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	// kubectl scale goes through the scale subresource.
	k := newKubectl(t, c)
	if out := k.ok(t, "scale", "rs/web", "--replicas=5"); !strings.Contains(out, "scaled") {
		t.Fatalf("kubectl scale: %q", out)
	}
	rsWaitReadyPods(t, c, "default", labels, 5)
	k.ok(t, "scale", "rs/web", "--replicas=1")
	rsWaitReadyPods(t, c, "default", labels, 1)
	waitFor(t, "status of 1 replica", func(ctx context.Context) (bool, error) {
		got, err := c.client.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Status.Replicas == 1 && got.Status.ObservedGeneration == got.Generation, err
	})
	if evs := rsEvents(t, ctx, c, "default", "ReplicaSet", "web", replicaset.ReasonSuccessfulDelete); len(evs) == 0 {
		t.Error("no SuccessfulDelete events")
	}
	if evs := rsEvents(t, ctx, c, "default", "ReplicaSet", "web", replicaset.ReasonSuccessfulCreate); len(evs) < 6 ||
		!strings.HasPrefix(evs[0], "Created pod: web-") {
		t.Errorf("SuccessfulCreate events: %q", evs)
	}
}

// A pod relabeled out of the selector is released (its ownerReference
// removed) and replaced.
func TestReplicaSetReleasesRelabeledPod(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 1)
	rsStartControllers(t, c, false)
	if _, err := c.client.AppsV1().ReplicaSets("default").Create(ctx, rsNew("web", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	pods := rsWaitReadyPods(t, c, "default", labels, 2)
	debug := pods[0].Name
	rsRelabel(t, ctx, c, "default", debug, "debug")
	replaced := rsWaitReadyPods(t, c, "default", labels, 2)
	if strings.Contains(rsPodNames(replaced), debug) {
		t.Fatalf("relabeled pod still selected: %s", rsPodNames(replaced))
	}
	rsWaitOrphan(t, c, "default", debug)
}

// A matching orphan is adopted: the ReplicaSet creates only the pods it
// still lacks.
func TestReplicaSetAdoptsOrphan(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 1)
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: map[string]string{"app": "web"}},
		Spec: rsTemplate("web", "busybox").Spec}
	if _, err := c.client.CoreV1().Pods("default").Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rsWaitReadyPods(t, c, "default", map[string]string{"app": "web"}, 1)

	rsStartControllers(t, c, false)
	rs, err := c.client.AppsV1().ReplicaSets("default").Create(ctx, rsNew("web", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := rsWaitReadyPods(t, c, "default", map[string]string{"app": "web"}, 2)
	if !strings.Contains(rsPodNames(pods), "orphan") {
		t.Fatalf("pods %s: the orphan was not counted", rsPodNames(pods))
	}
	waitFor(t, "the orphan to be adopted", func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, "orphan", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ref := metav1.GetControllerOf(p)
		return ref != nil && ref.UID == rs.UID && ptr.Deref(ref.BlockOwnerDeletion, false), nil
	})
	if evs := rsEvents(t, ctx, c, "default", "ReplicaSet", "web", replicaset.ReasonSuccessfulCreate); len(evs) != 1 {
		t.Fatalf("created %d pods (%q), want 1", len(evs), evs)
	}
}

// Scale-down removes pods in Kubernetes' order: an unscheduled pod
// before running ones, then the lowest pod-deletion-cost.
func TestReplicaSetScaleDownOrder(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 2)
	rsStartControllers(t, c, false)
	rss := c.client.AppsV1().ReplicaSets("default")
	if _, err := rss.Create(ctx, rsNew("web", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	pods := rsWaitReadyPods(t, c, "default", labels, 3)

	// A matching pod no node can take: adopted, it makes four, and it is
	// the one to go.
	stuck := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stuck", Labels: labels}, Spec: rsTemplate("web", "busybox").Spec}
	stuck.Spec.NodeSelector = map[string]string{"no-such-label": "x"}
	if _, err := c.client.CoreV1().Pods("default").Create(ctx, stuck, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the unscheduled pod to be adopted and deleted", func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, "stuck", metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil), nil
	})
	if now := rsWaitReadyPods(t, c, "default", labels, 3); rsPodNames(now) != rsPodNames(pods) {
		t.Fatalf("running pods changed from %s to %s", rsPodNames(pods), rsPodNames(now))
	}

	// The cheapest pod goes first.
	cheap := pods[2].Name
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"-100"}}}`, replicaset.AnnotationPodDeletionCost)
	if _, err := c.client.CoreV1().Pods("default").Patch(ctx, cheap, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	rsScale(t, ctx, rss, "web", 2)
	left := rsWaitReadyPods(t, c, "default", labels, 2)
	if strings.Contains(rsPodNames(left), cheap) {
		t.Fatalf("kept %s, want %s (deletion cost -100) gone", rsPodNames(left), cheap)
	}
}
