package integration

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/deployment"
)

func deployNew(name string, replicas int32, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: rsTemplate(name, image),
		},
	}
}

func deployRolling(d *appsv1.Deployment, surge, unavailable string) *appsv1.Deployment {
	s, u := intstr.Parse(surge), intstr.Parse(unavailable)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}}
	return d
}

// deployWaitComplete waits until the Deployment's status says every
// replica runs the current template and is available.
func deployWaitComplete(t *testing.T, c *cluster, name string) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	waitFor(t, "deployment "+name+" to complete", func(ctx context.Context) (bool, error) {
		var err error
		d, err = c.client.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st, n := d.Status, ptr.Deref(d.Spec.Replicas, 1)
		return st.ObservedGeneration >= d.Generation && st.Replicas == n && st.UpdatedReplicas == n &&
			st.AvailableReplicas == n && st.ReadyReplicas == n && st.UnavailableReplicas == 0, nil
	})
	return d
}

// deployReplicaSets are the ReplicaSets the Deployment controls, by
// revision.
func deployReplicaSets(t *testing.T, ctx context.Context, c *cluster, d *appsv1.Deployment) map[string]*appsv1.ReplicaSet {
	t.Helper()
	list, err := c.client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*appsv1.ReplicaSet{}
	for i := range list.Items {
		rs := &list.Items[i]
		if metav1.IsControlledBy(rs, d) {
			out[rs.Annotations[deployment.AnnotationRevision]] = rs
		}
	}
	return out
}

func deployCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

// deployImages are the images of the active pods labeled app=name.
func deployImages(t *testing.T, ctx context.Context, c *cluster, name string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, p := range rsActivePods(t, ctx, c, "default", map[string]string{"app": name}) {
		out[p.Spec.Containers[0].Image]++
	}
	return out
}

// A new Deployment gets a ReplicaSet named by its template's hash,
// ready pods, and a complete status.
func TestDeploymentCreate(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 2)
	rsStartControllers(t, c, true)
	created, err := c.client.AppsV1().Deployments("default").Create(ctx, deployNew("web", 3, "nginx:1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := deployWaitComplete(t, c, "web")
	rss := deployReplicaSets(t, ctx, c, created)
	rs := rss["1"]
	if len(rss) != 1 || rs == nil {
		t.Fatalf("replicasets by revision: %v", rss)
	}
	hash := rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	if hash == "" || rs.Name != "web-"+hash || rs.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
		rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash {
		t.Errorf("replicaset %s, labels %v, selector %v", rs.Name, rs.Labels, rs.Spec.Selector)
	}
	if rs.Annotations[deployment.AnnotationDesiredReplicas] != "3" || rs.Annotations[deployment.AnnotationMaxReplicas] != "4" {
		t.Errorf("replicaset annotations %v (default maxSurge 25%% of 3 rounds up to 1)", rs.Annotations)
	}
	if d.Annotations[deployment.AnnotationRevision] != "1" {
		t.Errorf("deployment annotations %v", d.Annotations)
	}
	if cond := deployCondition(d, appsv1.DeploymentAvailable); cond == nil || cond.Status != corev1.ConditionTrue {
		t.Errorf("Available = %+v", cond)
	}
	waitFor(t, "Progressing NewReplicaSetAvailable", func(ctx context.Context) (bool, error) {
		d, err := c.client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond := deployCondition(d, appsv1.DeploymentProgressing)
		return cond != nil && cond.Status == corev1.ConditionTrue && cond.Reason == deployment.ReasonNewReplicaSetAvailable, nil
	})
	pods := rsWaitReadyPods(t, c, "default", map[string]string{"app": "web"}, 3)
	for _, p := range pods {
		if !metav1.IsControlledBy(&p, rs) || p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash {
			t.Errorf("pod %s: owners %+v labels %v", p.Name, p.OwnerReferences, p.Labels)
		}
	}
	want := "Scaled up replica set " + rs.Name + " from 0 to 3"
	if evs := rsEvents(t, ctx, c, "default", "Deployment", "web", deployment.ReasonScalingReplicaSet); len(evs) != 1 || evs[0] != want {
		t.Errorf("events %q, want %q", evs, want)
	}
	k := newKubectl(t, c)
	if out := k.ok(t, "rollout", "status", "deployment/web", "--timeout=30s"); !strings.Contains(out, `deployment "web" successfully rolled out`) {
		t.Errorf("rollout status: %q", out)
	}
	if out := k.ok(t, "get", "deployment", "web"); !strings.Contains(out, "3/3") {
		t.Errorf("kubectl get: %q", out)
	}
}

// A rolling update with maxUnavailable 0 never has fewer than
// spec.replicas available pods, nor more than spec.replicas + maxSurge,
// at any change of any pod.
func TestDeploymentRollingUpdate(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 2)
	rsStartControllers(t, c, true)
	d, err := c.client.AppsV1().Deployments("default").Create(ctx, deployRolling(deployNew("web", 4, "nginx:1"), "1", "0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deployWaitComplete(t, c, "web")
	rsWaitReadyPods(t, c, "default", map[string]string{"app": "web"}, 4)

	// Watch every change to the pods while the rollout runs.
	minAvailable, maxPods, changes := 4, 0, 0
	stop := deployWatchPods(t, ctx, c, "web", func(pods map[string]*corev1.Pod) {
		available, all := 0, 0
		for _, p := range pods {
			// Surge counts pods not terminating, as Kubernetes does: a
			// deleted pod may linger through its grace period.
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
				continue
			}
			all++
			if podReady(p) {
				available++
			}
		}
		minAvailable, maxPods, changes = min(minAvailable, available), max(maxPods, all), changes+1
	})
	k := newKubectl(t, c)
	k.ok(t, "set", "image", "deployment/web", "c=nginx:2")
	if out := k.ok(t, "rollout", "status", "deployment/web", "--timeout=60s"); !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status: %q", out)
	}
	deployWaitComplete(t, c, "web")
	waitFor(t, "only nginx:2 pods", func(ctx context.Context) (bool, error) {
		imgs := deployImages(t, ctx, c, "web")
		return len(imgs) == 1 && imgs["nginx:2"] == 4, nil
	})
	stop()
	t.Logf("%d pod changes: at least %d available, at most %d pods", changes, minAvailable, maxPods)
	if minAvailable < 4 {
		t.Errorf("available pods dropped to %d during the rollout (maxUnavailable 0)", minAvailable)
	}
	if maxPods > 5 {
		t.Errorf("%d pods at once during the rollout (4 + maxSurge 1)", maxPods)
	}
	rss := deployReplicaSets(t, ctx, c, d)
	if len(rss) != 2 || ptr.Deref(rss["1"].Spec.Replicas, -1) != 0 || ptr.Deref(rss["2"].Spec.Replicas, -1) != 4 {
		t.Fatalf("replicasets by revision: %v", rss)
	}
	var ups int
	for _, e := range rsEvents(t, ctx, c, "default", "Deployment", "web", deployment.ReasonScalingReplicaSet) {
		if strings.HasPrefix(e, "Scaled up replica set "+rss["2"].Name) {
			ups++
		}
	}
	if ups == 0 {
		t.Error("no ScalingReplicaSet events for the new replica set")
	}
	out := k.ok(t, "rollout", "history", "deployment/web")
	if lines := outputLines(out); len(lines) != 4 || !strings.HasPrefix(lines[2], "1 ") || !strings.HasPrefix(lines[3], "2 ") {
		t.Errorf("rollout history:\n%s", out)
	}
}

// Recreate stops every old pod before the first new one starts.
func TestDeploymentRecreate(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 2)
	rsStartControllers(t, c, true)
	d := deployNew("web", 3, "nginx:1")
	d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
	if _, err := c.client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deployWaitComplete(t, c, "web")

	overlap := false
	stop := deployWatchPods(t, ctx, c, "web", func(pods map[string]*corev1.Pod) {
		images := map[string]bool{}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				images[p.Spec.Containers[0].Image] = true
			}
		}
		overlap = overlap || len(images) > 1
	})
	newKubectl(t, c).ok(t, "set", "image", "deployment/web", "c=nginx:2")
	deployWaitComplete(t, c, "web")
	waitFor(t, "3 nginx:2 pods", func(ctx context.Context) (bool, error) {
		imgs := deployImages(t, ctx, c, "web")
		return len(imgs) == 1 && imgs["nginx:2"] == 3, nil
	})
	stop()
	if overlap {
		t.Error("old and new pods ran at the same time")
	}
}

// kubectl rollout history, undo and restart work on the controller's
// revisions.
func TestDeploymentRolloutUndoAndRestart(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 2)
	rsStartControllers(t, c, true)
	d := deployNew("web", 2, "nginx:1")
	d.Annotations = map[string]string{"kubernetes.io/change-cause": "first"}
	created, err := c.client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deployWaitComplete(t, c, "web")
	k := newKubectl(t, c)
	k.ok(t, "set", "image", "deployment/web", "c=nginx:2")
	k.ok(t, "annotate", "deployment/web", "kubernetes.io/change-cause=second", "--overwrite")
	k.ok(t, "rollout", "status", "deployment/web", "--timeout=60s")
	deployWaitComplete(t, c, "web")

	hist := k.ok(t, "rollout", "history", "deployment/web")
	if !strings.Contains(hist, "1         first") || !strings.Contains(hist, "2         second") {
		t.Fatalf("rollout history:\n%s", hist)
	}
	if out := k.ok(t, "rollout", "history", "deployment/web", "--revision=1"); !strings.Contains(out, "nginx:1") {
		t.Errorf("revision 1:\n%s", out)
	}
	before := deployReplicaSets(t, ctx, c, created)

	// Undo: back to revision 1's template, which becomes revision 3 on
	// the same ReplicaSet.
	if out := k.ok(t, "rollout", "undo", "deployment/web"); !strings.Contains(out, "rolled back") {
		t.Fatalf("rollout undo: %q", out)
	}
	k.ok(t, "rollout", "status", "deployment/web", "--timeout=60s")
	got := deployWaitComplete(t, c, "web")
	if img := got.Spec.Template.Spec.Containers[0].Image; img != "nginx:1" {
		t.Fatalf("template image after undo: %s", img)
	}
	waitFor(t, "revision 3 on the first ReplicaSet", func(ctx context.Context) (bool, error) {
		rss := deployReplicaSets(t, ctx, c, created)
		rs := rss["3"]
		return rs != nil && rs.UID == before["1"].UID && rs.Annotations[deployment.AnnotationRevisionHistory] == "1" &&
			ptr.Deref(rs.Spec.Replicas, 0) == 2 && len(rss) == 2, nil
	})
	waitFor(t, "deployment revision 3", func(ctx context.Context) (bool, error) {
		d, err := c.client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Annotations[deployment.AnnotationRevision] == "3", err
	})
	waitFor(t, "only nginx:1 pods", func(ctx context.Context) (bool, error) {
		imgs := deployImages(t, ctx, c, "web")
		return len(imgs) == 1 && imgs["nginx:1"] == 2, nil
	})
	hist = k.ok(t, "rollout", "history", "deployment/web")
	if lines := outputLines(hist); len(lines) != 4 || !strings.HasPrefix(lines[2], "2 ") || !strings.HasPrefix(lines[3], "3 ") {
		t.Errorf("rollout history after undo:\n%s", hist)
	}

	// Restart: a new template annotation, hence new pods.
	old := rsActivePods(t, ctx, c, "default", map[string]string{"app": "web"})
	if out := k.ok(t, "rollout", "restart", "deployment/web"); !strings.Contains(out, "restarted") {
		t.Fatalf("rollout restart: %q", out)
	}
	k.ok(t, "rollout", "status", "deployment/web", "--timeout=60s")
	deployWaitComplete(t, c, "web")
	var fresh []corev1.Pod
	waitFor(t, "2 restarted pods", func(ctx context.Context) (bool, error) {
		fresh = rsActivePods(t, ctx, c, "default", map[string]string{"app": "web"})
		if len(fresh) != 2 {
			return false, nil
		}
		for _, p := range fresh {
			if p.Annotations["kubectl.kubernetes.io/restartedAt"] == "" || !podReady(&p) {
				return false, nil
			}
		}
		return true, nil
	})
	for _, p := range fresh {
		if strings.Contains(rsPodNames(old), p.Name) {
			t.Errorf("pod %s survived the restart", p.Name)
		}
	}
	if rss := deployReplicaSets(t, ctx, c, created); rss["4"] == nil {
		t.Errorf("no revision 4 after the restart: %v", rss)
	}
}

// A paused Deployment does not roll out a new template, but it scales;
// resumed, it rolls out at its new size.
func TestDeploymentPaused(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 2)
	rsStartControllers(t, c, true)
	created, err := c.client.AppsV1().Deployments("default").Create(ctx, deployNew("web", 2, "nginx:1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deployWaitComplete(t, c, "web")
	k := newKubectl(t, c)
	k.ok(t, "rollout", "pause", "deployment/web")
	k.ok(t, "set", "image", "deployment/web", "c=nginx:2")
	k.ok(t, "scale", "deployment/web", "--replicas=4")
	waitFor(t, "the paused deployment to scale", func(ctx context.Context) (bool, error) {
		d, err := c.client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond := deployCondition(d, appsv1.DeploymentProgressing)
		return d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == 4 &&
			cond != nil && cond.Reason == deployment.ReasonDeploymentPaused && cond.Status == corev1.ConditionUnknown, nil
	})
	if imgs := deployImages(t, ctx, c, "web"); imgs["nginx:1"] != 4 || len(imgs) != 1 {
		t.Fatalf("pods of the paused deployment: %v", imgs)
	}
	if rss := deployReplicaSets(t, ctx, c, created); len(rss) != 1 {
		t.Fatalf("the paused deployment rolled out: %v", rss)
	}
	if msg := k.fails(t, "rollout", "undo", "deployment/web", "--to-revision=1"); !strings.Contains(msg, "paused") {
		t.Errorf("undo of a paused deployment: %q", msg)
	}

	k.ok(t, "rollout", "resume", "deployment/web")
	k.ok(t, "rollout", "status", "deployment/web", "--timeout=60s")
	deployWaitComplete(t, c, "web")
	waitFor(t, "4 nginx:2 pods", func(ctx context.Context) (bool, error) {
		imgs := deployImages(t, ctx, c, "web")
		return len(imgs) == 1 && imgs["nginx:2"] == 4, nil
	})
}

// Scaling in the middle of a stuck rollout is spread over the old and
// new ReplicaSets; a rollout that makes no progress for
// progressDeadlineSeconds says so.
func TestDeploymentProportionalScalingAndDeadline(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 2)
	rsStartControllers(t, c, true)
	d := deployRolling(deployNew("web", 10, "nginx:1"), "3", "2")
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](3)
	created, err := c.client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deployWaitComplete(t, c, "web")

	// The new template's pods can never be scheduled: the rollout
	// stops at old 8 (10 - maxUnavailable 2) + new 5 (13 - 8).
	patch := `{"spec":{"template":{"spec":{"nodeSelector":{"no-such-label":"x"},"containers":[{"name":"c","image":"nginx:2"}]}}}}`
	if _, err := c.client.AppsV1().Deployments("default").Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	sizes := func(ctx context.Context) (old, cur int32, rss map[string]*appsv1.ReplicaSet) {
		rss = deployReplicaSets(t, ctx, c, created)
		if rss["1"] != nil {
			old = ptr.Deref(rss["1"].Spec.Replicas, 0)
		}
		if rss["2"] != nil {
			cur = ptr.Deref(rss["2"].Spec.Replicas, 0)
		}
		return old, cur, rss
	}
	waitFor(t, "the rollout to stall at 8 old + 5 new", func(ctx context.Context) (bool, error) {
		old, cur, _ := sizes(ctx)
		return old == 8 && cur == 5, nil
	})
	waitFor(t, "ProgressDeadlineExceeded", func(ctx context.Context) (bool, error) {
		d, err := c.client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond := deployCondition(d, appsv1.DeploymentProgressing)
		return cond != nil && cond.Status == corev1.ConditionFalse && cond.Reason == deployment.ReasonProgressDeadlineExceeded, nil
	})
	k := newKubectl(t, c)
	if _, stderr, err := k.run(t, "rollout", "status", "deployment/web", "--timeout=10s"); err == nil || !strings.Contains(stderr, "exceeded its progress deadline") {
		t.Errorf("rollout status of a stalled deployment: err %v, stderr %q", err, stderr)
	}

	// 10 -> 20: each keeps its share of 20 + 3 over 13 (8 -> 14, 5 -> 9).
	k.ok(t, "scale", "deployment/web", "--replicas=20")
	waitFor(t, "proportional scale-up", func(ctx context.Context) (bool, error) {
		old, cur, rss := sizes(ctx)
		return old == 14 && cur == 9 && rss["1"].Annotations[deployment.AnnotationDesiredReplicas] == "20" &&
			rss["2"].Annotations[deployment.AnnotationMaxReplicas] == "23", nil
	})
	waitFor(t, "14 old pods and 9 new ones", func(ctx context.Context) (bool, error) {
		imgs := deployImages(t, ctx, c, "web")
		return imgs["nginx:1"] == 14 && imgs["nginx:2"] == 9, nil
	})
}

// A deleted ReplicaSet of a Deployment is recreated.
func TestDeploymentRecreatesDeletedReplicaSet(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 1)
	rsStartControllers(t, c, true)
	created, err := c.client.AppsV1().Deployments("default").Create(ctx, deployNew("web", 2, "nginx:1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deployWaitComplete(t, c, "web")
	rs := deployReplicaSets(t, ctx, c, created)["1"]
	// Its pods go with it (garbage collector) or are adopted by the new
	// ReplicaSet of the same name and selector: either way the
	// Deployment ends up complete.
	if err := c.client.AppsV1().ReplicaSets("default").Delete(ctx, rs.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a new ReplicaSet", func(ctx context.Context) (bool, error) {
		got, err := c.client.AppsV1().ReplicaSets("default").Get(ctx, rs.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && got.UID != rs.UID, err
	})
	deployWaitComplete(t, c, "web")
}

// Old ReplicaSets beyond revisionHistoryLimit are deleted once scaled
// to zero; the newest old ones stay for rollbacks.
func TestDeploymentRevisionHistoryLimit(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 1)
	rsStartControllers(t, c, true)
	d := deployNew("web", 1, "nginx:1")
	d.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	created, err := c.client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deployWaitComplete(t, c, "web")
	k := newKubectl(t, c)
	for _, image := range []string{"nginx:2", "nginx:3", "nginx:4"} {
		k.ok(t, "set", "image", "deployment/web", "c="+image)
		k.ok(t, "rollout", "status", "deployment/web", "--timeout=60s")
	}
	waitFor(t, "revisions 3 and 4 only", func(ctx context.Context) (bool, error) {
		rss := deployReplicaSets(t, ctx, c, created)
		return len(rss) == 2 && rss["3"] != nil && rss["4"] != nil, nil
	})
	if out := k.ok(t, "rollout", "undo", "deployment/web"); !strings.Contains(out, "rolled back") {
		t.Fatalf("rollout undo: %q", out)
	}
	k.ok(t, "rollout", "status", "deployment/web", "--timeout=60s")
	waitFor(t, "nginx:3 back", func(ctx context.Context) (bool, error) {
		imgs := deployImages(t, ctx, c, "web")
		return len(imgs) == 1 && imgs["nginx:3"] == 1, nil
	})
}
