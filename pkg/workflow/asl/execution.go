package asl

import (
	"encoding/json"
	"math/rand"
	"time"
)

// Status of an execution.
const (
	StatusRunning   = "Running"
	StatusSucceeded = "Succeeded"
	StatusFailed    = "Failed"
)

// Execution is everything recorded about one run of a Machine: where it
// is, what the current state is waiting for, and the history of the states
// it went through. The caller stores it between steps (WorkflowRun.status).
type Execution struct {
	// Status is Running until the machine ends in Succeeded or Failed.
	Status string `json:"status"`
	// State is the current state's name ("" once finished).
	State string `json:"state,omitempty"`
	// StateInput is the raw input of the current state.
	StateInput json.RawMessage `json:"stateInput,omitempty"`
	// Attempt counts the current state's attempts (1 on the first).
	Attempt int `json:"attempt,omitempty"`
	// RetryCounts are the retries taken so far of each Retrier of the
	// current state, by index.
	RetryCounts []int `json:"retryCounts,omitempty"`
	// WaitUntil is set while a Wait state or a retry's backoff waits: Step
	// does nothing before then.
	WaitUntil *time.Time `json:"waitUntil,omitempty"`
	// Work is what the current state needs from the caller (nil: nothing).
	Work *Work `json:"work,omitempty"`
	// Output is the machine's output once Succeeded; Error and Cause say
	// why it Failed.
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
	Cause  string          `json:"cause,omitempty"`
	// History has one entry per state entered, in order; the last one is
	// open (no Exited) while the execution is in it.
	History []Event `json:"history,omitempty"`
	// Transitions counts the states entered, including those that fell
	// off History (see MaxHistory).
	Transitions int `json:"transitions,omitempty"`
}

// MaxHistory is how many Events an Execution keeps: the oldest go first,
// so a long loop does not outgrow the object that records it.
const MaxHistory = 500

// Event is one state entered by an execution.
type Event struct {
	Name   string          `json:"name"`
	Type   string          `json:"type"`
	Input  json.RawMessage `json:"input,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
	Cause  string          `json:"cause,omitempty"`
	// Attempts of a Task, Parallel or Map (1 without retries).
	Attempts int `json:"attempts,omitempty"`
	// Retries notes each failed attempt that was retried: when it failed,
	// the error, and the delay chosen before the next.
	Retries []Retry   `json:"retries,omitempty"`
	Entered time.Time `json:"entered"`
	// Exited is nil while the state runs.
	Exited *time.Time `json:"exited,omitempty"`
	// Next is the state it went to ("" at the end).
	Next string `json:"next,omitempty"`
}

// Retry is one failed attempt that a Retrier retried.
type Retry struct {
	At    time.Time     `json:"at"`
	Error string        `json:"error"`
	Cause string        `json:"cause,omitempty"`
	Delay time.Duration `json:"delay"`
}

// Work kinds.
const (
	WorkTask     = "Task"
	WorkParallel = "Parallel"
	WorkMap      = "Map"
)

// Work is what the current state needs from the caller. Its result goes
// back through Complete.
type Work struct {
	Kind string `json:"kind"`
	// Resource is a Task's target: "function:<name>" or
	// "workflow:<name>" (a bare name is normalised to function:<name>).
	Resource string `json:"resource,omitempty"`
	// Input is the Task's effective input (after InputPath and
	// Parameters): the body of the call or the child run's input.
	Input json.RawMessage `json:"input,omitempty"`
	// Timeout is the Task's TimeoutSeconds (or TimeoutSecondsPath),
	// zero for none; Heartbeat likewise.
	Timeout   time.Duration `json:"timeout,omitempty"`
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
	// Children are the child executions of a Parallel (one per branch,
	// each the same input) or a Map (one per item, each the item after
	// ItemSelector, all the same Definition), in order.
	Children []Child `json:"children,omitempty"`
	// MaxConcurrency bounds how many of a Map's children run at once
	// (0: no bound).
	MaxConcurrency int `json:"maxConcurrency,omitempty"`
	// ToleratedFailureCount and ToleratedFailurePercentage are a Map's
	// tolerance, resolved when the state was entered (nil: not set); the
	// caller need not read them: MapResult and MapShouldStop do.
	ToleratedFailureCount      *int     `json:"toleratedFailureCount,omitempty"`
	ToleratedFailurePercentage *float64 `json:"toleratedFailurePercentage,omitempty"`
}

// Child is one child execution a Parallel or Map state needs.
type Child struct {
	// Definition is the branch's (or the ItemProcessor's) state machine,
	// as JSON that Parse accepts.
	Definition json.RawMessage `json:"definition"`
	Input      json.RawMessage `json:"input"`
}

// Result is the outcome of a Task or of one child execution: an output,
// or an error name (Error) with its Cause.
type Result struct {
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
	Cause  string          `json:"cause,omitempty"`
}

// Env is what a step may read from outside: the time, randomness, and the
// context object's execution part.
type Env struct {
	Now  time.Time
	Rand *rand.Rand
	// Execution and StateMachine fill $$.Execution (Id, Name, StartTime,
	// Input) and $$.StateMachine (Id, Name) of the context object; $$.State
	// (Name, EnteredTime, RetryCount) and $$.Map.Item (Index, Value) are
	// filled by Step itself.
	Execution    ContextExecution
	StateMachine ContextStateMachine
}

// ContextExecution is $$.Execution.
type ContextExecution struct {
	ID        string          `json:"Id"`
	Name      string          `json:"Name"`
	StartTime time.Time       `json:"StartTime"`
	Input     json.RawMessage `json:"Input"`
}

// ContextStateMachine is $$.StateMachine.
type ContextStateMachine struct {
	ID   string `json:"Id"`
	Name string `json:"Name"`
}
