// Package trigger is what starts workflow runs and function calls from
// outside: the Trigger controller (schedule and event sources) and the
// HTTP entry points the router process serves (/trigger/<ns>/<name> for
// HTTP sources, /workflow/<ns>/<name> for a synchronous run).
//
// A firing starts the Trigger's target with a payload: a Workflow target
// gets a WorkflowRun (generateName "<workflow>-", labelled with the
// workflow and the trigger, controlled by the Trigger through an
// ownerReference, as a CronJob controls its Jobs); a Function target is
// called through the function router (invoke.Invoker) in a goroutine of
// its own, at most Config.MaxInvocations at once. Every firing updates the
// Trigger's status (lastFireTime, lastRun, lastResult, fired) and records a
// "Fired" Event; the outcome is counted (succeeded, failed) when it is
// known: at once for a function, when the run ends for a workflow.
//
// The controller owns the Trigger's status (written through the status
// subresource, each write a delta applied to a fresh read and retried on
// conflict, since the HTTP handler writes it too), the WorkflowRuns its
// Triggers start (it deletes the oldest finished ones beyond the history
// limits, and the running ones a Replace policy replaces), and one
// dynamic informer per (resource, namespace) that the event triggers
// watch, started when the first trigger needs it and stopped when the
// last one goes. It never executes a run (that is the workflow engine's)
// and never writes a run's status; a run it has counted carries the
// annotation CountedAnnotation so that a restarted controller does not
// count it again.
//
// Schedules are CronJob's (pkg/cronschedule; the time zone defaults to
// UTC): the controller requeues a Trigger at its next time, fires the
// latest missed time within startingDeadlineSeconds, and applies the
// concurrency policy to the trigger's running WorkflowRuns, or, for a
// function target, to its invocations in flight (Replace cancels them).
//
// Event sources fire only on changes made after the trigger exists:
// nothing fires for the objects an informer lists when it starts, for an
// ADDED object created before the trigger, or for an update that does
// not change the resourceVersion (a resync). A kind that discovery does
// not know sets Ready False (UnknownKind) and is looked up again every
// minute.
//
// The synchronous /workflow/<ns>/<name> call waits for the run it
// creates until the run ends, the request's ?timeout (default 5m)
// passes (504, reason WaitTimeout) or the client goes away. Unlike Step
// Functions' StartSyncExecution, which stops an execution that outlives
// the call, the run is left running: it is an ordinary WorkflowRun that
// can be watched, or deleted to abort it, and its name is in the
// X-Minik8s-Workflow-Run header of every answer.
package trigger
