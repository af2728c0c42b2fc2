package integration

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// PriorityClasses are served with Kubernetes' rules, the system classes
// exist from the start, and pods get their priority from their class
// (Priority admission), or from the global default.
func TestPriorityClasses(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	pcs := c.client.SchedulingV1().PriorityClasses()
	for _, name := range []string{"system-node-critical", "system-cluster-critical"} {
		if _, err := pcs.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("system priority class %s: %v", name, err)
		}
	}
	_, err := pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "too-high"}, Value: 2000000000}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("a user class above 1000000000: %v, want Invalid", err)
	}
	_, err = pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-mine"}, Value: 1}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("a class named system-*: %v, want Invalid", err)
	}
	high, err := pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000,
		PreemptionPolicy: ptr.To(corev1.PreemptNever)}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	high.Value = 5
	if _, err := pcs.Update(ctx, high, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing a class's value: %v, want Invalid", err)
	}

	pods := c.client.CoreV1().Pods("default")
	pod := func(name, class string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{PriorityClassName: class, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	got, err := pods.Create(ctx, pod("plain", ""), metav1.CreateOptions{})
	if err != nil || got.Spec.Priority == nil || *got.Spec.Priority != 0 {
		t.Fatalf("a pod without a class: %v, priority %v, want 0", err, got.Spec.Priority)
	}
	got, err = pods.Create(ctx, pod("important", "high"), metav1.CreateOptions{})
	if err != nil || *got.Spec.Priority != 1000 || *got.Spec.PreemptionPolicy != corev1.PreemptNever {
		t.Fatalf("a pod of class high: %v, %+v", err, got.Spec)
	}
	_, err = pods.Create(ctx, pod("lost", "nope"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "no PriorityClass with name nope was found") {
		t.Errorf("a pod of a missing class: %v", err)
	}
	p := pod("forged", "high")
	p.Spec.Priority = ptr.To[int32](7)
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a pod forging its priority: %v, want Forbidden", err)
	}
	if _, err := pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "everyone"}, Value: 50, GlobalDefault: true}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err = pods.Create(ctx, pod("defaulted", ""), metav1.CreateOptions{})
	if err != nil || *got.Spec.Priority != 50 || got.Spec.PriorityClassName != "everyone" {
		t.Fatalf("a pod under a global default: %v, %+v", err, got.Spec)
	}
}

// PodTemplates, RuntimeClasses and IngressClasses are served and
// validated.
func TestSimpleKinds(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tpl"}, Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}
	got, err := c.client.CoreV1().PodTemplates("default").Create(ctx, pt, metav1.CreateOptions{})
	if err != nil || got.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Fatalf("pod template: %v (defaults: %+v)", err, got)
	}
	bad := pt.DeepCopy()
	bad.Name, bad.Template.Spec.Containers = "bad", nil
	if _, err := c.client.CoreV1().PodTemplates("default").Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("a pod template without containers: %v, want Invalid", err)
	}
	if _, err := c.client.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "runc"}, Handler: "runc"}, metav1.CreateOptions{}); err != nil {
		t.Errorf("runtime class: %v", err)
	}
	if _, err := c.client.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Handler: "Not_A_Label"}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("runtime class with a bad handler: %v, want Invalid", err)
	}
	list, err := c.client.NetworkingV1().IngressClasses().List(ctx, metav1.ListOptions{})
	if err != nil || list == nil {
		t.Errorf("ingress classes: %v", err)
	}
}
