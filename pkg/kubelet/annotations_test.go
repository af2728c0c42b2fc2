package kubelet

import (
	"context"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// annotatingPods reports a running pod and the annotations it describes it with.
type annotatingPods struct {
	noPods
	annotations map[string]string
}

func (annotatingPods) GetPodStatus(context.Context, string, string) (*corev1.PodStatus, error) {
	return &corev1.PodStatus{Phase: corev1.PodRunning}, nil
}

func (a annotatingPods) PodAnnotations(string, string) map[string]string { return a.annotations }

// The kubelet merges a PodAnnotator's annotations into the pod, patching
// only when they differ; a provider that is none writes only the status.
func TestSyncStatusAnnotations(t *testing.T) {
	for _, tc := range []struct {
		name     string
		provider Provider
		have     map[string]string
		want     map[string]string
		patches  int
	}{
		{name: "no annotator", provider: noPods{}, have: map[string]string{"a": "1"}, want: map[string]string{"a": "1"}},
		{name: "annotator without a job", provider: annotatingPods{}, have: map[string]string{"a": "1"}, want: map[string]string{"a": "1"}},
		{name: "new and changed keys", provider: annotatingPods{annotations: map[string]string{"job": "7", "state": "RUNNING"}},
			have: map[string]string{"a": "1", "state": "PENDING"}, want: map[string]string{"a": "1", "job": "7", "state": "RUNNING"}, patches: 1},
		{name: "already there", provider: annotatingPods{annotations: map[string]string{"job": "7"}},
			have: map[string]string{"job": "7"}, want: map[string]string{"job": "7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: tc.have},
				Status: corev1.PodStatus{Phase: corev1.PodRunning}}
			client := fake.NewClientset(pod)
			k, err := New(Config{Client: client, NodeName: "n", Provider: tc.provider, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			if err := k.syncStatus(t.Context(), pod); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().Pods("ns").Get(t.Context(), "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Annotations) != len(tc.want) {
				t.Errorf("annotations %v, want %v", got.Annotations, tc.want)
			}
			for key, v := range tc.want {
				if got.Annotations[key] != v {
					t.Errorf("annotations %v, want %v", got.Annotations, tc.want)
				}
			}
			patches := 0
			for _, a := range client.Actions() {
				if _, ok := a.(k8stesting.PatchAction); ok {
					patches++
				}
			}
			if patches != tc.patches {
				t.Errorf("%d patches, want %d", patches, tc.patches)
			}
		})
	}
}
