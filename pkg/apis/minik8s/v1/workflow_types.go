package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Workflow is a state machine in the Amazon States Language whose Task
// states call the namespace's Functions and Workflows; each execution of
// it is a WorkflowRun.
type Workflow struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkflowSpec   `json:"spec"`
	Status WorkflowStatus `json:"status,omitempty"`
}

// WorkflowSpec holds the state machine.
type WorkflowSpec struct {
	// Definition is the state machine (StartAt, States, Comment, TimeoutSeconds, ...), inline.
	Definition JSON `json:"definition"`
}

// WorkflowStatus is what the workflow engine reports about a Workflow.
type WorkflowStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Resources are the functions and workflows its Task states call (function:<name>, workflow:<name>).
	Resources []string `json:"resources,omitempty"`
	// Conditions: Ready (False with reason ResourceNotFound while a Task names a Function or Workflow that does not exist).
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WorkflowList is a list of Workflows.
type WorkflowList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Workflow `json:"items"`
}

// Phases of a WorkflowRun.
const (
	WorkflowRunPending   = "Pending"
	WorkflowRunRunning   = "Running"
	WorkflowRunSucceeded = "Succeeded"
	WorkflowRunFailed    = "Failed"
	WorkflowRunTimedOut  = "TimedOut"
	WorkflowRunAborted   = "Aborted"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WorkflowRun is one execution of a Workflow (or of a state machine given
// inline) with an input.
type WorkflowRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkflowRunSpec   `json:"spec"`
	Status WorkflowRunStatus `json:"status,omitempty"`
}

// WorkflowRunSpec says what to run with which input; it does not change.
type WorkflowRunSpec struct {
	// Workflow names the Workflow of the namespace to run.
	Workflow string `json:"workflow,omitempty"`
	// Definition is a state machine to run instead of a Workflow's (the branches of Parallel and Map states run so).
	Definition *JSON `json:"definition,omitempty"`
	// Input is the execution's input, any JSON value (default {}).
	Input *JSON `json:"input,omitempty"`
}

// WorkflowRunStatus is the execution's state, recorded after every state so
// that it resumes where it was after a restart.
type WorkflowRunStatus struct {
	// Phase is Pending, Running, Succeeded, Failed, TimedOut or Aborted.
	Phase string `json:"phase,omitempty"`
	// StartTime and CompletionTime bound the execution.
	StartTime      *metav1.Time `json:"startTime,omitempty"`
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Output is the machine's output once Succeeded.
	Output *JSON `json:"output,omitempty"`
	// Error and Cause say why it Failed or TimedOut.
	Error string `json:"error,omitempty"`
	Cause string `json:"cause,omitempty"`
	// CurrentState is the state the execution is in.
	CurrentState string `json:"currentState,omitempty"`
	// StateInput is the current state's input.
	StateInput *JSON `json:"stateInput,omitempty"`
	// Attempt counts the current state's attempts; RetryCounts are its retriers' retries so far.
	Attempt     int32   `json:"attempt,omitempty"`
	RetryCounts []int32 `json:"retryCounts,omitempty"`
	// WaitUntil is when a Wait state or a retry's backoff ends.
	WaitUntil *metav1.MicroTime `json:"waitUntil,omitempty"`
	// Work is what the current state waits for: a task's call or child runs.
	Work *WorkflowRunWork `json:"work,omitempty"`
	// Definition is the state machine this run executes, fixed when it starts.
	Definition *JSON `json:"definition,omitempty"`
	// Transitions counts the states entered.
	Transitions int64 `json:"transitions,omitempty"`
	// History has every state entered, in order (the oldest dropped past 500).
	History []WorkflowRunState `json:"history,omitempty"`
}

// WorkflowRunWork is what a Task, Parallel or Map state needs done.
type WorkflowRunWork struct {
	// Kind is Task, Parallel or Map.
	Kind string `json:"kind"`
	// Resource is a Task's function:<name> or workflow:<name>.
	Resource string `json:"resource,omitempty"`
	// Input is the Task's effective input.
	Input *JSON `json:"input,omitempty"`
	// Timeout and Heartbeat are the Task's limits.
	Timeout   *metav1.Duration `json:"timeout,omitempty"`
	Heartbeat *metav1.Duration `json:"heartbeat,omitempty"`
	// Children are the child runs a Parallel (a branch each) or a Map (an item each) needs.
	Children []WorkflowRunChild `json:"children,omitempty"`
	// MaxConcurrency bounds a Map's children running at once (0: no bound).
	MaxConcurrency int32 `json:"maxConcurrency,omitempty"`
}

// WorkflowRunChild is one child run of a Parallel or Map state.
type WorkflowRunChild struct {
	Definition *JSON `json:"definition,omitempty"`
	Input      *JSON `json:"input,omitempty"`
}

// WorkflowRunState is one state the execution entered.
type WorkflowRunState struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Input  *JSON  `json:"input,omitempty"`
	Output *JSON  `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
	Cause  string `json:"cause,omitempty"`
	// Attempts counts a Task's, Parallel's or Map's attempts.
	Attempts int32 `json:"attempts,omitempty"`
	// Retries are the failed attempts that were retried.
	Retries []WorkflowRunRetry `json:"retries,omitempty"`
	Entered metav1.MicroTime   `json:"entered"`
	Exited  *metav1.MicroTime  `json:"exited,omitempty"`
	// Next is the state it went to.
	Next string `json:"next,omitempty"`
}

// WorkflowRunRetry is one failed attempt that was retried.
type WorkflowRunRetry struct {
	At    metav1.MicroTime `json:"at"`
	Error string           `json:"error"`
	Cause string           `json:"cause,omitempty"`
	// Delay is the backoff chosen before the next attempt.
	Delay metav1.Duration `json:"delay"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WorkflowRunList is a list of WorkflowRuns.
type WorkflowRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []WorkflowRun `json:"items"`
}
