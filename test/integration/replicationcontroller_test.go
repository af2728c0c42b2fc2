package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/admission/podsecurity"
	"github.com/minik8s/minik8s/pkg/controller/replicaset"
)

// rcNew is a ReplicationController of busybox pods labeled app=name; its
// selector is left to default to the template's labels.
func rcNew(name string, replicas int32) *corev1.ReplicationController {
	t := rsTemplate(name, "busybox")
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ReplicationControllerSpec{Replicas: ptr.To(replicas), Template: &t},
	}
}

// rcWaitStatus waits for the ReplicationController's status to count n
// pods, all ready and available, for its current generation.
func rcWaitStatus(t *testing.T, c *cluster, ns, name string, n int32) {
	t.Helper()
	waitFor(t, "status of "+name, func(ctx context.Context) (bool, error) {
		rc, err := c.client.CoreV1().ReplicationControllers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := rc.Status
		return st.Replicas == n && st.FullyLabeledReplicas == n && st.ReadyReplicas == n && st.AvailableReplicas == n &&
			st.ObservedGeneration == rc.Generation, nil
	})
}

// controlledBy says whether every pod's controller is the
// ReplicationController rc, blocking its foreground deletion.
func controlledBy(pods []corev1.Pod, rc *corev1.ReplicationController) bool {
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.Kind != "ReplicationController" || ref.APIVersion != "v1" || ref.UID != rc.UID ||
			!ptr.Deref(ref.BlockOwnerDeletion, false) {
			return false
		}
	}
	return true
}

// A ReplicationController's life: it adopts a matching orphan, creates
// the pods it lacks, scales through /scale and kubectl, releases a pod
// relabeled out of its selector, reports its status, and its pods go
// with it (kubectl delete) or stay as orphans (a delete without a
// propagationPolicy, Kubernetes' default for ReplicationControllers).
func TestReplicationController(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 2)
	rcs := c.client.CoreV1().ReplicationControllers("default")
	labels := map[string]string{"app": "web"}

	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: labels}, Spec: rsTemplate("web", "busybox").Spec}
	if _, err := c.client.CoreV1().Pods("default").Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rsWaitReadyPods(t, c, "default", labels, 1)

	rc, err := rcs.Create(ctx, rcNew("web", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" {
		t.Fatalf("selector %v and labels %v not defaulted from the template", rc.Spec.Selector, rc.Labels)
	}
	waitFor(t, "the orphan adopted and one pod created", func(ctx context.Context) (bool, error) {
		pods := rsActivePods(t, ctx, c, "default", labels)
		return len(pods) == 2 && strings.Contains(rsPodNames(pods), "orphan") && controlledBy(pods, rc), nil
	})
	rsWaitReadyPods(t, c, "default", labels, 2)
	rcWaitStatus(t, c, "default", "web", 2)
	waitFor(t, "a SuccessfulCreate event on the ReplicationController", func(ctx context.Context) (bool, error) {
		evs := rsEvents(t, ctx, c, "default", "ReplicationController", "web", replicaset.ReasonSuccessfulCreate)
		return len(evs) == 1 && strings.HasPrefix(evs[0], "Created pod: web-"), nil
	})

	// The scale subresource: the selector as a label selector.
	scale, err := rcs.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 2 || scale.Status.Replicas != 2 || scale.Status.Selector != "app=web" {
		t.Fatalf("scale = %+v", scale)
	}
	rsScale(t, ctx, rcs, "web", 3)
	rsWaitReadyPods(t, c, "default", labels, 3)
	rcWaitStatus(t, c, "default", "web", 3)

	// kubectl: scale, get (short name, wide), describe, field selector.
	k := newKubectl(t, c)
	if out := k.ok(t, "scale", "rc/web", "--replicas=4"); !strings.Contains(out, "scaled") {
		t.Fatalf("kubectl scale: %q", out)
	}
	rsWaitReadyPods(t, c, "default", labels, 4)
	rcWaitStatus(t, c, "default", "web", 4)
	out := k.ok(t, "get", "rc")
	if h := tableHeader(out); !slices.Equal(h, []string{"NAME", "DESIRED", "CURRENT", "READY", "AGE"}) {
		t.Errorf("kubectl get rc header %q", h)
	}
	if row := strings.Fields(outputLines(out)[1]); !slices.Equal(row[:4], []string{"web", "4", "4", "4"}) {
		t.Errorf("kubectl get rc row %q", row)
	}
	wide := k.ok(t, "get", "replicationcontrollers", "-o", "wide")
	if h := tableHeader(wide); !slices.Equal(h[5:], []string{"CONTAINERS", "IMAGES", "SELECTOR"}) {
		t.Errorf("kubectl get rc -o wide header %q", h)
	}
	if row := strings.Fields(outputLines(wide)[1]); !slices.Equal(row[5:], []string{"c", "busybox", "app=web"}) {
		t.Errorf("kubectl get rc -o wide row %q", row)
	}
	desc := k.ok(t, "describe", "rc", "web")
	for _, want := range []string{"Name:", "Selector:", "app=web", "Replicas:", "4 current / 4 desired", "Pods Status:", "4 Running", "SuccessfulCreate"} {
		if !strings.Contains(desc, want) {
			t.Errorf("kubectl describe rc lacks %q:\n%s", want, desc)
		}
	}
	if list := k.ok(t, "get", "rc", "--field-selector", "status.replicas=4", "-o", "name"); strings.TrimSpace(list) != "replicationcontroller/web" {
		t.Errorf("field selector status.replicas=4: %q", list)
	}

	// A pod relabeled out of the selector is released and replaced.
	debug := rsActivePods(t, ctx, c, "default", labels)[0].Name
	rsRelabel(t, ctx, c, "default", debug, "debug")
	rsWaitOrphan(t, c, "default", debug)
	if pods := rsWaitReadyPods(t, c, "default", labels, 4); strings.Contains(rsPodNames(pods), debug) || !controlledBy(pods, rc) {
		t.Fatalf("pods after the release: %s", rsPodNames(pods))
	}

	// kubectl delete cascades in the background: the garbage collector
	// deletes the pods; the released one stays.
	k.ok(t, "delete", "rc", "web")
	waitFor(t, "the ReplicationController's pods to be gone", func(ctx context.Context) (bool, error) {
		list, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		return err == nil && len(list.Items) == 0, err
	})
	if _, err := c.client.CoreV1().Pods("default").Get(ctx, debug, metav1.GetOptions{}); err != nil {
		t.Errorf("the released pod: %v", err)
	}

	// A delete without a propagationPolicy orphans the pods.
	keep, err := rcs.Create(ctx, rcNew("keep", 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kept := rsWaitReadyPods(t, c, "default", map[string]string{"app": "keep"}, 1)
	if !controlledBy(kept, keep) {
		t.Fatalf("pod %s not controlled by keep", kept[0].Name)
	}
	if err := rcs.Delete(ctx, "keep", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "keep gone", func(ctx context.Context) (bool, error) {
		_, err := rcs.Get(ctx, "keep", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	rsWaitOrphan(t, c, "default", kept[0].Name)
}

// A pod creation the apiserver refuses (here Pod Security, where
// Kubernetes' conformance test uses an exceeded quota) surfaces as the
// ReplicaFailure condition, which goes once the ReplicationController
// asks for no more than can be created.
func TestReplicationControllerReplicaFailure(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "restricted", Labels: map[string]string{podsecurity.EnforceLevelLabel: "restricted"}}}
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rcs := c.client.CoreV1().ReplicationControllers("restricted")
	if _, err := rcs.Create(ctx, rcNew("web", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	failure := func(rc *corev1.ReplicationController) *corev1.ReplicationControllerCondition {
		for i, cond := range rc.Status.Conditions {
			if cond.Type == corev1.ReplicationControllerReplicaFailure {
				return &rc.Status.Conditions[i]
			}
		}
		return nil
	}
	waitFor(t, "the ReplicaFailure condition", func(ctx context.Context) (bool, error) {
		rc, err := rcs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		f := failure(rc)
		return f != nil && f.Status == corev1.ConditionTrue && f.Reason == "FailedCreate" &&
			strings.Contains(f.Message, `violates PodSecurity "restricted:latest"`), nil
	})
	waitFor(t, "a FailedCreate event", func(ctx context.Context) (bool, error) {
		return len(rsEvents(t, ctx, c, "restricted", "ReplicationController", "web", replicaset.ReasonFailedCreate)) > 0, nil
	})

	rsScale(t, ctx, rcs, "web", 0)
	waitFor(t, "the ReplicaFailure condition to go", func(ctx context.Context) (bool, error) {
		rc, err := rcs.Get(ctx, "web", metav1.GetOptions{})
		return err == nil && failure(rc) == nil && rc.Status.ObservedGeneration == rc.Generation, err
	})
}
