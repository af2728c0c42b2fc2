package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Trigger starts a Function or a Workflow with a payload whenever its
// source fires: a schedule, an event of Kubernetes objects, or an HTTP
// request to /trigger/<namespace>/<name> on the gateway.
type Trigger struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TriggerSpec   `json:"spec"`
	Status TriggerStatus `json:"status,omitempty"`
}

// TriggerSpec is what a trigger starts and when.
type TriggerSpec struct {
	// Target is the Function or the Workflow it starts.
	Target TriggerTarget `json:"target"`
	// Payload is the input of what a schedule starts, and of an HTTP firing without a body (default {}).
	Payload *JSON `json:"payload,omitempty"`
	// Exactly one source: Schedule, Event or HTTP.
	Schedule *ScheduleSource `json:"schedule,omitempty"`
	Event    *EventSource    `json:"event,omitempty"`
	HTTP     *HTTPSource     `json:"http,omitempty"`
	// Suspend stops the trigger from firing (it is not caught up on).
	Suspend *bool `json:"suspend,omitempty"`
	// SuccessfulRunsHistoryLimit and FailedRunsHistoryLimit keep that many finished WorkflowRuns it started (defaults 3 and 1).
	SuccessfulRunsHistoryLimit *int32 `json:"successfulRunsHistoryLimit,omitempty"`
	FailedRunsHistoryLimit     *int32 `json:"failedRunsHistoryLimit,omitempty"`
}

// TriggerTarget names exactly one of a Function and a Workflow of the trigger's namespace.
type TriggerTarget struct {
	Function string `json:"function,omitempty"`
	Workflow string `json:"workflow,omitempty"`
}

// Concurrency policies of a schedule, as a CronJob's.
const (
	AllowConcurrent   = "Allow"
	ForbidConcurrent  = "Forbid"
	ReplaceConcurrent = "Replace"
)

// ScheduleSource fires on a cron schedule.
type ScheduleSource struct {
	// Schedule is a cron schedule: five fields, or @hourly, @daily, @every 5m, ...
	Schedule string `json:"schedule"`
	// TimeZone is the IANA time zone of the schedule (default the controller's: UTC).
	TimeZone *string `json:"timeZone,omitempty"`
	// ConcurrencyPolicy is Allow (default), Forbid (skip a firing while a run it started is running) or Replace (abort it).
	ConcurrencyPolicy string `json:"concurrencyPolicy,omitempty"`
	// StartingDeadlineSeconds: a firing missed by more than this is skipped.
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`
}

// Event types an EventSource fires on.
const (
	EventAdded    = "ADDED"
	EventModified = "MODIFIED"
	EventDeleted  = "DELETED"
)

// EventSource fires when objects of one kind are added, modified or deleted.
type EventSource struct {
	// APIVersion and Kind name the kind watched, e.g. v1 ConfigMap.
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace limits it to one namespace (default the trigger's; "*" for all, for cluster-scoped kinds ignored).
	Namespace string `json:"namespace,omitempty"`
	// Selector limits it to objects with these labels.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Types are the event types that fire it (default all three).
	Types []string `json:"types,omitempty"`
}

// HTTPSource fires on a request to /trigger/<namespace>/<name> on the gateway; the request's body is the payload.
type HTTPSource struct {
	// Methods it answers (default POST).
	Methods []string `json:"methods,omitempty"`
}

// TriggerStatus is what the trigger controller reports.
type TriggerStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastFireTime is when it last fired; LastScheduleTime the schedule's last firing time.
	LastFireTime     *metav1.Time `json:"lastFireTime,omitempty"`
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastRun is the WorkflowRun or the function invocation it last started; LastResult its outcome
	// (Running, Succeeded, Failed, ... or an HTTP status for a function).
	LastRun    string `json:"lastRun,omitempty"`
	LastResult string `json:"lastResult,omitempty"`
	// Active are its WorkflowRuns still running.
	Active []corev1.ObjectReference `json:"active,omitempty"`
	// Fired, Succeeded and Failed count its firings and their outcomes.
	Fired     int64 `json:"fired,omitempty"`
	Succeeded int64 `json:"succeeded,omitempty"`
	Failed    int64 `json:"failed,omitempty"`
	// URL is where an HTTP trigger is posted to.
	URL string `json:"url,omitempty"`
	// Conditions: Ready (False with the reason the source or target is not usable).
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TriggerList is a list of Triggers.
type TriggerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Trigger `json:"items"`
}
