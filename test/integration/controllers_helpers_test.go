package integration

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/deployment"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/replicaset"
	"github.com/minik8s/minik8s/pkg/controllermanager"
)

// rsStartControllers makes sure the ReplicaSet controller, and with
// deployments the Deployment controller too, runs against the test's
// cluster until the test ends: the test starts whichever the control
// plane's controller manager does not run itself (under the names
// "replicaset" and "deployment", as in kube-controller-manager).
func rsStartControllers(t *testing.T, c *cluster, deployments bool) {
	t.Helper()
	builtIn := controllermanager.Names()
	runRS := !slices.Contains(builtIn, "replicaset")
	runDeploy := deployments && !slices.Contains(builtIn, "deployment")
	if !runRS && !runDeploy {
		return
	}
	kc := kit.NewContext(c.client)
	kc.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var parts []kit.Part
	if runRS {
		rs, err := replicaset.New(kc, replicaset.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, kit.Part{Name: "replicaset", Start: rs.Start})
	}
	if runDeploy {
		d, err := deployment.New(kc, deployment.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, kit.Part{Name: "deployment", Start: d.Start})
	}
	runControllers(t, kc, parts...)
}

// runControllers runs parts on kc (its informers and events too) until
// the test ends; a controller that fails fails the test.
func runControllers(t *testing.T, kc *kit.Context, parts ...kit.Part) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- kit.Run(ctx, kc, parts...) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller stopped: %v", err)
		}
	})
}

// rsActivePods are the pods in ns with all of labels that count as
// replicas: not terminating, not finished.
func rsActivePods(t *testing.T, ctx context.Context, c *cluster, ns string, labels map[string]string) []corev1.Pod {
	t.Helper()
	list, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: labels})})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// rsWaitReadyPods waits for exactly n active pods with labels, all ready,
// and returns them.
func rsWaitReadyPods(t *testing.T, c *cluster, ns string, labels map[string]string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitFor(t, "pods of "+metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: labels})+" ready", func(ctx context.Context) (bool, error) {
		pods = rsActivePods(t, ctx, c, ns, labels)
		if len(pods) != n {
			return false, nil
		}
		for i := range pods {
			if !podReady(&pods[i]) {
				return false, nil
			}
		}
		return true, nil
	})
	return pods
}

// rsRelabel sets the pod's app label to app.
func rsRelabel(t *testing.T, ctx context.Context, c *cluster, ns, pod, app string) {
	t.Helper()
	patch := `{"metadata":{"labels":{"app":"` + app + `"}}}`
	if _, err := c.client.CoreV1().Pods(ns).Patch(ctx, pod, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// rsWaitOrphan waits for the pod to have no owner and not be deleted.
func rsWaitOrphan(t *testing.T, c *cluster, ns, pod string) {
	t.Helper()
	waitFor(t, pod+" to lose its owner", func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		return err == nil && len(p.OwnerReferences) == 0 && p.DeletionTimestamp == nil, err
	})
}

// scaler is a typed client of a kind with /scale.
type scaler interface {
	GetScale(ctx context.Context, name string, opts metav1.GetOptions) (*autoscalingv1.Scale, error)
	UpdateScale(ctx context.Context, name string, scale *autoscalingv1.Scale, opts metav1.UpdateOptions) (*autoscalingv1.Scale, error)
}

// rsScale sets name's replicas through /scale, as kubectl scale does: no
// resourceVersion, so the controller's own status writes in between do
// not make the request a conflict.
func rsScale(t *testing.T, ctx context.Context, s scaler, name string, replicas int32) {
	t.Helper()
	scale, err := s.GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.ResourceVersion = ""
	scale.Spec.Replicas = replicas
	if _, err := s.UpdateScale(ctx, name, scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func rsPodNames(pods []corev1.Pod) string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return strings.Join(names, ",")
}

// rsTemplate is a pod template of one busybox container labeled app=name.
func rsTemplate(name, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
}

func rsNew(name string, replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: rsTemplate(name, "busybox"),
		},
	}
}

// rsEvents are the messages of the events about one object with reason.
func rsEvents(t *testing.T, ctx context.Context, c *cluster, ns, kind, name, reason string) []string {
	t.Helper()
	list, err := c.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// deployWatchPods calls check with the pods labeled app=name after every
// change the apiserver reports, so no intermediate state is missed, until
// the returned stop is called.
func deployWatchPods(t *testing.T, ctx context.Context, c *cluster, name string, check func(pods map[string]*corev1.Pod)) (stop func()) {
	t.Helper()
	pods := c.client.CoreV1().Pods("default")
	opts := metav1.ListOptions{LabelSelector: "app=" + name}
	list, err := pods.List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]*corev1.Pod{}
	for i := range list.Items {
		state[list.Items[i].Name] = &list.Items[i]
	}
	check(state)
	opts.ResourceVersion = list.ResourceVersion
	w, err := pods.Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stopped:
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Error("pod watch ended early")
					return
				}
				p, isPod := ev.Object.(*corev1.Pod)
				if !isPod {
					continue
				}
				switch ev.Type {
				case watch.Added, watch.Modified:
					state[p.Name] = p
				case watch.Deleted:
					delete(state, p.Name)
				default:
					continue
				}
				check(state)
			}
		}
	}()
	return func() {
		close(stopped)
		w.Stop()
		<-done
	}
}
