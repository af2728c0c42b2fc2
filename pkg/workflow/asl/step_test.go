package asl

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestStates(t *testing.T) {
	tasks := map[string]taskFunc{
		"function:echo":   echo,
		"function:double": func(in any, _ int) Result { return ok(`{"n": 42}`)(in, 0) },
		"function:cluster": ok(`{"resourceType": "elasticmapreduce", "resource": "createCluster.sync",
			"output": {"SdkHttpMetadata": {"HttpHeaders": {}}, "ClusterId": "AKIA"}}`),
		"function:boom":     fails("Boom", "it broke"),
		"workflow:sub":      ok(`"sub done"`),
		"function:timeout":  fails(ErrorTimeout, "too slow"),
		"workflow:ship-val": echo,
	}
	tests := []struct {
		name  string
		def   string
		input string
		want  outcome
	}{
		{"pass", def(`"A": {"Type": "Pass", "End": true}`), `{"a": 1}`, outcome{output: `{"a": 1}`}},
		{"pass Result at ResultPath", def(`"A": {"Type": "Pass", "Result": {"x": [1, 2]}, "ResultPath": "$.r", "End": true}`),
			`{"a": 1}`, outcome{output: `{"a": 1, "r": {"x": [1, 2]}}`}},
		{"pass Result replaces", def(`"A": {"Type": "Pass", "Result": "hi", "End": true}`), `{"a": 1}`, outcome{output: `"hi"`}},
		{"InputPath", def(`"A": {"Type": "Pass", "InputPath": "$.a", "End": true}`), `{"a": {"b": 1}}`, outcome{output: `{"b": 1}`}},
		{"InputPath null", def(`"A": {"Type": "Pass", "InputPath": null, "End": true}`), `{"a": 1}`, outcome{output: `{}`}},
		{"OutputPath null", def(`"A": {"Type": "Pass", "OutputPath": null, "End": true}`), `{"a": 1}`, outcome{output: `{}`}},
		{"ResultPath null keeps raw input", def(`"A": {"Type": "Pass", "InputPath": "$.a", "Result": 5, "ResultPath": null, "End": true}`),
			`{"a": 1}`, outcome{output: `{"a": 1}`}},
		{"ResultPath into raw input", def(`"A": {"Type": "Pass", "InputPath": "$.a", "ResultPath": "$.copy", "End": true}`),
			`{"a": {"b": 1}}`, outcome{output: `{"a": {"b": 1}, "copy": {"b": 1}}`}},
		// The spec's example: InputPath, then ResultPath into the raw input.
		{"spec ResultPath", def(`"A": {"Type": "Task", "Resource": "double", "InputPath": "$.numbers", "ResultPath": "$.sum", "OutputPath": "$.sum.n", "End": true}`),
			`{"title": "Numbers to add", "numbers": {"val1": 3, "val2": 4}}`, outcome{output: `42`}},
		{"Parameters with paths and context", def(`"A": {"Type": "Task", "Resource": "echo", "End": true,
			"Parameters": {"flagged": true, "parts": {"first.$": "$.vals[0]", "last3.$": "$.vals[-3:]"},
			  "state.$": "$$.State.Name", "run.$": "$$.Execution.Id", "start.$": "$$.Execution.StartTime",
			  "entered.$": "$$.State.EnteredTime", "wf.$": "$$.StateMachine.Name", "orig.$": "$$.Execution.Input.original",
			  "retries.$": "$$.State.RetryCount", "msg.$": "States.Format('{} has {} values', $.name, States.ArrayLength($.vals))"}}`),
			`{"name": "v", "flagged": 7, "vals": [0, 10, 20, 30, 40, 50]}`,
			outcome{output: `{"flagged": true, "parts": {"first": 0, "last3": [30, 40, 50]}, "state": "A", "run": "run-1",
			  "start": "2024-05-01T12:00:00Z", "entered": "2024-05-01T12:00:00Z", "wf": "wf", "orig": true, "retries": 0,
			  "msg": "v has 6 values"}`}},
		// The spec's ResultSelector example.
		{"ResultSelector", def(`"A": {"Type": "Task", "Resource": "cluster", "End": true,
			"ResultSelector": {"ClusterId.$": "$.output.ClusterId", "ResourceType.$": "$.resourceType", "SomethingElse.$": "$"},
			"ResultPath": "$.EMROutput", "OutputPath": "$.EMROutput"}`),
			`{"Name": "MyWorkflowJob"}`, outcome{output: `{"ClusterId": "AKIA", "ResourceType": "elasticmapreduce",
			"SomethingElse": {"resourceType": "elasticmapreduce", "resource": "createCluster.sync",
			"output": {"SdkHttpMetadata": {"HttpHeaders": {}}, "ClusterId": "AKIA"}}}`}},
		{"order InputPath Parameters ResultSelector ResultPath OutputPath", def(`"A": {"Type": "Task", "Resource": "echo", "End": true,
			"InputPath": "$.in", "Parameters": {"p.$": "$.v"}, "ResultSelector": {"r.$": "$.p"}, "ResultPath": "$.in.out", "OutputPath": "$.in"}`),
			`{"in": {"v": 7}, "other": 1}`, outcome{output: `{"v": 7, "out": {"r": 7}}`}},
		{"workflow resource", def(`"A": {"Type": "Task", "Resource": "workflow:sub", "End": true}`), `{}`, outcome{output: `"sub done"`}},
		{"task failure fails the run", def(`"A": {"Type": "Task", "Resource": "boom", "End": true}`), `{}`, outcome{err: "Boom"}},
		{"ParameterPathFailure", def(`"A": {"Type": "Pass", "Parameters": {"x.$": "$.missing"}, "End": true}`), `{}`, outcome{err: ErrorParameterPathFailure}},
		{"IntrinsicFailure", def(`"A": {"Type": "Pass", "Parameters": {"x.$": "States.ArrayGetItem($.a, 5)"}, "End": true}`), `{"a": [1]}`, outcome{err: ErrorIntrinsicFailure}},
		{"ResultPathMatchFailure", def(`"A": {"Type": "Pass", "Result": 1, "ResultPath": "$.a.b", "End": true}`), `{"a": 3}`, outcome{err: ErrorResultPathMatchFailure}},
		{"ParameterPathFailure is caught", def(`"A": {"Type": "Task", "Resource": "echo", "Parameters": {"x.$": "$.missing"}, "End": true,
			"Catch": [{"ErrorEquals": ["States.ParameterPathFailure"], "Next": "C"}]}, "C": {"Type": "Pass", "End": true}`),
			`{}`, outcome{output: `{"Error": "States.ParameterPathFailure", "Cause": "Parameters: path \"$.missing\": field \"x.$\": no field \"missing\" at $"}`}},
		{"InputPath failure is Runtime, not caught", def(`"A": {"Type": "Task", "Resource": "echo", "InputPath": "$.missing", "End": true,
			"Catch": [{"ErrorEquals": ["States.ALL"], "Next": "C"}]}, "C": {"Type": "Pass", "End": true}`),
			`{}`, outcome{err: ErrorRuntime}},
		{"Succeed", def(`"A": {"Type": "Pass", "Next": "S"}, "S": {"Type": "Succeed", "InputPath": "$.a", "OutputPath": "$.b"}`),
			`{"a": {"b": 2}}`, outcome{output: `2`}},
		{"Fail", def(`"A": {"Type": "Fail", "Error": "MyError", "Cause": "mine"}`), `{}`, outcome{err: "MyError"}},
		{"Fail ErrorPath", def(`"A": {"Type": "Fail", "ErrorPath": "$.e", "CausePath": "States.Format('code {}', $.c)"}`),
			`{"e": "Custom", "c": 7}`, outcome{err: "Custom"}},
		{"TimeoutSecondsPath not a number", def(`"A": {"Type": "Task", "Resource": "echo", "TimeoutSecondsPath": "$.t", "End": true}`),
			`{"t": "x"}`, outcome{err: ErrorRuntime}},
		{"Parallel", def(`"A": {"Type": "Parallel", "End": true, "Parameters": {"v.$": "$.v"}, "ResultSelector": {"both.$": "$"}, "Branches": [
			{"StartAt": "B1", "States": {"B1": {"Type": "Pass", "InputPath": "$.v", "End": true}}},
			{"StartAt": "B2", "States": {"B2": {"Type": "Task", "Resource": "echo", "End": true}}}]}`),
			`{"v": 3}`, outcome{output: `{"both": [3, {"v": 3}]}`}},
		{"Parallel failing branch", def(`"A": {"Type": "Parallel", "End": true, "Branches": [
			{"StartAt": "B1", "States": {"B1": {"Type": "Pass", "End": true}}},
			{"StartAt": "B2", "States": {"B2": {"Type": "Task", "Resource": "boom", "End": true}}}]}`),
			`{}`, outcome{err: "Boom"}},
		{"Parallel failing branch caught", def(`"A": {"Type": "Parallel", "Next": "Z", "Branches": [
			{"StartAt": "B2", "States": {"B2": {"Type": "Fail", "Error": "BranchErr", "Cause": "c"}}}],
			"Catch": [{"ErrorEquals": ["BranchErr"], "ResultPath": "$.err", "Next": "Z"}]}, "Z": {"Type": "Succeed"}`),
			`{"keep": 1}`, outcome{output: `{"keep": 1, "err": {"Error": "BranchErr", "Cause": "c"}}`}},
		{"spec Map", specExamples["map"], `{"ship-date": "2016-03-14T01:59:00Z", "detail": {"delivery-partner": "UQS",
			"shipped": [{"prod": "R31", "dest-code": 9511}, {"prod": "S39", "dest-code": 9833}]}}`,
			outcome{output: `{"ship-date": "2016-03-14T01:59:00Z", "detail": {"delivery-partner": "UQS", "shipped": [
			{"parcel": {"prod": "R31", "dest-code": 9511}, "courier": "UQS"},
			{"parcel": {"prod": "S39", "dest-code": 9833}, "courier": "UQS"}]}}`}},
		{"Map index and legacy Parameters", def(`"A": {"Type": "Map", "End": true, "ItemsPath": "$.xs",
			"Parameters": {"i.$": "$$.Map.Item.Index", "v.$": "$$.Map.Item.Value", "k.$": "$.k"},
			"Iterator": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}}`),
			`{"xs": ["a", "b"], "k": 1}`, outcome{output: `[{"i": 0, "v": "a", "k": 1}, {"i": 1, "v": "b", "k": 1}]`}},
		{"Map empty", def(`"A": {"Type": "Map", "End": true, "ResultPath": "$.out",
			"ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Task", "Resource": "boom", "End": true}}}}`),
			`[]`, outcome{err: ErrorResultPathMatchFailure}},
		{"Map empty items", def(`"A": {"Type": "Map", "End": true, "ItemsPath": "$.xs", "ResultPath": "$.out",
			"ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Task", "Resource": "boom", "End": true}}}}`),
			`{"xs": []}`, outcome{output: `{"xs": [], "out": []}`}},
		{"Map items not array", def(`"A": {"Type": "Map", "End": true, "ItemsPath": "$.xs",
			"ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}}`),
			`{"xs": 3}`, outcome{err: ErrorRuntime}},
		{"Map failing item", def(`"A": {"Type": "Map", "End": true,
			"ItemProcessor": {"StartAt": "C", "States": {
			  "C": {"Type": "Choice", "Choices": [{"Variable": "$", "NumericEquals": 2, "Next": "F"}], "Default": "P"},
			  "F": {"Type": "Fail", "Error": "Two"}, "P": {"Type": "Pass", "End": true}}}}`),
			`[1, 2, 3]`, outcome{err: "Two"}},
		{"Map tolerated count", def(`"A": {"Type": "Map", "End": true, "ToleratedFailureCount": 1,
			"ItemProcessor": {"StartAt": "C", "States": {
			  "C": {"Type": "Choice", "Choices": [{"Variable": "$", "NumericEquals": 2, "Next": "F"}], "Default": "P"},
			  "F": {"Type": "Fail", "Error": "Two", "Cause": "two"}, "P": {"Type": "Pass", "End": true}}}}`),
			`[1, 2, 3]`, outcome{output: `[1, {"Error": "Two", "Cause": "two"}, 3]`}},
		{"Map tolerated count exceeded", def(`"A": {"Type": "Map", "End": true, "ToleratedFailureCountPath": "$.n", "ItemsPath": "$.xs",
			"ItemProcessor": {"StartAt": "F", "States": {"F": {"Type": "Fail", "Error": "E"}}}}`),
			`{"n": 1, "xs": [1, 2, 3]}`, outcome{err: ErrorExceedToleratedFailureThreshold}},
		{"Map tolerated percentage", def(`"A": {"Type": "Map", "End": true, "ToleratedFailurePercentage": 50,
			"ItemProcessor": {"StartAt": "C", "States": {
			  "C": {"Type": "Choice", "Choices": [{"Variable": "$", "NumericLessThan": 3, "Next": "F"}], "Default": "P"},
			  "F": {"Type": "Fail", "Error": "Small"}, "P": {"Type": "Pass", "End": true}}}}`),
			`[1, 2, 3, 4]`, outcome{output: `[{"Error": "Small", "Cause": ""}, {"Error": "Small", "Cause": ""}, 3, 4]`}},
		{"Map tolerated percentage exceeded", def(`"A": {"Type": "Map", "End": true, "ToleratedFailurePercentagePath": "$.p", "ItemsPath": "$.xs",
			"ItemProcessor": {"StartAt": "C", "States": {
			  "C": {"Type": "Choice", "Choices": [{"Variable": "$", "NumericLessThan": 3, "Next": "F"}], "Default": "P"},
			  "F": {"Type": "Fail", "Error": "Small"}, "P": {"Type": "Pass", "End": true}}}}`),
			`{"p": 40, "xs": [1, 2, 3, 4]}`, outcome{err: ErrorExceedToleratedFailureThreshold}},
		{"NoChoiceMatched", def(`"A": {"Type": "Choice", "Choices": [{"Variable": "$.x", "NumericEquals": 1, "Next": "Z"}]}, "Z": {"Type": "Succeed"}`),
			`{"x": 2}`, outcome{err: ErrorNoChoiceMatched}},
		{"Choice Default and OutputPath", def(`"A": {"Type": "Choice", "InputPath": "$.in", "OutputPath": "$.x", "Choices": [{"Variable": "$.x", "NumericEquals": 1, "Next": "Y"}], "Default": "Z"},
			"Y": {"Type": "Fail", "Error": "Y"}, "Z": {"Type": "Succeed"}`),
			`{"in": {"x": 2}}`, outcome{output: `2`}},
		{"Choice missing variable is Runtime", def(`"A": {"Type": "Choice", "Choices": [{"Variable": "$.x", "NumericEquals": 1, "Next": "Z"}], "Default": "Z"}, "Z": {"Type": "Succeed"}`),
			`{}`, outcome{err: ErrorRuntime}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRunner(t, tasks)
			x := r.run(tt.def, tt.input)
			tt.want.check(t, x)
		})
	}
}

func TestStartAndStep(t *testing.T) {
	m := mustParse(t, def(`"A": {"Type": "Pass", "Next": "B"}, "B": {"Type": "Task", "Resource": "f", "TimeoutSeconds": 30, "HeartbeatSeconds": 10, "End": true}`))
	env := Env{Now: t0}
	x := m.Start(nil, env)
	if x.Status != StatusRunning || x.State != "A" || string(x.StateInput) != `{}` || x.Attempt != 1 ||
		len(x.History) != 1 || x.History[0].Exited != nil || x.Transitions != 1 {
		t.Fatalf("Start = %+v", x)
	}
	if !m.Step(x, env) {
		t.Fatal("Step did nothing")
	}
	want := &Work{Kind: WorkTask, Resource: "function:f", Input: json.RawMessage(`{}`), Timeout: 30 * time.Second, Heartbeat: 10 * time.Second}
	if x.State != "B" || !reflect.DeepEqual(x.Work, want) {
		t.Fatalf("after Step: state %s work %+v", x.State, x.Work)
	}
	if m.Step(x, env) {
		t.Error("Step with Work pending changed x")
	}
	env.Now = t0.Add(time.Second)
	m.Complete(x, Result{Output: json.RawMessage(`{"done":1}`)}, env)
	if x.Status != StatusSucceeded || string(x.Output) != `{"done":1}` || x.State != "" {
		t.Fatalf("after Complete: %+v", x)
	}
	b := x.History[1]
	if b.Name != "B" || b.Type != TypeTask || string(b.Input) != `{}` || string(b.Output) != `{"done":1}` ||
		!b.Entered.Equal(t0) || b.Exited == nil || !b.Exited.Equal(env.Now) || b.Attempts != 1 || b.Next != "" {
		t.Errorf("event = %+v", b)
	}
	if a := x.History[0]; a.Next != "B" || a.Exited == nil {
		t.Errorf("event = %+v", a)
	}
	// A finished execution does not move.
	if m.Step(x, env) {
		t.Error("Step on a finished execution changed it")
	}
}

func TestChoiceOperators(t *testing.T) {
	input := `{"s": "hello", "s2": "world", "n": 5, "n2": 5.0, "big": 10, "b": true, "f": false, "z": null,
		"t": "2024-01-01T00:00:00Z", "t2": "2024-01-02T00:00:00+00:00", "star": "a*b", "list": [1, 2]}`
	tests := []struct {
		rule string
		want bool
	}{
		{`"Variable": "$.s", "StringEquals": "hello"`, true},
		{`"Variable": "$.s", "StringEquals": "Hello"`, false},
		{`"Variable": "$.n", "StringEquals": "5"`, false}, // type mismatch
		{`"Variable": "$.s", "StringLessThan": "i"`, true},
		{`"Variable": "$.s", "StringLessThan": "hello"`, false},
		{`"Variable": "$.s", "StringGreaterThan": "a"`, true},
		{`"Variable": "$.s", "StringGreaterThan": "z"`, false},
		{`"Variable": "$.s", "StringLessThanEquals": "hello"`, true},
		{`"Variable": "$.s", "StringLessThanEquals": "a"`, false},
		{`"Variable": "$.s", "StringGreaterThanEquals": "hello"`, true},
		{`"Variable": "$.s", "StringGreaterThanEquals": "z"`, false},
		{`"Variable": "$.s", "StringEqualsPath": "$.s"`, true},
		{`"Variable": "$.s", "StringEqualsPath": "$.s2"`, false},
		{`"Variable": "$.s", "StringLessThanPath": "$.s2"`, true},
		{`"Variable": "$.s", "StringGreaterThanPath": "$.s2"`, false},
		{`"Variable": "$.s", "StringLessThanEqualsPath": "$.s2"`, true},
		{`"Variable": "$.s", "StringGreaterThanEqualsPath": "$.s2"`, false},
		{`"Variable": "$.s", "StringEqualsPath": "$.n"`, false}, // type mismatch
		{`"Variable": "$.s", "StringMatches": "he*o"`, true},
		{`"Variable": "$.s", "StringMatches": "*ll*"`, true},
		{`"Variable": "$.s", "StringMatches": "*"`, true},
		{`"Variable": "$.s", "StringMatches": "h*x"`, false},
		{`"Variable": "$.s", "StringMatches": "hello*"`, true},
		{`"Variable": "$.s", "StringMatches": "hell"`, false},
		{`"Variable": "$.star", "StringMatches": "a\\*b"`, true},
		{`"Variable": "$.s", "StringMatches": "h\\*o"`, false},
		{`"Variable": "$.n", "StringMatches": "*"`, false},
		{`"Variable": "$.n", "NumericEquals": 5`, true},
		{`"Variable": "$.n", "NumericEquals": 5.0`, true},
		{`"Variable": "$.n", "NumericEquals": 6`, false},
		{`"Variable": "$.s", "NumericEquals": 5`, false}, // type mismatch
		{`"Variable": "$.n", "NumericLessThan": 6`, true},
		{`"Variable": "$.n", "NumericLessThan": 5`, false},
		{`"Variable": "$.n", "NumericGreaterThan": 4.5`, true},
		{`"Variable": "$.n", "NumericGreaterThan": 5`, false},
		{`"Variable": "$.n", "NumericLessThanEquals": 5`, true},
		{`"Variable": "$.n", "NumericLessThanEquals": 4`, false},
		{`"Variable": "$.n", "NumericGreaterThanEquals": 5`, true},
		{`"Variable": "$.n", "NumericGreaterThanEquals": 6`, false},
		{`"Variable": "$.n", "NumericEqualsPath": "$.n2"`, true},
		{`"Variable": "$.n", "NumericEqualsPath": "$.big"`, false},
		{`"Variable": "$.n", "NumericLessThanPath": "$.big"`, true},
		{`"Variable": "$.n", "NumericGreaterThanPath": "$.big"`, false},
		{`"Variable": "$.n", "NumericLessThanEqualsPath": "$.n2"`, true},
		{`"Variable": "$.big", "NumericGreaterThanEqualsPath": "$.n"`, true},
		{`"Variable": "$.n", "NumericEqualsPath": "$.s"`, false}, // type mismatch
		{`"Variable": "$.b", "BooleanEquals": true`, true},
		{`"Variable": "$.b", "BooleanEquals": false`, false},
		{`"Variable": "$.s", "BooleanEquals": true`, false},
		{`"Variable": "$.b", "BooleanEqualsPath": "$.f"`, false},
		{`"Variable": "$.f", "BooleanEqualsPath": "$.f"`, true},
		{`"Variable": "$.t", "TimestampEquals": "2024-01-01T00:00:00Z"`, true},
		{`"Variable": "$.t", "TimestampEquals": "2024-01-01T01:00:00+01:00"`, true},
		{`"Variable": "$.t", "TimestampEquals": "2024-01-01T00:00:01Z"`, false},
		{`"Variable": "$.s", "TimestampEquals": "2024-01-01T00:00:00Z"`, false}, // not a timestamp
		{`"Variable": "$.t", "TimestampLessThan": "2024-01-01T00:00:01Z"`, true},
		{`"Variable": "$.t", "TimestampLessThan": "2024-01-01T00:00:00Z"`, false},
		{`"Variable": "$.t", "TimestampGreaterThan": "2023-12-31T23:59:59Z"`, true},
		{`"Variable": "$.t", "TimestampGreaterThan": "2024-01-01T00:00:00Z"`, false},
		{`"Variable": "$.t", "TimestampLessThanEquals": "2024-01-01T00:00:00Z"`, true},
		{`"Variable": "$.t", "TimestampLessThanEquals": "2023-01-01T00:00:00Z"`, false},
		{`"Variable": "$.t", "TimestampGreaterThanEquals": "2024-01-01T00:00:00Z"`, true},
		{`"Variable": "$.t", "TimestampGreaterThanEquals": "2025-01-01T00:00:00Z"`, false},
		{`"Variable": "$.t", "TimestampEqualsPath": "$.t2"`, false},
		{`"Variable": "$.t", "TimestampLessThanPath": "$.t2"`, true},
		{`"Variable": "$.t", "TimestampGreaterThanPath": "$.t2"`, false},
		{`"Variable": "$.t", "TimestampLessThanEqualsPath": "$.t"`, true},
		{`"Variable": "$.t2", "TimestampGreaterThanEqualsPath": "$.t"`, true},
		{`"Variable": "$.t", "TimestampLessThanPath": "$.n"`, false}, // type mismatch
		{`"Variable": "$.z", "IsNull": true`, true},
		{`"Variable": "$.s", "IsNull": true`, false},
		{`"Variable": "$.s", "IsNull": false`, true},
		{`"Variable": "$.s", "IsPresent": true`, true},
		{`"Variable": "$.nope", "IsPresent": true`, false},
		{`"Variable": "$.nope", "IsPresent": false`, true},
		{`"Variable": "$.z", "IsPresent": true`, true},
		{`"Variable": "$.list[5]", "IsPresent": true`, false},
		{`"Variable": "$.list[?(@ > 5)]", "IsPresent": true`, false},
		{`"Variable": "$.n", "IsNumeric": true`, true},
		{`"Variable": "$.s", "IsNumeric": true`, false},
		{`"Variable": "$.s", "IsString": true`, true},
		{`"Variable": "$.n", "IsString": true`, false},
		{`"Variable": "$.b", "IsBoolean": true`, true},
		{`"Variable": "$.z", "IsBoolean": true`, false},
		{`"Variable": "$.t", "IsTimestamp": true`, true},
		{`"Variable": "$.s", "IsTimestamp": true`, false},
		{`"Variable": "$.n", "IsTimestamp": false`, true},
		{`"Variable": "$$.State.Name", "StringEquals": "A"`, true},
		{`"And": [{"Variable": "$.n", "NumericEquals": 5}, {"Variable": "$.b", "BooleanEquals": true}]`, true},
		{`"And": [{"Variable": "$.n", "NumericEquals": 5}, {"Variable": "$.b", "BooleanEquals": false}]`, false},
		{`"Or": [{"Variable": "$.n", "NumericEquals": 4}, {"Variable": "$.b", "BooleanEquals": true}]`, true},
		{`"Or": [{"Variable": "$.n", "NumericEquals": 4}, {"Variable": "$.b", "BooleanEquals": false}]`, false},
		{`"Not": {"Variable": "$.n", "NumericEquals": 4}`, true},
		{`"Not": {"Variable": "$.n", "NumericEquals": 5}`, false},
		{`"Not": {"And": [{"Variable": "$.nope", "IsPresent": false}, {"Or": [{"Not": {"Variable": "$.s", "StringEquals": "x"}}]}]}`, false},
		// A missing field after a false And is never looked at.
		{`"And": [{"Variable": "$.nope", "IsPresent": true}, {"Variable": "$.nope", "NumericEquals": 1}]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			d := def(`"A": {"Type": "Choice", "Choices": [{` + tt.rule + `, "Next": "Yes"}], "Default": "No"},
				"Yes": {"Type": "Succeed"}, "No": {"Type": "Succeed"}`)
			x := newRunner(t, nil).run(d, input)
			if x.Status != StatusSucceeded {
				t.Fatalf("%s %s: %s", x.Status, x.Error, x.Cause)
			}
			got := path(x)[1] == "Yes"
			if got != tt.want {
				t.Errorf("rule matched = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestChoiceFirstMatchAndLoop(t *testing.T) {
	// A counter loop: Pass increments with an intrinsic, Choice loops.
	d := def(`"A": {"Type": "Pass", "Parameters": {"i.$": "States.MathAdd($.i, 1)"}, "Next": "C"},
		"C": {"Type": "Choice", "Choices": [
			{"Variable": "$.i", "NumericLessThan": 3, "Next": "A"},
			{"Variable": "$.i", "NumericLessThan": 100, "Next": "Done"},
			{"Variable": "$.i", "NumericGreaterThan": 0, "Next": "Wrong"}]},
		"Done": {"Type": "Succeed"}, "Wrong": {"Type": "Fail", "Error": "Wrong"}`)
	x := newRunner(t, nil).run(d, `{"i": 0}`)
	outcome{output: `{"i": 3}`}.check(t, x)
	want := []string{"A", "C", "A", "C", "A", "C", "Done"}
	if got := path(x); !reflect.DeepEqual(got, want) {
		t.Errorf("path = %v, want %v", got, want)
	}
	if x.Transitions != 7 {
		t.Errorf("Transitions = %d", x.Transitions)
	}
}

func TestStepCapAndHistory(t *testing.T) {
	const n = 1500 // loops of 2 states each
	d := def(`"A": {"Type": "Pass", "Parameters": {"i.$": "States.MathAdd($.i, 1)"}, "Next": "C"},
		"C": {"Type": "Choice", "Choices": [{"Variable": "$.i", "NumericLessThan": 1500, "Next": "A"}], "Default": "Done"},
		"Done": {"Type": "Succeed"}`)
	m := mustParse(t, d)
	env := Env{Now: t0}
	x := m.Start(json.RawMessage(`{"i": 0}`), env)
	calls := 0
	for x.Status == StatusRunning {
		if !m.Step(x, env) {
			t.Fatal("Step made no progress")
		}
		calls++
		if calls == 1 && (x.Status != StatusRunning || x.Transitions < maxSteps || x.Transitions > maxSteps+2) {
			t.Fatalf("after one Step: %s, %d transitions", x.Status, x.Transitions)
		}
		if calls > 10 {
			t.Fatal("too many Steps")
		}
	}
	outcome{output: `{"i": 1500}`}.check(t, x)
	if calls != 4 {
		t.Errorf("Step calls = %d, want 4", calls)
	}
	if x.Transitions != 2*n+1 {
		t.Errorf("Transitions = %d, want %d", x.Transitions, 2*n+1)
	}
	if len(x.History) != MaxHistory {
		t.Fatalf("History has %d events, want %d", len(x.History), MaxHistory)
	}
	if last := x.History[MaxHistory-1]; last.Name != "Done" || last.Exited == nil {
		t.Errorf("last event = %+v", last)
	}
	if e := x.History[MaxHistory-2]; e.Name != "C" || !strings.Contains(string(e.Output), "1500") {
		t.Errorf("event before last = %+v", e)
	}
}

func TestWait(t *testing.T) {
	tests := []struct {
		name  string
		state string
		input string
		wait  time.Duration
	}{
		{"Seconds", `"Seconds": 10`, `{}`, 10 * time.Second},
		{"Seconds zero", `"Seconds": 0`, `{}`, 0},
		{"Timestamp", `"Timestamp": "2024-05-01T13:00:00Z"`, `{}`, time.Hour},
		{"Timestamp past", `"Timestamp": "2020-01-01T00:00:00Z"`, `{}`, 0},
		{"SecondsPath", `"SecondsPath": "$.s"`, `{"s": 90}`, 90 * time.Second},
		{"TimestampPath", `"TimestampPath": "$.t"`, `{"t": "2024-05-01T12:00:30.5+00:00"}`, 30*time.Second + 500*time.Millisecond},
		{"TimestampPath past", `"TimestampPath": "$.t"`, `{"t": "2024-05-01T11:00:00Z"}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := def(`"A": {"Type": "Wait", ` + tt.state + `, "Next": "B"}, "B": {"Type": "Pass", "End": true}`)
			m := mustParse(t, d)
			env := Env{Now: t0}
			x := m.Start(json.RawMessage(tt.input), env)
			m.Step(x, env)
			if tt.wait == 0 {
				outcome{output: tt.input}.check(t, x)
				return
			}
			if x.Status != StatusRunning || x.State != "A" || x.WaitUntil == nil || !x.WaitUntil.Equal(t0.Add(tt.wait)) {
				t.Fatalf("after Step: state %s until %v, want %v", x.State, x.WaitUntil, t0.Add(tt.wait))
			}
			env.Now = t0.Add(tt.wait - time.Millisecond)
			if m.Step(x, env) {
				t.Error("Step before WaitUntil changed x")
			}
			env.Now = t0.Add(tt.wait)
			if !m.Step(x, env) {
				t.Error("Step at WaitUntil did nothing")
			}
			outcome{output: tt.input}.check(t, x)
			if a := x.History[0]; a.Exited == nil || !a.Exited.Equal(env.Now) || a.Next != "B" {
				t.Errorf("Wait event = %+v", a)
			}
		})
	}
	t.Run("bad SecondsPath", func(t *testing.T) {
		x := newRunner(t, nil).run(def(`"A": {"Type": "Wait", "SecondsPath": "$.s", "End": true}`), `{"s": -1}`)
		outcome{err: ErrorRuntime}.check(t, x)
	})
}

func TestRetry(t *testing.T) {
	t.Run("succeeds on the third attempt with backoff", func(t *testing.T) {
		r := newRunner(t, map[string]taskFunc{"function:f": failsThen(2, "Flaky", `{"ok": true}`)})
		x := r.run(def(`"A": {"Type": "Task", "Resource": "f", "End": true,
			"Retry": [{"ErrorEquals": ["Flaky"], "IntervalSeconds": 1, "BackoffRate": 2, "MaxAttempts": 3}]}`), `{}`)
		outcome{output: `{"ok": true}`}.check(t, x)
		ev := x.History[0]
		if ev.Attempts != 3 || len(ev.Retries) != 2 {
			t.Fatalf("event = %+v", ev)
		}
		if ev.Retries[0].Delay != time.Second || ev.Retries[1].Delay != 2*time.Second ||
			!ev.Retries[0].At.Equal(t0) || !ev.Retries[1].At.Equal(t0.Add(time.Second)) || ev.Retries[0].Error != "Flaky" {
			t.Errorf("retries = %+v", ev.Retries)
		}
		if !r.now.Equal(t0.Add(3 * time.Second)) {
			t.Errorf("clock = %v", r.now)
		}
	})
	t.Run("RetryCount in context", func(t *testing.T) {
		var seen []any
		f := func(in any, call int) Result {
			seen = append(seen, in.(map[string]any)["n"])
			if call < 3 {
				return Result{Error: "E"}
			}
			return Result{Output: json.RawMessage(`1`)}
		}
		r := newRunner(t, map[string]taskFunc{"function:f": f})
		x := r.run(def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Parameters": {"n.$": "$$.State.RetryCount"},
			"Retry": [{"ErrorEquals": ["States.ALL"]}]}`), `{}`)
		outcome{output: `1`}.check(t, x)
		if want := []any{json.Number("0"), json.Number("1"), json.Number("2")}; !reflect.DeepEqual(seen, want) {
			t.Errorf("RetryCount seen = %v, want %v", seen, want)
		}
	})
	t.Run("MaxDelaySeconds caps", func(t *testing.T) {
		r := newRunner(t, map[string]taskFunc{"function:f": failsThen(4, "E", `1`)})
		x := r.run(def(`"A": {"Type": "Task", "Resource": "f", "End": true,
			"Retry": [{"ErrorEquals": ["E"], "IntervalSeconds": 2, "BackoffRate": 3, "MaxAttempts": 5, "MaxDelaySeconds": 10}]}`), `{}`)
		outcome{output: `1`}.check(t, x)
		var got []time.Duration
		for _, rt := range x.History[0].Retries {
			got = append(got, rt.Delay)
		}
		want := []time.Duration{2 * time.Second, 6 * time.Second, 10 * time.Second, 10 * time.Second}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("delays = %v, want %v", got, want)
		}
	})
	t.Run("JitterStrategy FULL", func(t *testing.T) {
		r := newRunner(t, map[string]taskFunc{"function:f": failsThen(5, "E", `1`)})
		x := r.run(def(`"A": {"Type": "Task", "Resource": "f", "End": true,
			"Retry": [{"ErrorEquals": ["E"], "IntervalSeconds": 4, "MaxAttempts": 5, "JitterStrategy": "FULL"}]}`), `{}`)
		outcome{output: `1`}.check(t, x)
		rs := x.History[0].Retries
		if len(rs) != 5 {
			t.Fatalf("retries = %+v", rs)
		}
		same := true
		for i, rt := range rs {
			limit := 4 * time.Second << i
			if rt.Delay < 0 || rt.Delay > limit {
				t.Errorf("retry %d delay %v outside [0, %v]", i, rt.Delay, limit)
			}
			if rt.Delay != limit {
				same = false
			}
		}
		if same {
			t.Error("FULL jitter gave the full delay every time")
		}
	})
	t.Run("MaxAttempts 0 never retries", func(t *testing.T) {
		r := newRunner(t, map[string]taskFunc{"function:f": failsThen(1, "E", `1`)})
		x := r.run(def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Retry": [{"ErrorEquals": ["E"], "MaxAttempts": 0}]}`), `{}`)
		outcome{err: "E"}.check(t, x)
		if r.calls["function:f"] != 1 {
			t.Errorf("calls = %d", r.calls["function:f"])
		}
	})
	t.Run("first matching retrier decides, exhausted falls to Catch", func(t *testing.T) {
		r := newRunner(t, map[string]taskFunc{"function:f": fails("E", "always")})
		x := r.run(def(`"A": {"Type": "Task", "Resource": "f", "Next": "Z",
			"Retry": [{"ErrorEquals": ["Other"], "MaxAttempts": 9},
			          {"ErrorEquals": ["E"], "MaxAttempts": 2, "IntervalSeconds": 5},
			          {"ErrorEquals": ["States.ALL"], "MaxAttempts": 9}],
			"Catch": [{"ErrorEquals": ["E"], "ResultPath": "$.error", "Next": "H"}]},
			"H": {"Type": "Pass", "End": true}, "Z": {"Type": "Succeed"}`), `{"in": 1}`)
		outcome{output: `{"in": 1, "error": {"Error": "E", "Cause": "always"}}`}.check(t, x)
		if r.calls["function:f"] != 3 {
			t.Errorf("calls = %d, want 3 (1 + 2 retries; States.ALL not tried)", r.calls["function:f"])
		}
		ev := x.History[0]
		if ev.Error != "E" || ev.Next != "H" || ev.Attempts != 3 || len(ev.Retries) != 2 || ev.Retries[1].Delay != 10*time.Second {
			t.Errorf("event = %+v", ev)
		}
	})
	t.Run("separate counters per retrier", func(t *testing.T) {
		seq := []string{"A", "B", "A", "B", "A"}
		f := func(_ any, call int) Result {
			if call <= len(seq) {
				return Result{Error: seq[call-1]}
			}
			return Result{Output: json.RawMessage(`"ok"`)}
		}
		r := newRunner(t, map[string]taskFunc{"function:f": f})
		x := r.run(def(`"A": {"Type": "Task", "Resource": "f", "End": true,
			"Retry": [{"ErrorEquals": ["A"], "MaxAttempts": 3}, {"ErrorEquals": ["B"], "MaxAttempts": 2}]}`), `{}`)
		outcome{output: `"ok"`}.check(t, x)
		if d := x.History[0].Retries[4].Delay; d != 4*time.Second {
			t.Errorf("third A retry delay = %v, want 4s", d)
		}
	})
	t.Run("ResultPathMatchFailure is retried", func(t *testing.T) {
		r := newRunner(t, map[string]taskFunc{"function:f": ok(`1`)})
		x := r.run(def(`"A": {"Type": "Task", "Resource": "f", "End": true, "ResultPath": "$.a.b",
			"Retry": [{"ErrorEquals": ["States.ResultPathMatchFailure"], "MaxAttempts": 1}]}`), `{"a": 1}`)
		outcome{err: ErrorResultPathMatchFailure}.check(t, x)
		if r.calls["function:f"] != 2 {
			t.Errorf("calls = %d", r.calls["function:f"])
		}
	})
}

func TestCatch(t *testing.T) {
	tests := []struct {
		name    string
		err     string
		catch   string
		want    outcome
		handled string
	}{
		{"default ResultPath replaces input", "E", `[{"ErrorEquals": ["E"], "Next": "H"}]`,
			outcome{output: `{"Error": "E", "Cause": "cause"}`}, "H"},
		{"ResultPath", "E", `[{"ErrorEquals": ["E"], "ResultPath": "$.err", "Next": "H"}]`,
			outcome{output: `{"in": 1, "err": {"Error": "E", "Cause": "cause"}}`}, "H"},
		{"ResultPath null", "E", `[{"ErrorEquals": ["E"], "ResultPath": null, "Next": "H"}]`,
			outcome{output: `{"in": 1}`}, "H"},
		{"first matching catcher", "E", `[{"ErrorEquals": ["X"], "Next": "Z"}, {"ErrorEquals": ["Y", "E"], "Next": "H"}, {"ErrorEquals": ["States.ALL"], "Next": "Z"}]`,
			outcome{output: `{"Error": "E", "Cause": "cause"}`}, "H"},
		{"TaskFailed matches a custom error", "E", `[{"ErrorEquals": ["States.TaskFailed"], "Next": "H"}]`,
			outcome{output: `{"Error": "E", "Cause": "cause"}`}, "H"},
		{"TaskFailed does not match Timeout", ErrorTimeout, `[{"ErrorEquals": ["States.TaskFailed"], "Next": "H"}]`,
			outcome{err: ErrorTimeout}, ""},
		{"Timeout matches Timeout", ErrorTimeout, `[{"ErrorEquals": ["States.TaskFailed"], "Next": "Z"}, {"ErrorEquals": ["States.Timeout"], "Next": "H"}]`,
			outcome{output: `{"Error": "States.Timeout", "Cause": "cause"}`}, "H"},
		{"ALL matches Timeout", ErrorTimeout, `[{"ErrorEquals": ["States.ALL"], "Next": "H"}]`,
			outcome{output: `{"Error": "States.Timeout", "Cause": "cause"}`}, "H"},
		{"no match", "E", `[{"ErrorEquals": ["X"], "Next": "H"}]`, outcome{err: "E"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRunner(t, map[string]taskFunc{"function:f": fails(tt.err, "cause")})
			x := r.run(def(`"A": {"Type": "Task", "Resource": "f", "Next": "Z", "Catch": `+tt.catch+`},
				"H": {"Type": "Pass", "End": true}, "Z": {"Type": "Fail", "Error": "WrongWay"}`), `{"in": 1}`)
			tt.want.check(t, x)
			if tt.handled != "" && (x.History[0].Next != tt.handled || x.History[0].Error != tt.err) {
				t.Errorf("event = %+v", x.History[0])
			}
			if tt.handled == "" && (x.History[0].Error != tt.err || x.History[0].Exited == nil) {
				t.Errorf("event = %+v", x.History[0])
			}
		})
	}
}

func TestMatchError(t *testing.T) {
	tests := []struct {
		pattern, err string
		want         bool
	}{
		{ErrorAll, "Custom", true},
		{ErrorAll, ErrorTimeout, true},
		{ErrorAll, ErrorRuntime, false},
		{ErrorRuntime, ErrorRuntime, false},
		{ErrorTaskFailed, "Custom", true},
		{ErrorTaskFailed, ErrorHeartbeatTimeout, true},
		{ErrorTaskFailed, ErrorTimeout, false},
		{ErrorTaskFailed, ErrorRuntime, false},
		{ErrorTimeout, ErrorTimeout, true},
		{"Custom", "Custom", true},
		{"Custom", "custom", false},
	}
	for _, tt := range tests {
		if got := MatchError(tt.pattern, tt.err); got != tt.want {
			t.Errorf("MatchError(%q, %q) = %v, want %v", tt.pattern, tt.err, got, tt.want)
		}
	}
}

func TestFail(t *testing.T) {
	tests := []struct {
		name, state, input, err, cause string
	}{
		{"static", `"Error": "E", "Cause": "C"`, `{}`, "E", "C"},
		{"none", ``, `{}`, "", ""},
		{"paths", `"ErrorPath": "$.e", "CausePath": "$.c"`, `{"e": "PathErr", "c": "because"}`, "PathErr", "because"},
		{"intrinsic", `"Error": "E", "CausePath": "States.Format('{} items', $.n)"`, `{"n": 3}`, "E", "3 items"},
		{"context", `"ErrorPath": "$$.State.Name"`, `{}`, "A", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := `"A": {"Type": "Fail"`
			if tt.state != "" {
				st += ", " + tt.state
			}
			x := newRunner(t, nil).run(def(st+`}`), tt.input)
			if x.Status != StatusFailed || x.Error != tt.err || x.Cause != tt.cause {
				t.Errorf("got %s %q %q, want Failed %q %q", x.Status, x.Error, x.Cause, tt.err, tt.cause)
			}
			if ev := x.History[0]; ev.Exited == nil || ev.Error != tt.err {
				t.Errorf("event = %+v", ev)
			}
		})
	}
}

func TestTaskTimeoutPaths(t *testing.T) {
	r := newRunner(t, map[string]taskFunc{"function:f": echo})
	x := r.run(def(`"A": {"Type": "Task", "Resource": "f", "End": true, "InputPath": "$.in",
		"TimeoutSecondsPath": "$.t", "HeartbeatSecondsPath": "$.h"}`), `{"in": {"t": 60, "h": 5}}`)
	outcome{output: `{"t": 60, "h": 5}`}.check(t, x)
	if w := r.works[0]; w.Timeout != time.Minute || w.Heartbeat != 5*time.Second || w.Resource != "function:f" {
		t.Errorf("work = %+v", w)
	}
}

func TestMapWork(t *testing.T) {
	r := newRunner(t, map[string]taskFunc{"function:f": echo})
	x := r.run(def(`"A": {"Type": "Map", "MaxConcurrencyPath": "$.m", "ItemsPath": "$.xs", "Next": "B",
		"ItemSelector": {"x.$": "$$.Map.Item.Value"},
		"ItemProcessor": {"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "f", "End": true}}}},
		"B": {"Type": "Map", "MaxConcurrency": 2, "End": true,
		"ItemProcessor": {"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "f", "End": true}}}}`),
		`{"m": 3, "xs": [1, 2, 3, 4]}`)
	outcome{output: `[{"x": 1}, {"x": 2}, {"x": 3}, {"x": 4}]`}.check(t, x)
	maps := 0
	for _, w := range r.works {
		if w.Kind != WorkMap {
			continue
		}
		maps++
		if len(w.Children) != 4 {
			t.Errorf("map children = %d", len(w.Children))
		}
		if want := []int{3, 2}[maps-1]; w.MaxConcurrency != want {
			t.Errorf("map %d MaxConcurrency = %d, want %d", maps, w.MaxConcurrency, want)
		}
	}
	if maps != 2 || r.calls["function:f"] != 8 {
		t.Errorf("maps %d calls %d", maps, r.calls["function:f"])
	}
}

func TestMapShouldStop(t *testing.T) {
	m := mustParse(t, def(`"A": {"Type": "Map", "End": true, "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}}`))
	count, pct := 2, 25.0
	tests := []struct {
		name          string
		work          Work
		failed, total int
		want          bool
	}{
		{"no tolerance, none failed", Work{}, 0, 10, false},
		{"no tolerance, one failed", Work{}, 1, 10, true},
		{"count not exceeded", Work{ToleratedFailureCount: &count}, 2, 10, false},
		{"count exceeded", Work{ToleratedFailureCount: &count}, 3, 10, true},
		{"percentage not exceeded", Work{ToleratedFailurePercentage: &pct}, 1, 4, false},
		{"percentage exceeded", Work{ToleratedFailurePercentage: &pct}, 2, 4, true},
		{"either exceeded", Work{ToleratedFailureCount: &count, ToleratedFailurePercentage: &pct}, 2, 4, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := &Execution{Status: StatusRunning, State: "A", Work: &tt.work}
			if got := m.MapShouldStop(x, tt.failed, tt.total); got != tt.want {
				t.Errorf("MapShouldStop = %v, want %v", got, tt.want)
			}
		})
	}
	// Children that did not run are null in the output.
	x := &Execution{Status: StatusRunning, State: "A", Work: &Work{ToleratedFailureCount: &count}}
	res := m.MapResult(x, []*Result{{Output: json.RawMessage(`1`)}, nil, {Error: "E", Cause: "c"}})
	if res.Error != "" || !sameJSON(t, res.Output, `[1, null, {"Error": "E", "Cause": "c"}]`) {
		t.Errorf("MapResult = %+v (%s)", res, res.Output)
	}
}

// The caller may record Work without the tolerance: it is resolved again
// from the state and its input.
func TestMapToleranceWithoutWorkFields(t *testing.T) {
	m := mustParse(t,
		`{"StartAt": "A", "States": {"A": {"Type": "Map", "Next": "B", "InputPath": "$.in", "ToleratedFailureCountPath": "$.n",
		"ItemsPath": "$.xs", "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}},
		"B": {"Type": "Map", "End": true, "ToleratedFailurePercentage": 50,
		"ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}}}}`)
	x := &Execution{Status: StatusRunning, State: "A", StateInput: json.RawMessage(`{"in": {"n": 2, "xs": [1, 2, 3, 4]}}`), Work: &Work{Kind: WorkMap}}
	if m.MapShouldStop(x, 2, 4) || !m.MapShouldStop(x, 3, 4) {
		t.Error("count from ToleratedFailureCountPath not applied")
	}
	x = &Execution{Status: StatusRunning, State: "B", StateInput: json.RawMessage(`[1, 2, 3, 4]`), Work: &Work{Kind: WorkMap}}
	if m.MapShouldStop(x, 2, 4) || !m.MapShouldStop(x, 3, 4) {
		t.Error("ToleratedFailurePercentage not applied")
	}
	if res := m.MapResult(x, []*Result{{Error: "E"}, {Output: json.RawMessage(`2`)}}); res.Error != "" {
		t.Errorf("MapResult = %+v", res)
	}
}
