package podautoscaler

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// This file is the replica count rule of Kubernetes' HPA for resource
// metrics, as pure functions: no clients, no clock (now is an argument).

// tolerances is how far the usage ratio may stray from 1 before the
// replica count changes: no change while 1-down <= ratio <= 1+up.
type tolerances struct {
	down, up float64
}

func (t tolerances) within(ratio float64) bool {
	return ratio >= 1-t.down && ratio <= 1+t.up
}

// readiness is when a pod's cpu sample is trusted: a pod that started less
// than cpuInitializationPeriod ago counts only once it is ready and a
// whole metrics window has been measured since; an older pod counts
// unless it is unready and has never been ready (its readiness last
// changed within initialReadinessDelay of its start).
type readiness struct {
	cpuInitializationPeriod time.Duration
	initialReadinessDelay   time.Duration
}

// podGroups sorts the target's pods for one resource.
type podGroups struct {
	// ready pods have a sample that counts.
	ready sets.Set[string]
	// unready pods are pending, or (cpu only) not ready or too fresh for
	// their sample to count.
	unready sets.Set[string]
	// missing pods have no sample.
	missing sets.Set[string]
	// ignored pods are being deleted or have finished; they do not count
	// at all.
	ignored sets.Set[string]
}

// groupPods sorts pods by whether their usage of res, as sampled in usage
// (by pod name), may be used at now.
func groupPods(pods []*corev1.Pod, usage map[string]PodUsage, res corev1.ResourceName, now time.Time, r readiness) podGroups {
	g := podGroups{ready: sets.New[string](), unready: sets.New[string](), missing: sets.New[string](), ignored: sets.New[string]()}
	for _, pod := range pods {
		switch {
		case pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
			g.ignored.Insert(pod.Name)
			continue
		case pod.Status.Phase == corev1.PodPending:
			g.unready.Insert(pod.Name)
			continue
		}
		sample, ok := usage[pod.Name]
		if !ok {
			g.missing.Insert(pod.Name)
			continue
		}
		if res == corev1.ResourceCPU && cpuUnready(pod, sample, now, r) {
			g.unready.Insert(pod.Name)
			continue
		}
		g.ready.Insert(pod.Name)
	}
	return g
}

// cpuUnready: cpu usage is high while a process starts, so a fresh pod's
// sample is only trusted once it is ready and has been measured over a
// whole window since.
func cpuUnready(pod *corev1.Pod, sample PodUsage, now time.Time, r readiness) bool {
	cond := podutil.ReadyCondition(pod)
	if cond == nil || pod.Status.StartTime == nil {
		return true
	}
	start := pod.Status.StartTime.Time
	if start.Add(r.cpuInitializationPeriod).After(now) {
		return cond.Status != corev1.ConditionTrue || sample.Timestamp.Before(cond.LastTransitionTime.Add(sample.Window))
	}
	return cond.Status != corev1.ConditionTrue && start.Add(r.initialReadinessDelay).After(cond.LastTransitionTime.Time)
}

// podRequests is each pod's request for res, in milli-units: the named
// container's, or the sum over its containers (sidecars included) when
// container is empty, or the pod-level request when the pod sets one. A
// container without a request for res is an error: utilization is a
// percentage of the request.
func podRequests(pods []*corev1.Pod, res corev1.ResourceName, container string) (map[string]int64, error) {
	requests := make(map[string]int64, len(pods))
	// By name, so the pod an error names does not depend on cache order.
	pods = slices.SortedFunc(slices.Values(pods), func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, pod := range pods {
		if container == "" && pod.Spec.Resources != nil {
			if q, ok := pod.Spec.Resources.Requests[res]; ok {
				requests[pod.Name] = q.MilliValue()
				continue
			}
		}
		containers := pod.Spec.Containers
		for _, c := range pod.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				containers = append(containers[:len(containers):len(containers)], c)
			}
		}
		var sum int64
		for _, c := range containers {
			if container != "" && c.Name != container {
				continue
			}
			q, ok := c.Resources.Requests[res]
			if !ok {
				return nil, fmt.Errorf("missing request for %s in container %s of Pod %s", res, c.Name, pod.Name)
			}
			sum += q.MilliValue()
		}
		requests[pod.Name] = sum
	}
	return requests, nil
}

// errNoReadyMetrics: every pod with a sample was unready or ignored.
var errNoReadyMetrics = errors.New("did not receive metrics for targeted pods (pods might be unready)")

// utilizationProposal is the replica count that brings the pods' average
// utilization (usage as a percentage of requests) to target.
type utilizationProposal struct {
	replicas int32
	// utilization is the current average utilization in percent, over
	// the ready pods' samples.
	utilization int32
	// average is the ready pods' average usage, in milli-units.
	average int64
}

// replicasForUtilization applies Kubernetes' rule for a Utilization
// target: desired = ceil(ratio * ready pods) where ratio is current over
// target utilization, unchanged within tolerance. When pods lack samples
// or are unready the count is recomputed conservatively: on a scale-down,
// missing pods are taken to use 100% of their request (or the target, if
// higher); on a scale-up missing and unready pods are taken to use
// nothing; and if that flips the direction, nothing changes.
func replicasForUtilization(current, target int32, usage map[string]PodUsage, g podGroups, requests map[string]int64, tol tolerances) (utilizationProposal, error) {
	samples := readySamples(usage, g)
	if len(samples) == 0 {
		return utilizationProposal{}, errNoReadyMetrics
	}
	ratioOf := func(s map[string]int64) (float64, int32, error) {
		var used, requested int64
		for name, v := range s {
			used += v
			requested += requests[name]
		}
		if requested == 0 {
			return 0, 0, errors.New("no metrics returned matched known pods")
		}
		u := int32(used * 100 / requested)
		return float64(u) / float64(target), u, nil
	}
	ratio, utilization, err := ratioOf(samples)
	if err != nil {
		return utilizationProposal{}, err
	}
	fallback := int64(max(100, target))
	p := utilizationProposal{utilization: utilization, average: averageOf(samples)}
	p.replicas, err = propose(current, ratio, samples, g, func(pod string) int64 { return requests[pod] * fallback / 100 },
		func(s map[string]int64) (float64, error) { r, _, err := ratioOf(s); return r, err }, tol)
	return p, err
}

// replicasForAverageValue applies the same rule to an AverageValue
// target (milli-units per pod); on a scale-down a missing pod is taken to
// use exactly the target.
func replicasForAverageValue(current int32, target int64, usage map[string]PodUsage, g podGroups, tol tolerances) (replicas int32, average int64, err error) {
	samples := readySamples(usage, g)
	if len(samples) == 0 {
		return 0, 0, errNoReadyMetrics
	}
	ratioOf := func(s map[string]int64) (float64, error) {
		return float64(averageOf(s)) / float64(target), nil
	}
	ratio, _ := ratioOf(samples)
	average = averageOf(samples)
	replicas, err = propose(current, ratio, samples, g, func(string) int64 { return target }, ratioOf, tol)
	return replicas, average, err
}

// propose is the rule shared by both targets; ratio is samples' ratio.
func propose(current int32, ratio float64, samples map[string]int64, g podGroups, downFallback func(pod string) int64,
	ratioOf func(map[string]int64) (float64, error), tol tolerances) (int32, error) {
	upWithUnready := g.unready.Len() > 0 && ratio > 1
	if !upWithUnready && g.missing.Len() == 0 {
		if tol.within(ratio) {
			return current, nil
		}
		return ceilReplicas(ratio * float64(len(samples))), nil
	}
	filled := make(map[string]int64, len(samples)+g.missing.Len()+g.unready.Len())
	for name, v := range samples {
		filled[name] = v
	}
	for name := range g.missing {
		switch {
		case ratio < 1:
			filled[name] = downFallback(name)
		case ratio > 1:
			filled[name] = 0
		}
	}
	if upWithUnready {
		for name := range g.unready {
			filled[name] = 0
		}
	}
	newRatio, err := ratioOf(filled)
	if err != nil {
		return 0, err
	}
	if tol.within(newRatio) || (ratio < 1 && newRatio > 1) || (ratio > 1 && newRatio < 1) {
		return current, nil
	}
	n := ceilReplicas(newRatio * float64(len(filled)))
	if (newRatio < 1 && n > current) || (newRatio > 1 && n < current) {
		return current, nil
	}
	return n, nil
}

// readySamples is the usage of the ready pods.
func readySamples(usage map[string]PodUsage, g podGroups) map[string]int64 {
	out := make(map[string]int64, g.ready.Len())
	for name := range g.ready {
		out[name] = usage[name].Value
	}
	return out
}

func averageOf(s map[string]int64) int64 {
	if len(s) == 0 {
		return 0
	}
	var sum int64
	for _, v := range s {
		sum += v
	}
	return sum / int64(len(s))
}

func ceilReplicas(f float64) int32 {
	c := math.Ceil(f)
	if c > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(c)
}
