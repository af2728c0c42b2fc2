package integration

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A pod naming a RuntimeClass gets the class's overhead, node selector
// and tolerations; a missing class, a different overhead, or an overhead
// without a class is 403 and stores nothing.
func TestRuntimeClassAdmission(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	overhead := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("120Mi")}
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "sandboxed"}, Handler: "runc",
		Overhead: &nodev1.Overhead{PodFixed: overhead},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "yes"},
			Tolerations: []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}}
	if _, err := c.client.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Handler: "runc"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := c.client.CoreV1().Pods("default")
	pod := func(name, class string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if class != "" {
			p.Spec.RuntimeClassName = ptr.To(class)
		}
		return p
	}

	got, err := pods.Create(ctx, pod("with-class", "sandboxed"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cpu := got.Spec.Overhead[corev1.ResourceCPU]; cpu.String() != "250m" {
		t.Errorf("overhead %v, want the class's 250m cpu", got.Spec.Overhead)
	}
	if got.Spec.NodeSelector["sandbox"] != "yes" {
		t.Errorf("node selector %v, want the class's sandbox=yes", got.Spec.NodeSelector)
	}
	found := false
	for _, tol := range got.Spec.Tolerations {
		found = found || tol.Key == "sandbox" && tol.Effect == corev1.TaintEffectNoSchedule
	}
	if !found {
		t.Errorf("tolerations %v, want the class's sandbox toleration", got.Spec.Tolerations)
	}
	if got, err := pods.Create(ctx, pod("plain", "plain"), metav1.CreateOptions{}); err != nil || got.Spec.Overhead != nil {
		t.Errorf("a class without overhead: %v, overhead %v", err, got.Spec.Overhead)
	}

	refused := map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"missing class": {pod("missing", "nope"), `RuntimeClass "nope" not found`},
		"other overhead": {func() *corev1.Pod {
			p := pod("other-overhead", "sandboxed")
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			return p
		}(), "doesn't match RuntimeClass's defined Overhead"},
		"overhead without class": {func() *corev1.Pod {
			p := pod("no-class", "")
			p.Spec.Overhead = overhead
			return p
		}(), "Pod Overhead set without corresponding RuntimeClass defined Overhead"},
		"selector conflict": {func() *corev1.Pod {
			p := pod("conflict", "sandboxed")
			p.Spec.NodeSelector = map[string]string{"sandbox": "no"}
			return p
		}(), "conflict: runtimeClass.scheduling.nodeSelector[sandbox]"},
	}
	for name, tc := range refused {
		for _, dryRun := range [][]string{{metav1.DryRunAll}, nil} {
			_, err := pods.Create(ctx, tc.pod, metav1.CreateOptions{DryRun: dryRun})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s (dry run %v): %v, want 403 with %q", name, dryRun, err, tc.want)
			}
		}
		if _, err := pods.Get(ctx, tc.pod.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: the refused pod was stored (%v)", name, err)
		}
	}
}
