package job

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// Condition messages of the failure and success policies, as Kubernetes
// writes them.
const (
	msgMaxFailedIndexes = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes    = "Job has failed indexes"
)

// policyVerdict is what spec.podFailurePolicy makes of a failed Pod.
type policyVerdict struct {
	// action is that of the first matching rule; nil when none matched
	// (the Pod then counts, as with action Count).
	action *batchv1.PodFailurePolicyAction
	// failJob is the Job's failure message when the rule is FailJob.
	failJob string
}

// counts: the failure counts toward backoffLimit (or the index's
// backoffLimitPerIndex); only Ignore spares it.
func (v policyVerdict) counts() bool {
	return v.action == nil || *v.action != batchv1.PodFailurePolicyActionIgnore
}

// matchFailurePolicy runs the Pod through the rules in order; the first
// that matches decides.
func matchFailurePolicy(policy *batchv1.PodFailurePolicy, p *corev1.Pod) policyVerdict {
	if policy == nil {
		return policyVerdict{}
	}
	for i, rule := range policy.Rules {
		action := rule.Action
		switch {
		case rule.OnExitCodes != nil:
			cs := matchExitCodes(&p.Status, rule.OnExitCodes)
			if cs == nil {
				continue
			}
			v := policyVerdict{action: &action}
			if action == batchv1.PodFailurePolicyActionFailJob {
				v.failJob = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d matching %s rule at index %d",
					cs.Name, p.Namespace, p.Name, cs.State.Terminated.ExitCode, action, i)
			}
			return v
		case rule.OnPodConditions != nil:
			cond := matchPodConditions(&p.Status, rule.OnPodConditions)
			if cond == nil {
				continue
			}
			v := policyVerdict{action: &action}
			if action == batchv1.PodFailurePolicyActionFailJob {
				v.failJob = fmt.Sprintf("Pod %s/%s has condition %s matching %s rule at index %d",
					p.Namespace, p.Name, cond.Type, action, i)
			}
			return v
		}
	}
	return policyVerdict{}
}

// matchExitCodes is the first container (regular ones, then init
// containers) that terminated with a non-zero exit code the requirement
// matches.
func matchExitCodes(st *corev1.PodStatus, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses} {
		for i := range list {
			cs := &list[i]
			t := cs.State.Terminated
			if t == nil || t.ExitCode == 0 {
				continue
			}
			if req.ContainerName != nil && *req.ContainerName != cs.Name {
				continue
			}
			in := slices.Contains(req.Values, t.ExitCode)
			switch req.Operator {
			case batchv1.PodFailurePolicyOnExitCodesOpIn:
				if in {
					return cs
				}
			case batchv1.PodFailurePolicyOnExitCodesOpNotIn:
				if !in {
					return cs
				}
			}
		}
	}
	return nil
}

// matchPodConditions is the Pod's first condition that one of the
// patterns matches (type and status).
func matchPodConditions(st *corev1.PodStatus, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		for _, pat := range patterns {
			if c.Type == pat.Type && c.Status == pat.Status {
				return c
			}
		}
	}
	return nil
}

// failJobMessage is the message of the first failed Pod that a FailJob
// rule matches, if any.
func failJobMessage(job *batchv1.Job, pods []*corev1.Pod) (string, bool) {
	if job.Spec.PodFailurePolicy == nil {
		return "", false
	}
	for _, p := range pods {
		if !failed(p, job) {
			continue
		}
		if v := matchFailurePolicy(job.Spec.PodFailurePolicy, p); v.failJob != "" {
			return v.failJob, true
		}
	}
	return "", false
}

// countedFailures is how many of pods count toward backoffLimit.
func countedFailures(job *batchv1.Job, pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if matchFailurePolicy(job.Spec.PodFailurePolicy, p).counts() {
			n++
		}
	}
	return n
}

// perIndex: the Job limits failures per index (backoffLimitPerIndex).
func perIndex(job *batchv1.Job) bool {
	return indexed(job) && job.Spec.BackoffLimitPerIndex != nil
}

// indexFailures are the counted and the ignored failures of the Pod's
// index before it, from its annotations (0 when absent or malformed).
func indexFailures(p *corev1.Pod) (counted, ignored int32) {
	return annotationInt32(p, batchv1.JobIndexFailureCountAnnotation), annotationInt32(p, batchv1.JobIndexIgnoredFailureCountAnnotation)
}

func annotationInt32(p *corev1.Pod, key string) int32 {
	v, ok := p.Annotations[key]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0
	}
	return int32(n)
}

// indexFailed: the failed Pod ends its index, either by a FailIndex rule
// or because its index has used up backoffLimitPerIndex.
func indexFailed(job *batchv1.Job, p *corev1.Pod) bool {
	if !failed(p, job) {
		return false
	}
	v := matchFailurePolicy(job.Spec.PodFailurePolicy, p)
	if v.action != nil && *v.action == batchv1.PodFailurePolicyActionFailIndex {
		return true
	}
	counted, _ := indexFailures(p)
	return v.counts() && counted >= *job.Spec.BackoffLimitPerIndex
}

// failedIndexesOf are status.failedIndexes plus the indexes that failed
// Pods not counted yet end.
func failedIndexesOf(job *batchv1.Job, pods []*corev1.Pod) indexSet {
	completions := *job.Spec.Completions
	prev := parseIndexes(ptrString(job.Status.FailedIndexes), int(completions))
	var ixs []int
	for _, p := range pods {
		if validIndex(p, completions) && hasTrackingFinalizer(p) && indexFailed(job, p) {
			ixs = append(ixs, completionIndex(p))
		}
	}
	return prev.with(ixs)
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// lastFailures is, for every index still to run (neither succeeded nor
// failed, and no Pod active on it), its latest failed Pod: that Pod keeps
// its tracking finalizer until its replacement is created, so that the
// replacement can carry the index's failure count on.
func lastFailures(job *batchv1.Job, pods []*corev1.Pod, succeeded, failedIxs indexSet) map[int]*corev1.Pod {
	completions := *job.Spec.Completions
	busy := map[int]bool{}
	for _, p := range pods {
		if podutil.IsActive(p) {
			busy[completionIndex(p)] = true
		}
	}
	out := map[int]*corev1.Pod{}
	for _, p := range pods {
		if !hasTrackingFinalizer(p) || !failed(p, job) || !validIndex(p, completions) {
			continue
		}
		ix := completionIndex(p)
		if succeeded.has(ix) || failedIxs.has(ix) || busy[ix] {
			continue
		}
		if last, ok := out[ix]; ok {
			c1, i1 := indexFailures(last)
			c2, i2 := indexFailures(p)
			if c1+i1 > c2+i2 || finishedAt(p).Before(finishedAt(last)) {
				continue
			}
		}
		out[ix] = p
	}
	return out
}

// replacementFailures are the failure-count annotations of the Pod that
// replaces prev in its index.
func replacementFailures(job *batchv1.Job, prev *corev1.Pod) (counted, ignored int32) {
	if prev == nil {
		return 0, 0
	}
	counted, ignored = indexFailures(prev)
	if matchFailurePolicy(job.Spec.PodFailurePolicy, prev).counts() {
		counted++
	} else {
		ignored++
	}
	return counted, ignored
}

// indexBackoff is how long the index of prev, its latest failure, must
// still wait at now before it gets a new Pod.
func indexBackoff(prev *corev1.Pod, now time.Time, base, maxDelay time.Duration) time.Duration {
	if prev == nil {
		return 0
	}
	counted, ignored := indexFailures(prev)
	left := backoffDelay(counted+ignored+1, base, maxDelay) - now.Sub(finishedAt(prev))
	return max(left, 0)
}

// matchSuccessPolicy reports the first rule of spec.successPolicy that
// the succeeded indexes meet, as the condition message.
func matchSuccessPolicy(job *batchv1.Job, succeeded indexSet) (string, bool) {
	policy := job.Spec.SuccessPolicy
	if policy == nil || len(succeeded) == 0 {
		return "", false
	}
	completions := int(*job.Spec.Completions)
	for i, rule := range policy.Rules {
		met := false
		if rule.SucceededIndexes != nil {
			want := parseIndexes(*rule.SucceededIndexes, completions)
			if len(want) == 0 {
				continue
			}
			have := want.intersect(succeeded)
			met = have == want.total() || (rule.SucceededCount != nil && have >= int(*rule.SucceededCount))
		} else if rule.SucceededCount != nil {
			met = succeeded.total() >= int(*rule.SucceededCount)
		}
		if met {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}
