// Package asl is the Amazon States Language (https://states-language.net/spec.html)
// as minik8s runs it: parsing and validating a state machine definition
// (every state type: Task, Pass, Choice, Wait, Succeed, Fail, Parallel,
// Map), and advancing one execution of it step by step.
//
// It is pure: no clock, no network, no API objects. An Execution is the
// whole recorded state of a run; Step moves it through the states that need
// nothing from outside (Pass, Choice, Succeed, Fail, Wait once its time has
// come, input and output processing) and stops at the first that does — a
// Task to invoke, the branches of a Parallel or the items of a Map to run as
// child executions, a Wait or a retry's backoff to sit out — saying so in
// the Execution. The caller (pkg/workflow/engine) records the Execution,
// does that work and hands its result back with Complete. Because every
// step starts from the recorded Execution, a run resumes after a crash
// where its record left it. The data language (paths, payload templates,
// intrinsic functions) is package expr.
//
// Where the specification leaves a choice, asl does what AWS Step Functions
// does (JSONPath only; QueryLanguage JSONata, variables and the distributed
// Map are rejected by Parse):
//   - Errors of a state's data: a Parameters, ResultSelector or ItemSelector
//     path that matches nothing is States.ParameterPathFailure, a failing
//     intrinsic States.IntrinsicFailure, a ResultPath that cannot be set
//     States.ResultPathMatchFailure; Retry and Catch handle them. An
//     InputPath, OutputPath or other *Path field (ItemsPath, SecondsPath,
//     TimeoutSecondsPath, ...) that matches nothing or the wrong type, and a
//     Map's ItemsPath that is not an array, are States.Runtime, which no
//     Retrier or Catcher matches: the execution fails.
//   - Choice: a comparison of values of different types is false; a
//     Variable (or ...Path operand) that selects nothing is States.Runtime
//     (IsPresent tests exactly that).
//   - The *Path fields of Task, Wait and Map are resolved against the
//     state's input after InputPath; Fail's ErrorPath and CausePath against
//     its raw input.
//   - Map tolerance: with neither ToleratedFailureCount nor
//     ToleratedFailurePercentage, the first failed item fails the state with
//     its own error; with them, once more items failed than tolerated, the
//     state fails with States.ExceedToleratedFailureThreshold, else its
//     output has {"Error", "Cause"} in place of each failed item.
package asl
