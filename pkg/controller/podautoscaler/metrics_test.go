package podautoscaler

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
)

func podMetrics(name string, app string, containers ...metricsv1beta1.ContainerMetrics) *metricsv1beta1.PodMetrics {
	return &metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": app}},
		Timestamp:  metav1.NewTime(t0), Window: metav1.Duration{Duration: 10 * time.Second},
		Containers: containers,
	}
}

func containerUsage(name, cpu, memory string) metricsv1beta1.ContainerMetrics {
	usage := corev1.ResourceList{}
	if cpu != "" {
		usage[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		usage[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return metricsv1beta1.ContainerMetrics{Name: name, Usage: usage}
}

func TestResourceMetricsSource(t *testing.T) {
	client := metricsfake.NewSimpleClientset()
	// PodMetrics are served as "pods" of metrics.k8s.io, a resource name
	// the fake's tracker would not guess.
	gvr := metricsv1beta1.SchemeGroupVersion.WithResource("pods")
	for _, pm := range []*metricsv1beta1.PodMetrics{
		podMetrics("web-1", "web", containerUsage("app", "250m", "64Mi"), containerUsage("proxy", "50m", "16Mi")),
		podMetrics("web-2", "web", containerUsage("app", "100m", "32Mi"), containerUsage("proxy", "", "16Mi")),
		podMetrics("db", "db", containerUsage("postgres", "1", "1Gi")),
	} {
		if err := client.Tracker().Create(gvr, pm, pm.Namespace); err != nil {
			t.Fatal(err)
		}
	}
	src := NewMetricsSource(client)
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	at := func(v int64) PodUsage { return PodUsage{Value: v, Timestamp: t0, Window: 10 * time.Second} }
	for _, tc := range []struct {
		name      string
		selector  labels.Selector
		res       corev1.ResourceName
		container string
		want      map[string]PodUsage
		wantErr   string
	}{
		{"cpu summed over containers; a pod missing one is left out", web, corev1.ResourceCPU, "", map[string]PodUsage{"web-1": at(300)}, ""},
		{"memory in milli-bytes", web, corev1.ResourceMemory, "", map[string]PodUsage{"web-1": at(80 << 20 * 1000), "web-2": at(48 << 20 * 1000)}, ""},
		{"one container", web, corev1.ResourceCPU, "app", map[string]PodUsage{"web-1": at(250), "web-2": at(100)}, ""},
		{"a container without the resource is left out", web, corev1.ResourceCPU, "proxy", map[string]PodUsage{"web-1": at(50)}, ""},
		{"a container the pods do not run", web, corev1.ResourceCPU, "sidecar", nil, "container sidecar not present in metrics for pod default/"},
		{"no pods", labels.SelectorFromSet(labels.Set{"app": "none"}), corev1.ResourceCPU, "", nil, errNoMetrics.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := src.PodUsage(context.Background(), "default", tc.selector, tc.res, tc.container)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("usage = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// fakeMetrics is a MetricsSource with fixed answers, per resource.
type fakeMetrics struct {
	usage map[corev1.ResourceName]map[string]PodUsage
	err   error
}

func (f *fakeMetrics) PodUsage(_ context.Context, _ string, _ labels.Selector, res corev1.ResourceName, _ string) (map[string]PodUsage, error) {
	if f.err != nil {
		return nil, f.err
	}
	u, ok := f.usage[res]
	if !ok || len(u) == 0 {
		return nil, errors.New("no metrics returned from resource metrics API")
	}
	return maps.Clone(u), nil
}
