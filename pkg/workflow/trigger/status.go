package trigger

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// ConditionReady is the Trigger's condition type.
const ConditionReady = "Ready"

// Reasons of the Ready condition.
const (
	ReasonActive         = "Active"
	ReasonSuspended      = "Suspended"
	ReasonUnknownKind    = "UnknownKind"
	ReasonTargetNotFound = "TargetNotFound"
	ReasonInvalidSource  = "InvalidSource"
	// ReasonSyncing: an event trigger's informer has not listed its kind yet.
	ReasonSyncing = "Syncing"
)

// Results of a firing, as status.lastResult says them.
const (
	ResultRunning   = "Running"
	ResultSucceeded = "Succeeded"
)

// change is what a reconcile or a firing does to a Trigger's status. It
// is applied to a fresh read of the Trigger, so that what the other
// writer (the HTTP handler, an invocation finishing) wrote meanwhile is
// kept: counters are added to, the active list is edited, not replaced.
type change struct {
	generation *int64
	ready      *metav1.Condition
	url        *string
	// addActive and dropActive edit status.active (by UID).
	addActive  []corev1.ObjectReference
	dropActive []types.UID
	// succeeded and failed are added to the counters.
	succeeded, failed int64
	// results set lastResult when lastRun is the key.
	results map[string]string
	// fired records a firing.
	fired *firing
	// scheduled sets lastScheduleTime.
	scheduled *time.Time
}

// firing is one firing as the status records it.
type firing struct {
	at     time.Time
	run    string // the WorkflowRun's name, or function/<name>
	result string // lastResult
}

func (c *change) empty() bool {
	return c == nil || (c.generation == nil && c.ready == nil && c.url == nil && len(c.addActive) == 0 &&
		len(c.dropActive) == 0 && c.succeeded == 0 && c.failed == 0 && len(c.results) == 0 && c.fired == nil && c.scheduled == nil)
}

func (c *change) result(run, result string) {
	if c.results == nil {
		c.results = map[string]string{}
	}
	c.results[run] = result
}

// apply makes the change to st.
func (c *change) apply(st *minik8sv1.TriggerStatus) {
	if c.generation != nil {
		st.ObservedGeneration = *c.generation
	}
	if c.ready != nil {
		apimeta.SetStatusCondition(&st.Conditions, *c.ready)
	}
	if c.url != nil {
		st.URL = *c.url
	}
	st.Active = slices.DeleteFunc(st.Active, func(r corev1.ObjectReference) bool { return slices.Contains(c.dropActive, r.UID) })
	for _, ref := range c.addActive {
		if !slices.ContainsFunc(st.Active, func(r corev1.ObjectReference) bool { return r.UID == ref.UID }) &&
			!slices.Contains(c.dropActive, ref.UID) {
			st.Active = append(st.Active, ref)
		}
	}
	if len(st.Active) == 0 {
		st.Active = nil
	}
	st.Succeeded += c.succeeded
	st.Failed += c.failed
	if f := c.fired; f != nil {
		st.Fired++
		st.LastFireTime = &metav1.Time{Time: f.at}
		st.LastRun, st.LastResult = f.run, f.result
	}
	if r, ok := c.results[st.LastRun]; ok && st.LastRun != "" {
		st.LastResult = r
	}
	if c.scheduled != nil {
		st.LastScheduleTime = &metav1.Time{Time: *c.scheduled}
	}
}

// updateStatus applies ch to the Trigger namespace/name (whose UID must
// be uid, when given) through the status subresource, re-reading it and
// trying again on a conflict. A change that leaves the status as it is
// writes nothing.
func updateStatus(ctx context.Context, dyn dynamic.Interface, namespace, name string, uid types.UID, ch *change) error {
	if ch.empty() {
		return nil
	}
	client := dyn.Resource(wfmeta.TriggerResource).Namespace(namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if uid != "" && u.GetUID() != uid {
			return nil // deleted and created again: not ours to write
		}
		tr, err := fromUnstructured[minik8sv1.Trigger](u)
		if err != nil {
			return err
		}
		before := tr.Status.DeepCopy()
		ch.apply(&tr.Status)
		if equality.Semantic.DeepEqual(before, &tr.Status) {
			return nil
		}
		status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tr.Status)
		if err != nil {
			return err
		}
		u.Object["status"] = status
		_, err = client.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("update status of trigger %s/%s: %w", namespace, name, err)
	}
	return nil
}

// fromUnstructured converts an informer's or a client's object (an
// *unstructured.Unstructured, or a tombstone holding one) to a T.
func fromUnstructured[T any](obj any) (*T, error) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("not an unstructured object: %T", obj)
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return out, nil
}

// toUnstructured converts a typed object of minik8s.io/v1 for the dynamic client.
func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// Trigger helpers.

func suspended(tr *minik8sv1.Trigger) bool { return tr.Spec.Suspend != nil && *tr.Spec.Suspend }

func historyLimits(tr *minik8sv1.Trigger) (succeeded, failed int) {
	succeeded, failed = 3, 1
	if l := tr.Spec.SuccessfulRunsHistoryLimit; l != nil {
		succeeded = int(*l)
	}
	if l := tr.Spec.FailedRunsHistoryLimit; l != nil {
		failed = int(*l)
	}
	return max(succeeded, 0), max(failed, 0)
}

// payloadOf is the trigger's spec.payload, {} when unset.
func payloadOf(tr *minik8sv1.Trigger) []byte {
	if tr.Spec.Payload == nil || len(tr.Spec.Payload.Raw) == 0 {
		return []byte("{}")
	}
	return tr.Spec.Payload.Raw
}

// functionRun is lastRun for an invocation of the function name.
func functionRun(name string) string { return "function/" + name }

// truncate keeps status strings short.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
