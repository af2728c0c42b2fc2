package limitranger

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/minik8s/minik8s/pkg/admission"
	"github.com/minik8s/minik8s/pkg/quota"
)

type ranges []corev1.LimitRangeItem

func (ranges) Get(context.Context, schema.GroupVersionResource, string, string) (runtime.Object, error) {
	return nil, errors.New("not used")
}

func (r ranges) List(context.Context, schema.GroupVersionResource, string) ([]runtime.Object, error) {
	return []runtime.Object{&corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: r}}}, nil
}

func podOf(requests, limits corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}}}}
}

func attrs(obj runtime.Object) *admission.Attributes {
	return &admission.Attributes{Resource: corev1.SchemeGroupVersion.WithResource("pods"), Operation: admission.Create,
		Namespace: "ns", Name: "p", Object: obj}
}

func TestAdmitDefaults(t *testing.T) {
	items := ranges{{Type: corev1.LimitTypeContainer, Default: quota.Parse("cpu", "500m", "memory", "128Mi"), DefaultRequest: quota.Parse("cpu", "100m", "memory", "128Mi")}}
	for _, tc := range []struct {
		name             string
		pod              *corev1.Pod
		wantReq, wantLim corev1.ResourceList
		wantAnnotation   string
	}{
		{"nothing set", podOf(nil, nil), quota.Parse("cpu", "100m", "memory", "128Mi"), quota.Parse("cpu", "500m", "memory", "128Mi"),
			"LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"},
		{"own cpu kept", podOf(quota.Parse("cpu", "200m"), quota.Parse("cpu", "300m")), quota.Parse("cpu", "200m", "memory", "128Mi"), quota.Parse("cpu", "300m", "memory", "128Mi"),
			"LimitRanger plugin set: memory request for container app; memory limit for container app"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := New().Admit(context.Background(), attrs(tc.pod), items); r.Err != nil {
				t.Fatal(r.Err)
			}
			got := tc.pod.Spec.Containers[0].Resources
			if !quota.Equals(got.Requests, tc.wantReq) || !quota.Equals(got.Limits, tc.wantLim) {
				t.Errorf("resources %v, want requests %v limits %v", got, tc.wantReq, tc.wantLim)
			}
			if a := tc.pod.Annotations[Annotation]; a != tc.wantAnnotation {
				t.Errorf("annotation %q, want %q", a, tc.wantAnnotation)
			}
		})
	}
	update := attrs(podOf(nil, nil))
	update.Operation = admission.Update
	if New().Admit(context.Background(), update, items); len(update.Object.(*corev1.Pod).Spec.Containers[0].Resources.Limits) != 0 {
		t.Error("an update got defaults")
	}
}

func TestValidateBounds(t *testing.T) {
	container := ranges{{Type: corev1.LimitTypeContainer, Min: quota.Parse("cpu", "100m"), Max: quota.Parse("cpu", "1", "memory", "1Gi"),
		MaxLimitRequestRatio: quota.Parse("memory", "2")}}
	pod := ranges{{Type: corev1.LimitTypePod, Max: quota.Parse("cpu", "1")}}
	for _, tc := range []struct {
		name  string
		items ranges
		pod   *corev1.Pod
		want  string
	}{
		{"within", container, podOf(quota.Parse("cpu", "200m", "memory", "512Mi"), quota.Parse("cpu", "1", "memory", "1Gi")), ""},
		{"above max", container, podOf(quota.Parse("cpu", "200m", "memory", "512Mi"), quota.Parse("cpu", "2", "memory", "1Gi")),
			"maximum cpu usage per Container is 1, but limit is 2"},
		{"no limit for a max", container, podOf(quota.Parse("cpu", "200m", "memory", "512Mi"), quota.Parse("memory", "1Gi")),
			"maximum cpu usage per Container is 1.  No limit is specified"},
		{"below min", container, podOf(quota.Parse("cpu", "50m", "memory", "512Mi"), quota.Parse("cpu", "1", "memory", "1Gi")),
			"minimum cpu usage per Container is 100m, but request is 50m"},
		{"ratio", container, podOf(quota.Parse("cpu", "200m", "memory", "256Mi"), quota.Parse("cpu", "1", "memory", "1Gi")),
			"memory max limit to request ratio per Container is 2, but provided ratio is 4.000000"},
		{"pod sum", pod, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Limits: quota.Parse("cpu", "600m")}},
			{Name: "b", Resources: corev1.ResourceRequirements{Limits: quota.Parse("cpu", "600m")}}}}},
			"maximum cpu usage per Pod is 1, but limit is 1200m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New().Validate(context.Background(), attrs(tc.pod), tc.items)
			switch {
			case tc.want == "" && r.Err != nil:
				t.Errorf("refused: %v", r.Err)
			case tc.want != "" && (!apierrors.IsForbidden(r.Err) || !strings.Contains(r.Err.Error(), tc.want)):
				t.Errorf("got %v, want 403 %q", r.Err, tc.want)
			}
		})
	}
}
