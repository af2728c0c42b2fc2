package kubelet

import (
	"context"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// runningPod is a provider running one pod as it last heard of it, and
// counting the updates it is handed.
type runningPod struct {
	noPods
	pod     *corev1.Pod
	updates []*corev1.Pod
}

func (r *runningPod) GetPod(context.Context, string, string) (*corev1.Pod, error) {
	return r.pod.DeepCopy(), nil
}

func (r *runningPod) UpdatePod(_ context.Context, pod *corev1.Pod) error {
	r.updates = append(r.updates, pod.DeepCopy())
	return nil
}

// The provider hears of a pod whose labels or annotations changed (its
// downwardAPI volumes and fieldRef environment show them), not of a pod
// whose only news is its resource version or status.
func TestSyncPodHandsOverMetadataChanges(t *testing.T) {
	base := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1", ResourceVersion: "1",
			Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"x": "1"}},
		Spec:   corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, tc := range []struct {
		name   string
		change func(*corev1.Pod)
		want   int
	}{
		{name: "nothing but the resource version", change: func(p *corev1.Pod) { p.ResourceVersion = "2" }},
		{name: "status", change: func(p *corev1.Pod) { p.Status.Message = "m" }},
		{name: "label", change: func(p *corev1.Pod) { p.Labels["a"] = "2" }, want: 1},
		{name: "new annotation", change: func(p *corev1.Pod) { p.Annotations["mysubpath"] = "mypath" }, want: 1},
		{name: "spec", change: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "j" }, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := base.DeepCopy()
			tc.change(api)
			provider := &runningPod{pod: base.DeepCopy()}
			k, err := New(Config{Client: fake.NewClientset(api), NodeName: "n", Provider: provider, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			if err := k.factory.Core().V1().Pods().Informer().GetIndexer().Add(api); err != nil {
				t.Fatal(err)
			}
			if err := k.syncPod(t.Context(), "ns/p"); err != nil {
				t.Fatal(err)
			}
			if len(provider.updates) != tc.want {
				t.Fatalf("%d updates, want %d", len(provider.updates), tc.want)
			}
			if tc.want > 0 && provider.updates[0].ResourceVersion != api.ResourceVersion {
				t.Errorf("the provider got resource version %s, want the API's %s", provider.updates[0].ResourceVersion, api.ResourceVersion)
			}
		})
	}
}
