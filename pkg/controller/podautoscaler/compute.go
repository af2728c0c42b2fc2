package podautoscaler

import (
	"context"
	"errors"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
)

// proposeReplicas asks every metric of the HPA for a replica count; the
// largest wins. It returns -1 when no metric could answer, or when some
// failed and the others would scale down (without all metrics, a
// scale-down could be wrong). statuses has one entry per metric, in the
// spec's order, empty for a metric that failed. It sets ScalingActive.
func (c *Controller) proposeReplicas(ctx context.Context, e *evaluation, sc *autoscalingv1.Scale, current int32, tol tolerances) (replicas int32, metric string, statuses []autoscalingv2.MetricStatus, err error) {
	hpa := e.hpa
	if sc.Status.Selector == "" {
		c.Recorder.Event(hpa, corev1.EventTypeWarning, ReasonSelectorRequired, "selector is required")
		e.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, ReasonInvalidSelector, "the HPA target's scale is missing a selector")
		return -1, "", nil, errors.New("selector is required")
	}
	selector, err := labels.Parse(sc.Status.Selector)
	if err != nil {
		msg := fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		c.Recorder.Event(hpa, corev1.EventTypeWarning, ReasonInvalidSelector, msg)
		e.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, ReasonInvalidSelector, "%s", msg)
		return -1, "", nil, errors.New(msg)
	}
	specs := hpa.Spec.Metrics
	if len(specs) == 0 {
		e.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidMetricSourceType", "the HPA has no metrics")
		return -1, "", nil, errors.New("the HPA has no metrics")
	}
	pods, err := c.pods.Pods(hpa.Namespace).List(selector)
	if err != nil {
		return -1, "", nil, fmt.Errorf("list pods: %w", err)
	}
	statuses = make([]autoscalingv2.MetricStatus, len(specs))
	var (
		invalid     int
		firstErr    error
		firstReason string
	)
	for i, spec := range specs {
		n, name, reason, err := c.metricProposal(ctx, e, spec, current, pods, selector, tol, &statuses[i])
		if err != nil {
			c.Recorder.Event(hpa, corev1.EventTypeWarning, reason, err.Error())
			if invalid == 0 {
				firstErr, firstReason = err, reason
			}
			invalid++
			continue
		}
		if metric == "" || n > replicas {
			replicas, metric = n, name
		}
	}
	if invalid == len(specs) || (invalid > 0 && replicas < current) {
		e.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, firstReason,
			"the HPA was unable to compute the replica count: %v", firstErr)
		return -1, "", statuses, fmt.Errorf("invalid metrics (%d invalid out of %d), first error is: %w", invalid, len(specs), firstErr)
	}
	e.setCondition(autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound",
		"the HPA was able to successfully calculate a replica count from %s", metric)
	if invalid > 0 {
		return replicas, metric, statuses, fmt.Errorf("%d of %d metrics failed, first error is: %w", invalid, len(specs), firstErr)
	}
	return replicas, metric, statuses, nil
}

// metricProposal is one metric's replica count and name (for the
// rescale reason), or the reason (event and condition) it failed for.
func (c *Controller) metricProposal(ctx context.Context, e *evaluation, spec autoscalingv2.MetricSpec, current int32, pods []*corev1.Pod,
	selector labels.Selector, tol tolerances, status *autoscalingv2.MetricStatus) (replicas int32, name, reason string, err error) {
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource == nil {
			return 0, "", ReasonFailedGetResourceMetric, errors.New("resource metric source is missing")
		}
		replicas, name, current, err := c.resourceProposal(ctx, e, spec.Resource.Name, "", spec.Resource.Target, current, pods, selector, tol)
		if err != nil {
			return 0, "", ReasonFailedGetResourceMetric, err
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: spec.Resource.Name, Current: current}}
		return replicas, name, "", nil
	case autoscalingv2.ContainerResourceMetricSourceType:
		cr := spec.ContainerResource
		if cr == nil {
			return 0, "", ReasonFailedGetContainerResourceMetric, errors.New("container resource metric source is missing")
		}
		replicas, name, current, err := c.resourceProposal(ctx, e, cr.Name, cr.Container, cr.Target, current, pods, selector, tol)
		if err != nil {
			return 0, "", ReasonFailedGetContainerResourceMetric, err
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type,
			ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{Name: cr.Name, Container: cr.Container, Current: current}}
		return replicas, name, "", nil
	case autoscalingv2.PodsMetricSourceType:
		return 0, "", "FailedGetPodsMetric", errors.New("pods metrics need the custom metrics API (custom.metrics.k8s.io), which minik8s does not serve")
	case autoscalingv2.ObjectMetricSourceType:
		return 0, "", "FailedGetObjectMetric", errors.New("object metrics need the custom metrics API (custom.metrics.k8s.io), which minik8s does not serve")
	case autoscalingv2.ExternalMetricSourceType:
		return 0, "", "FailedGetExternalMetric", errors.New("external metrics need the external metrics API (external.metrics.k8s.io), which minik8s does not serve")
	default:
		return 0, "", "InvalidMetricSourceType", fmt.Errorf("invalid metric source type %q", spec.Type)
	}
}

// resourceProposal is the replica count for a resource (or container
// resource, when container is set) target, and the current value.
func (c *Controller) resourceProposal(ctx context.Context, e *evaluation, res corev1.ResourceName, container string, target autoscalingv2.MetricTarget,
	current int32, pods []*corev1.Pod, selector labels.Selector, tol tolerances) (int32, string, autoscalingv2.MetricValueStatus, error) {
	kind := "resource"
	if container != "" {
		kind = "container resource"
	}
	what := "utilization"
	if target.AverageValue != nil {
		what = "usage"
	} else if target.AverageUtilization == nil {
		return 0, "", autoscalingv2.MetricValueStatus{}, errors.New("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")
	}
	fail := func(err error) (int32, string, autoscalingv2.MetricValueStatus, error) {
		return 0, "", autoscalingv2.MetricValueStatus{}, fmt.Errorf("failed to get %s %s: %w", res, what, err)
	}
	usage, err := c.cfg.Metrics.PodUsage(ctx, e.hpa.Namespace, selector, res, container)
	if err != nil {
		return fail(fmt.Errorf("unable to get metrics for resource %s: %w", res, err))
	}
	if len(pods) == 0 {
		return fail(errors.New("no pods returned by selector while calculating replica count"))
	}
	g := groupPods(pods, usage, res, e.now, readiness{c.cfg.CPUInitializationPeriod, c.cfg.InitialReadinessDelay})

	if target.AverageValue != nil {
		n, avg, err := replicasForAverageValue(current, target.AverageValue.MilliValue(), usage, g, tol)
		if err != nil {
			return fail(err)
		}
		return n, fmt.Sprintf("%s %s", res, kind), autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(avg, resource.DecimalSI)}, nil
	}
	requests, err := podRequests(pods, res, container)
	if err != nil {
		return fail(err)
	}
	p, err := replicasForUtilization(current, *target.AverageUtilization, usage, g, requests, tol)
	if err != nil {
		return fail(err)
	}
	return p.replicas, fmt.Sprintf("%s %s utilization (percentage of request)", res, kind), autoscalingv2.MetricValueStatus{
		AverageUtilization: &p.utilization,
		AverageValue:       resource.NewMilliQuantity(p.average, resource.DecimalSI),
	}, nil
}
