package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

// PodUsage is one pod's usage of a resource, as measured.
type PodUsage struct {
	// Value is in milli-units: millicores for cpu, thousandths of a byte
	// for memory.
	Value int64
	// Timestamp is when the measurement ends, Window how long it spans.
	Timestamp time.Time
	Window    time.Duration
}

// MetricsSource reads the pods' resource usage.
type MetricsSource interface {
	// PodUsage returns, by pod name, the usage of res by the pods in
	// namespace that selector matches: the named container's usage, or
	// the sum over the pod's containers when container is empty. A pod
	// with no measurement of res is left out; no pods at all is an error.
	PodUsage(ctx context.Context, namespace string, selector labels.Selector, res corev1.ResourceName, container string) (map[string]PodUsage, error)
}

// NewMetricsSource reads usage from the resource metrics API,
// metrics.k8s.io/v1beta1 PodMetrics.
func NewMetricsSource(client metricsclient.Interface) MetricsSource {
	return resourceMetrics{client: client}
}

type resourceMetrics struct{ client metricsclient.Interface }

var _ MetricsSource = resourceMetrics{}

var errNoMetrics = errors.New("no metrics returned from resource metrics API")

func (m resourceMetrics) PodUsage(ctx context.Context, namespace string, selector labels.Selector, res corev1.ResourceName, container string) (map[string]PodUsage, error) {
	list, err := m.client.MetricsV1beta1().PodMetricses(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("unable to fetch metrics from resource metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, errNoMetrics
	}
	return usageOf(list.Items, res, container)
}

// usageOf picks res out of the pods' metrics. With a container, a pod
// whose metrics lack that container is an error (the HPA names a
// container the pods do not run); without one, a pod with a container
// that lacks res is left out.
func usageOf(items []metricsv1beta1.PodMetrics, res corev1.ResourceName, container string) (map[string]PodUsage, error) {
	out := make(map[string]PodUsage, len(items))
	for _, pm := range items {
		sample := PodUsage{Timestamp: pm.Timestamp.Time, Window: pm.Window.Duration}
		if container != "" {
			found := false
			for _, c := range pm.Containers {
				if c.Name != container {
					continue
				}
				found = true
				if q, ok := c.Usage[res]; ok {
					sample.Value = q.MilliValue()
					out[pm.Name] = sample
				}
				break
			}
			if !found {
				return nil, fmt.Errorf("container %s not present in metrics for pod %s/%s", container, pm.Namespace, pm.Name)
			}
			continue
		}
		complete := len(pm.Containers) > 0
		for _, c := range pm.Containers {
			q, ok := c.Usage[res]
			if !ok {
				complete = false
				break
			}
			sample.Value += q.MilliValue()
		}
		if complete {
			out[pm.Name] = sample
		}
	}
	return out, nil
}
