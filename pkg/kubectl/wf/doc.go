// Package wf is `kubectl wf`, the command-line client of workflows
// (minik8s.io/v1 Workflow and WorkflowRun): run starts a run of a
// workflow with an input and, with --wait, waits for its end and prints
// its output; get summarises a run and the states it went through; logs
// prints a run's history as log lines, following it with -f; list is
// kubectl's get of workflows, with its flags.
//
// It is the kubectl plugin bin/kubectl-wf (NewPluginCommand) that any
// kubectl finds on PATH, and can be a command of a kubectl tree
// (NewCommand). It only talks to the apiserver; it does not execute runs
// (the workflow engine, pkg/workflow, does).
package wf
