// Package engine executes WorkflowRuns: it is the controller that moves
// each run through its state machine (package asl) one level at a time,
// from what the run's status records. After every step it writes the
// status — the current state, its input and attempts, a Wait's or a
// retry's deadline, the work the state waits for, and the history of every
// state entered — so a control plane that dies mid-run resumes each run
// where its status left it. A Task in flight at the crash is called again:
// Tasks run at least once.
//
// The outside work a state needs is done without holding a worker or a
// goroutine while nothing happens: a function Task is one HTTP call
// through the function router (package invoke), whose answer re-queues the
// run; a workflow Task, each branch of a Parallel and each item of a Map
// is a child WorkflowRun owned by the run, whose end re-queues it; a Wait
// and a retry's backoff are the queue's delayed re-add. Deleting a run
// deletes its children (ownerReferences) and cancels its call; a run that
// ends while children run (a failed branch, a machine timeout) marks them
// Aborted.
//
// The workflow controller (workflow.go) reports each Workflow's Task
// resources and whether they exist (the Ready condition). Both controllers
// run in the controller manager, leader-elected with the others.
package engine
