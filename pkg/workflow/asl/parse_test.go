package asl

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Definitions from the States Language specification (Resources changed
// from ARNs to minik8s names).
var specExamples = map[string]string{
	"hello world": `{
	  "Comment": "A simple minimal example of the States language",
	  "StartAt": "Hello World",
	  "States": {
	    "Hello World": {"Type": "Task", "Resource": "function:hello-world", "End": true}
	  }
	}`,
	"choice": `{
	  "StartAt": "ChoiceStateX",
	  "States": {
	    "ChoiceStateX": {
	      "Type": "Choice",
	      "Choices": [
	        {"Not": {"Variable": "$.type", "StringEquals": "Private"}, "Next": "Public"},
	        {"And": [
	            {"Variable": "$.value", "IsPresent": true},
	            {"Variable": "$.value", "IsNumeric": true},
	            {"Variable": "$.value", "NumericGreaterThanEquals": 20},
	            {"Variable": "$.value", "NumericLessThan": 30}
	          ],
	          "Next": "ValueInTwenties"},
	        {"Variable": "$.rating", "NumericGreaterThanPath": "$.auditThreshold", "Next": "StartAudit"}
	      ],
	      "Default": "RecordEvent"
	    },
	    "Public": {"Type": "Pass", "End": true},
	    "ValueInTwenties": {"Type": "Pass", "End": true},
	    "StartAudit": {"Type": "Pass", "End": true},
	    "RecordEvent": {"Type": "Pass", "End": true}
	  }
	}`,
	"parallel": `{
	  "StartAt": "LookupCustomerInfo",
	  "States": {
	    "LookupCustomerInfo": {
	      "Type": "Parallel",
	      "Branches": [
	        {"StartAt": "LookupAddress", "States": {"LookupAddress": {"Type": "Task", "Resource": "function:address-finder", "End": true}}},
	        {"StartAt": "LookupPhone", "States": {"LookupPhone": {"Type": "Task", "Resource": "phone-finder", "End": true}}}
	      ],
	      "Next": "NextState"
	    },
	    "NextState": {"Type": "Succeed"}
	  }
	}`,
	"map": `{
	  "StartAt": "Validate-All",
	  "States": {
	    "Validate-All": {
	      "Type": "Map",
	      "InputPath": "$.detail",
	      "ItemsPath": "$.shipped",
	      "MaxConcurrency": 0,
	      "ItemSelector": {"parcel.$": "$$.Map.Item.Value", "courier.$": "$.delivery-partner"},
	      "ItemProcessor": {
	        "ProcessorConfig": {"Mode": "INLINE"},
	        "StartAt": "Validate",
	        "States": {"Validate": {"Type": "Task", "Resource": "workflow:ship-val", "End": true}}
	      },
	      "ResultPath": "$.detail.shipped",
	      "End": true
	    }
	  }
	}`,
	"legacy map": `{
	  "StartAt": "M",
	  "States": {
	    "M": {
	      "Type": "Map",
	      "Parameters": {"v.$": "$$.Map.Item.Value"},
	      "Iterator": {"StartAt": "V", "States": {"V": {"Type": "Pass", "End": true}}},
	      "End": true
	    }
	  }
	}`,
	"retry and catch": `{
	  "StartAt": "T",
	  "States": {
	    "T": {
	      "Type": "Task",
	      "Resource": "function:t",
	      "Retry": [
	        {"ErrorEquals": ["States.Timeout"], "IntervalSeconds": 3, "MaxAttempts": 2, "BackoffRate": 1.5},
	        {"ErrorEquals": ["States.Permissions"], "MaxAttempts": 0},
	        {"ErrorEquals": ["States.ALL"], "MaxAttempts": 5, "MaxDelaySeconds": 10, "JitterStrategy": "FULL"}
	      ],
	      "Catch": [
	        {"ErrorEquals": ["java.lang.Exception"], "ResultPath": "$.error-info", "Next": "RecoveryState"},
	        {"ErrorEquals": ["States.ALL"], "Next": "EndMachine"}
	      ],
	      "Next": "EndMachine"
	    },
	    "RecoveryState": {"Type": "Pass", "Next": "EndMachine"},
	    "EndMachine": {"Type": "Succeed"}
	  }
	}`,
	"input and output": `{
	  "StartAt": "X",
	  "Version": "1.0",
	  "TimeoutSeconds": 60,
	  "QueryLanguage": "JSONPath",
	  "States": {
	    "X": {
	      "Type": "Task",
	      "Resource": "function:x",
	      "Next": "W",
	      "InputPath": null,
	      "Parameters": {
	        "flagged": true,
	        "parts": {"first.$": "$.vals[0]", "last3.$": "$.vals[-3:]"},
	        "weekday.$": "$$.DayOfWeek",
	        "formattedOutput.$": "States.Format('Today is {}', $$.DayOfWeek)"
	      },
	      "ResultSelector": {"ClusterId.$": "$.output.ClusterId"},
	      "ResultPath": null,
	      "OutputPath": "$.a",
	      "TimeoutSecondsPath": "$.timeout",
	      "HeartbeatSeconds": 10
	    },
	    "W": {"Type": "Wait", "Timestamp": "2016-03-14T01:59:00Z", "Next": "W2"},
	    "W2": {"Type": "Wait", "SecondsPath": "$.s", "Next": "F"},
	    "F": {"Type": "Fail", "ErrorPath": "$.e", "CausePath": "States.Format('bad {}', $.c)"}
	  }
	}`,
}

func TestParseValid(t *testing.T) {
	for name, def := range specExamples {
		t.Run(name, func(t *testing.T) {
			m, errs := Parse([]byte(def), field.NewPath("spec", "definition"))
			if len(errs) > 0 {
				t.Fatalf("Parse: %v", errs.ToAggregate())
			}
			if m == nil || m.States[m.StartAt] == nil {
				t.Fatalf("Parse returned %+v", m)
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	m := mustParse(t, specExamples["retry and catch"])
	r := m.States["T"].Retry
	if len(r) != 3 || r[0].IntervalSeconds != 3 || r[0].MaxAttempts != 2 || r[0].BackoffRate != 1.5 ||
		r[1].IntervalSeconds != 1 || r[1].MaxAttempts != 0 || r[1].BackoffRate != 2 ||
		r[2].MaxDelaySeconds != 10 || r[2].JitterStrategy != JitterFull || r[0].JitterStrategy != JitterNone {
		t.Errorf("Retry = %+v", r)
	}
	c := m.States["T"].Catch
	if len(c) != 2 || c[0].ResultPath.Path != "$.error-info" || c[1].ResultPath.Path != "$" || c[1].Next != "EndMachine" {
		t.Errorf("Catch = %+v", c)
	}
	m = mustParse(t, specExamples["input and output"])
	x := m.States["X"]
	if !x.InputPath.Null || !x.ResultPath.Null || x.OutputPath.Null || x.OutputPath.Path != "$.a" {
		t.Errorf("paths: %+v %+v %+v", x.InputPath, x.ResultPath, x.OutputPath)
	}
	if m.Version != "1.0" || m.TimeoutSeconds != 60 {
		t.Errorf("Version %q TimeoutSeconds %d", m.Version, m.TimeoutSeconds)
	}
	if p := m.States["W"]; p.InputPath.Null || p.InputPath.Path != "$" {
		t.Errorf("absent InputPath = %+v", p.InputPath)
	}
}

func TestResources(t *testing.T) {
	m := mustParse(t, `{
	  "StartAt": "A",
	  "States": {
	    "A": {"Type": "Task", "Resource": "zeta", "Next": "P"},
	    "P": {"Type": "Parallel", "Next": "M", "Branches": [
	      {"StartAt": "B", "States": {"B": {"Type": "Task", "Resource": "function:zeta", "End": true}}},
	      {"StartAt": "C", "States": {"C": {"Type": "Task", "Resource": "workflow:child", "End": true}}}
	    ]},
	    "M": {"Type": "Map", "End": true, "ItemProcessor": {"StartAt": "D", "States": {
	      "D": {"Type": "Task", "Resource": "alpha", "End": true}}}}
	  }
	}`)
	want := []string{"function:alpha", "function:zeta", "workflow:child"}
	if got := m.Resources(); !reflect.DeepEqual(got, want) {
		t.Errorf("Resources() = %v, want %v", got, want)
	}
}

// def builds a definition whose States are the given JSON members.
func def(states string) string {
	return `{"StartAt": "A", "States": {` + states + `}}`
}

func TestParseInvalid(t *testing.T) {
	okEnd := `"Z": {"Type": "Succeed"}`
	tests := []struct {
		name string
		def  string
		path string
		typ  field.ErrorType
		// detail is a substring of the error's detail, when set.
		detail string
	}{
		{"not json", `{`, "spec", field.ErrorTypeInvalid, "JSON"},
		{"not an object", `[]`, "spec", field.ErrorTypeInvalid, ""},
		{"no StartAt", `{"States": {"A": {"Type": "Succeed"}}}`, "spec.StartAt", field.ErrorTypeRequired, ""},
		{"StartAt not a state", `{"StartAt": "B", "States": {"A": {"Type": "Succeed"}}}`, "spec.StartAt", field.ErrorTypeInvalid, ""},
		{"no States", `{"StartAt": "A"}`, "spec.States", field.ErrorTypeRequired, ""},
		{"empty States", `{"StartAt": "A", "States": {}}`, "spec.States", field.ErrorTypeRequired, ""},
		{"JSONata", `{"QueryLanguage": "JSONata", "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`, "spec.QueryLanguage", field.ErrorTypeNotSupported, "JSONPath"},
		{"state JSONata", def(`"A": {"Type": "Succeed", "QueryLanguage": "JSONata"}`), "spec.States[A].QueryLanguage", field.ErrorTypeNotSupported, ""},
		{"unknown top field", `{"StartAt": "A", "Foo": 1, "States": {"A": {"Type": "Succeed"}}}`, "spec.Foo", field.ErrorTypeForbidden, "unknown field"},
		{"bad TimeoutSeconds", `{"StartAt": "A", "TimeoutSeconds": 0, "States": {"A": {"Type": "Succeed"}}}`, "spec.TimeoutSeconds", field.ErrorTypeInvalid, ""},
		{"fractional TimeoutSeconds", `{"StartAt": "A", "TimeoutSeconds": 1.5, "States": {"A": {"Type": "Succeed"}}}`, "spec.TimeoutSeconds", field.ErrorTypeInvalid, "integer"},
		{"unknown Next", def(`"A": {"Type": "Pass", "Next": "B"}`), "spec.States[A].Next", field.ErrorTypeInvalid, ""},
		{"unknown Default", def(`"A": {"Type": "Choice", "Choices": [{"Variable": "$.x", "IsPresent": true, "Next": "Z"}], "Default": "Nope"}, ` + okEnd), "spec.States[A].Default", field.ErrorTypeInvalid, ""},
		{"unknown Choice Next", def(`"A": {"Type": "Choice", "Choices": [{"Variable": "$.x", "IsPresent": true, "Next": "Nope"}], "Default": "Z"}, ` + okEnd), "spec.States[A].Choices[0].Next", field.ErrorTypeInvalid, ""},
		{"unknown Catch Next", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Nope"}]}`), "spec.States[A].Catch[0].Next", field.ErrorTypeInvalid, ""},
		{"unreachable", def(`"A": {"Type": "Succeed"}, "B": {"Type": "Succeed"}`), "spec.States[B]", field.ErrorTypeInvalid, "reachable"},
		{"no Next nor End", def(`"A": {"Type": "Pass"}`), "spec.States[A].Next", field.ErrorTypeRequired, ""},
		{"End false", def(`"A": {"Type": "Pass", "End": false}`), "spec.States[A].Next", field.ErrorTypeRequired, ""},
		{"Next and End", def(`"A": {"Type": "Pass", "Next": "Z", "End": true}, ` + okEnd), "spec.States[A].End", field.ErrorTypeForbidden, ""},
		{"no Type", def(`"A": {"End": true}`), "spec.States[A].Type", field.ErrorTypeRequired, ""},
		{"unknown Type", def(`"A": {"Type": "Sleep", "End": true}`), "spec.States[A].Type", field.ErrorTypeNotSupported, ""},
		{"unknown state field", def(`"A": {"Type": "Pass", "End": true, "Foo": 1}`), "spec.States[A].Foo", field.ErrorTypeForbidden, "unknown field"},
		{"field of another type", def(`"A": {"Type": "Pass", "End": true, "Resource": "f"}`), "spec.States[A].Resource", field.ErrorTypeForbidden, "Pass"},
		{"Fail with InputPath", def(`"A": {"Type": "Fail", "InputPath": "$"}`), "spec.States[A].InputPath", field.ErrorTypeForbidden, ""},
		{"Choice without Choices", def(`"A": {"Type": "Choice", "Default": "Z"}, ` + okEnd), "spec.States[A].Choices", field.ErrorTypeRequired, ""},
		{"Choice empty Choices", def(`"A": {"Type": "Choice", "Choices": [], "Default": "Z"}, ` + okEnd), "spec.States[A].Choices", field.ErrorTypeRequired, ""},
		{"End on Choice", def(`"A": {"Type": "Choice", "End": true, "Choices": [{"Variable": "$.x", "IsPresent": true, "Next": "Z"}]}, ` + okEnd), "spec.States[A].End", field.ErrorTypeForbidden, ""},
		{"rule without Next", def(`"A": {"Type": "Choice", "Choices": [{"Variable": "$.x", "IsPresent": true}], "Default": "Z"}, ` + okEnd), "spec.States[A].Choices[0].Next", field.ErrorTypeRequired, ""},
		{"nested rule with Next", def(`"A": {"Type": "Choice", "Choices": [{"Not": {"Variable": "$.x", "IsPresent": true, "Next": "Z"}, "Next": "Z"}]}, ` + okEnd), "spec.States[A].Choices[0].Not.Next", field.ErrorTypeForbidden, ""},
		{"rule without operator", def(`"A": {"Type": "Choice", "Choices": [{"Variable": "$.x", "Next": "Z"}]}, ` + okEnd), "spec.States[A].Choices[0]", field.ErrorTypeRequired, ""},
		{"rule with two operators", def(`"A": {"Type": "Choice", "Choices": [{"Variable": "$.x", "IsNull": true, "IsPresent": true, "Next": "Z"}]}, ` + okEnd), "spec.States[A].Choices[0].IsPresent", field.ErrorTypeForbidden, ""},
		{"unknown operator", def(`"A": {"Type": "Choice", "Choices": [{"Variable": "$.x", "IsPresent": true, "StringContains": "a", "Next": "Z"}]}, ` + okEnd), "spec.States[A].Choices[0].StringContains", field.ErrorTypeForbidden, ""},
		{"no Variable", def(`"A": {"Type": "Choice", "Choices": [{"StringEquals": "a", "Next": "Z"}]}, ` + okEnd), "spec.States[A].Choices[0].Variable", field.ErrorTypeRequired, ""},
		{"bad Variable", def(`"A": {"Type": "Choice", "Choices": [{"Variable": "x", "StringEquals": "a", "Next": "Z"}]}, ` + okEnd), "spec.States[A].Choices[0].Variable", field.ErrorTypeInvalid, "Path"},
		{"string operator number", def(`"A": {"Type": "Choice", "Choices": [{"Variable": "$.x", "StringEquals": 1, "Next": "Z"}]}, ` + okEnd), "spec.States[A].Choices[0].StringEquals", field.ErrorTypeInvalid, ""},
		{"numeric operator string", def(`"A": {"Type": "Choice", "Choices": [{"Variable": "$.x", "NumericEquals": "1", "Next": "Z"}]}, ` + okEnd), "spec.States[A].Choices[0].NumericEquals", field.ErrorTypeInvalid, ""},
		{"bad timestamp", def(`"A": {"Type": "Choice", "Choices": [{"Variable": "$.x", "TimestampEquals": "yesterday", "Next": "Z"}]}, ` + okEnd), "spec.States[A].Choices[0].TimestampEquals", field.ErrorTypeInvalid, ""},
		{"bad operator Path", def(`"A": {"Type": "Choice", "Choices": [{"Variable": "$.x", "StringEqualsPath": "x", "Next": "Z"}]}, ` + okEnd), "spec.States[A].Choices[0].StringEqualsPath", field.ErrorTypeInvalid, ""},
		{"Variable with Not", def(`"A": {"Type": "Choice", "Choices": [{"Variable": "$.x", "Not": {"Variable": "$.x", "IsNull": true}, "Next": "Z"}]}, ` + okEnd), "spec.States[A].Choices[0].Variable", field.ErrorTypeForbidden, "comparison"},
		{"empty Next", def(`"A": {"Type": "Pass", "Next": ""}`), "spec.States[A].Next", field.ErrorTypeInvalid, ""},
		{"empty Default", def(`"A": {"Type": "Choice", "Choices": [{"Variable": "$.x", "IsNull": true, "Next": "Z"}], "Default": ""}, ` + okEnd), "spec.States[A].Default", field.ErrorTypeInvalid, ""},
		{"empty catcher Next", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Catch": [{"ErrorEquals": ["E"], "Next": ""}]}`), "spec.States[A].Catch[0].Next", field.ErrorTypeInvalid, ""},
		{"empty And", def(`"A": {"Type": "Choice", "Choices": [{"And": [], "Next": "Z"}]}, ` + okEnd), "spec.States[A].Choices[0].And", field.ErrorTypeRequired, ""},
		{"deep nested", def(`"A": {"Type": "Choice", "Choices": [{"Or": [{"Not": {"Variable": "$.x", "IsBoolean": "yes"}}], "Next": "Z"}]}, ` + okEnd), "spec.States[A].Choices[0].Or[0].Not.IsBoolean", field.ErrorTypeInvalid, ""},
		{"bad InputPath", def(`"A": {"Type": "Pass", "End": true, "InputPath": "x"}`), "spec.States[A].InputPath", field.ErrorTypeInvalid, ""},
		{"ResultPath not reference", def(`"A": {"Type": "Pass", "End": true, "ResultPath": "$.a[*]"}`), "spec.States[A].ResultPath", field.ErrorTypeInvalid, "Reference Path"},
		{"bad Parameters path", def(`"A": {"Type": "Pass", "End": true, "Parameters": {"a": {"b.$": "nope"}}}`), "spec.States[A].Parameters.a.b.$", field.ErrorTypeInvalid, ""},
		{"bad intrinsic", def(`"A": {"Type": "Pass", "End": true, "Parameters": {"a.$": "States.Nope(1)"}}`), "spec.States[A].Parameters.a.$", field.ErrorTypeInvalid, ""},
		{"Parameters not object", def(`"A": {"Type": "Pass", "End": true, "Parameters": 3}`), "spec.States[A].Parameters", field.ErrorTypeInvalid, ""},
		{"bad ResultSelector", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "ResultSelector": {"a.$": 3}}`), "spec.States[A].ResultSelector.a.$", field.ErrorTypeInvalid, ""},
		{"ARN Resource", def(`"A": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:1:function:f", "End": true}`), "spec.States[A].Resource", field.ErrorTypeInvalid, "must be function:<name>, workflow:<name> or a function's name"},
		{"bad Resource name", def(`"A": {"Type": "Task", "Resource": "function:Bad_Name", "End": true}`), "spec.States[A].Resource", field.ErrorTypeInvalid, ""},
		{"no Resource", def(`"A": {"Type": "Task", "End": true}`), "spec.States[A].Resource", field.ErrorTypeRequired, ""},
		{"Timeout both", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "TimeoutSeconds": 3, "TimeoutSecondsPath": "$.t"}`), "spec.States[A].TimeoutSecondsPath", field.ErrorTypeForbidden, ""},
		{"Heartbeat not below Timeout", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "TimeoutSeconds": 3, "HeartbeatSeconds": 3}`), "spec.States[A].HeartbeatSeconds", field.ErrorTypeInvalid, ""},
		{"negative TimeoutSeconds", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "TimeoutSeconds": -1}`), "spec.States[A].TimeoutSeconds", field.ErrorTypeInvalid, ""},
		{"IntervalSeconds 0", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Retry": [{"ErrorEquals": ["E"], "IntervalSeconds": 0}]}`), "spec.States[A].Retry[0].IntervalSeconds", field.ErrorTypeInvalid, ""},
		{"MaxAttempts negative", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Retry": [{"ErrorEquals": ["E"], "MaxAttempts": -1}]}`), "spec.States[A].Retry[0].MaxAttempts", field.ErrorTypeInvalid, ""},
		{"BackoffRate below 1", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Retry": [{"ErrorEquals": ["E"], "BackoffRate": 0.5}]}`), "spec.States[A].Retry[0].BackoffRate", field.ErrorTypeInvalid, ""},
		{"MaxDelaySeconds 0", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Retry": [{"ErrorEquals": ["E"], "MaxDelaySeconds": 0}]}`), "spec.States[A].Retry[0].MaxDelaySeconds", field.ErrorTypeInvalid, ""},
		{"bad JitterStrategy", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Retry": [{"ErrorEquals": ["E"], "JitterStrategy": "HALF"}]}`), "spec.States[A].Retry[0].JitterStrategy", field.ErrorTypeNotSupported, ""},
		{"unknown retrier field", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Retry": [{"ErrorEquals": ["E"], "Foo": 1}]}`), "spec.States[A].Retry[0].Foo", field.ErrorTypeForbidden, ""},
		{"no ErrorEquals", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Retry": [{"MaxAttempts": 1}]}`), "spec.States[A].Retry[0].ErrorEquals", field.ErrorTypeRequired, ""},
		{"empty ErrorEquals", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Retry": [{"ErrorEquals": []}]}`), "spec.States[A].Retry[0].ErrorEquals", field.ErrorTypeRequired, ""},
		{"unknown States error", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Retry": [{"ErrorEquals": ["States.Nope"]}]}`), "spec.States[A].Retry[0].ErrorEquals[0]", field.ErrorTypeInvalid, ""},
		{"States.ALL not alone", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Retry": [{"ErrorEquals": ["E", "States.ALL"]}]}`), "spec.States[A].Retry[0].ErrorEquals[1]", field.ErrorTypeInvalid, "alone"},
		{"States.ALL not last", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Z"}, {"ErrorEquals": ["E"], "Next": "Z"}]}, ` + okEnd), "spec.States[A].Catch[0].ErrorEquals[0]", field.ErrorTypeInvalid, "last"},
		{"catcher without Next", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Catch": [{"ErrorEquals": ["E"]}]}`), "spec.States[A].Catch[0].Next", field.ErrorTypeRequired, ""},
		{"catcher bad ResultPath", def(`"A": {"Type": "Task", "Resource": "f", "End": true, "Catch": [{"ErrorEquals": ["E"], "Next": "A", "ResultPath": "$..x"}]}`), "spec.States[A].Catch[0].ResultPath", field.ErrorTypeInvalid, ""},
		{"Wait without time", def(`"A": {"Type": "Wait", "End": true}`), "spec.States[A].Seconds", field.ErrorTypeRequired, ""},
		{"Wait with two", def(`"A": {"Type": "Wait", "End": true, "Seconds": 1, "SecondsPath": "$.s"}`), "spec.States[A].SecondsPath", field.ErrorTypeForbidden, ""},
		{"Wait negative", def(`"A": {"Type": "Wait", "End": true, "Seconds": -1}`), "spec.States[A].Seconds", field.ErrorTypeInvalid, ""},
		{"Wait bad Timestamp", def(`"A": {"Type": "Wait", "End": true, "Timestamp": "tomorrow"}`), "spec.States[A].Timestamp", field.ErrorTypeInvalid, ""},
		{"Wait TimestampPath not reference", def(`"A": {"Type": "Wait", "End": true, "TimestampPath": "$.t[*]"}`), "spec.States[A].TimestampPath", field.ErrorTypeInvalid, ""},
		{"Fail Error and ErrorPath", def(`"A": {"Type": "Fail", "Error": "E", "ErrorPath": "$.e"}`), "spec.States[A].ErrorPath", field.ErrorTypeForbidden, ""},
		{"Fail bad CausePath", def(`"A": {"Type": "Fail", "CausePath": "States.Nope()"}`), "spec.States[A].CausePath", field.ErrorTypeInvalid, ""},
		{"Succeed with Next", def(`"A": {"Type": "Succeed", "Next": "A"}`), "spec.States[A].Next", field.ErrorTypeForbidden, ""},
		{"long name", `{"StartAt": "` + strings.Repeat("a", 81) + `", "States": {"` + strings.Repeat("a", 81) + `": {"Type": "Succeed"}}}`, "spec.States[" + strings.Repeat("a", 81) + "]", field.ErrorTypeInvalid, "80"},
		{"Parallel without Branches", def(`"A": {"Type": "Parallel", "End": true}`), "spec.States[A].Branches", field.ErrorTypeRequired, ""},
		{"branch bad Next", def(`"A": {"Type": "Parallel", "End": true, "Branches": [{"StartAt": "B", "States": {"B": {"Type": "Pass", "Next": "A"}}}]}`), "spec.States[A].Branches[0].States[B].Next", field.ErrorTypeInvalid, ""},
		{"branch unknown field", def(`"A": {"Type": "Parallel", "End": true, "Branches": [{"StartAt": "B", "Foo": 1, "States": {"B": {"Type": "Succeed"}}}]}`), "spec.States[A].Branches[0].Foo", field.ErrorTypeForbidden, ""},
		{"branch TimeoutSeconds", def(`"A": {"Type": "Parallel", "End": true, "Branches": [{"StartAt": "B", "TimeoutSeconds": 1, "States": {"B": {"Type": "Succeed"}}}]}`), "spec.States[A].Branches[0].TimeoutSeconds", field.ErrorTypeForbidden, ""},
		{"Map without processor", def(`"A": {"Type": "Map", "End": true}`), "spec.States[A].ItemProcessor", field.ErrorTypeRequired, ""},
		{"Map processor error", def(`"A": {"Type": "Map", "End": true, "ItemProcessor": {"StartAt": "B", "States": {"B": {"Type": "Task", "Resource": "arn:x", "End": true}}}}`), "spec.States[A].ItemProcessor.States[B].Resource", field.ErrorTypeInvalid, ""},
		{"Map distributed", def(`"A": {"Type": "Map", "End": true, "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED"}, "StartAt": "B", "States": {"B": {"Type": "Succeed"}}}}`), "spec.States[A].ItemProcessor.ProcessorConfig.Mode", field.ErrorTypeNotSupported, ""},
		{"Map ItemReader", def(`"A": {"Type": "Map", "End": true, "ItemReader": {}, "ItemProcessor": {"StartAt": "B", "States": {"B": {"Type": "Succeed"}}}}`), "spec.States[A].ItemReader", field.ErrorTypeForbidden, "distributed"},
		{"Map ResultWriter", def(`"A": {"Type": "Map", "End": true, "ResultWriter": {}, "ItemProcessor": {"StartAt": "B", "States": {"B": {"Type": "Succeed"}}}}`), "spec.States[A].ResultWriter", field.ErrorTypeForbidden, "distributed"},
		{"Map both selectors", def(`"A": {"Type": "Map", "End": true, "ItemSelector": {}, "Parameters": {}, "ItemProcessor": {"StartAt": "B", "States": {"B": {"Type": "Succeed"}}}}`), "spec.States[A].Parameters", field.ErrorTypeForbidden, ""},
		{"Map bad percentage", def(`"A": {"Type": "Map", "End": true, "ToleratedFailurePercentage": 101, "ItemProcessor": {"StartAt": "B", "States": {"B": {"Type": "Succeed"}}}}`), "spec.States[A].ToleratedFailurePercentage", field.ErrorTypeInvalid, ""},
		{"Map negative count", def(`"A": {"Type": "Map", "End": true, "ToleratedFailureCount": -1, "ItemProcessor": {"StartAt": "B", "States": {"B": {"Type": "Succeed"}}}}`), "spec.States[A].ToleratedFailureCount", field.ErrorTypeInvalid, ""},
		{"Map MaxConcurrency both", def(`"A": {"Type": "Map", "End": true, "MaxConcurrency": 1, "MaxConcurrencyPath": "$.m", "ItemProcessor": {"StartAt": "B", "States": {"B": {"Type": "Succeed"}}}}`), "spec.States[A].MaxConcurrencyPath", field.ErrorTypeForbidden, ""},
		{"Map bad ItemsPath", def(`"A": {"Type": "Map", "End": true, "ItemsPath": "$.a[*]", "ItemProcessor": {"StartAt": "B", "States": {"B": {"Type": "Succeed"}}}}`), "spec.States[A].ItemsPath", field.ErrorTypeInvalid, ""},
		{"Map bad ItemSelector", def(`"A": {"Type": "Map", "End": true, "ItemSelector": {"x.$": "y"}, "ItemProcessor": {"StartAt": "B", "States": {"B": {"Type": "Succeed"}}}}`), "spec.States[A].ItemSelector.x.$", field.ErrorTypeInvalid, ""},
		{"Map processor unreachable", def(`"A": {"Type": "Map", "End": true, "ItemProcessor": {"StartAt": "B", "States": {"B": {"Type": "Succeed"}, "C": {"Type": "Succeed"}}}}`), "spec.States[A].ItemProcessor.States[C]", field.ErrorTypeInvalid, ""},
		{"Assign", def(`"A": {"Type": "Pass", "End": true, "Assign": {}}`), "spec.States[A].Assign", field.ErrorTypeForbidden, "variables"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, errs := Parse([]byte(tt.def), field.NewPath("spec"))
			if m != nil {
				t.Errorf("Parse returned a machine with errors %v", errs)
			}
			for _, e := range errs {
				if e.Field == tt.path && e.Type == tt.typ && strings.Contains(e.Error(), tt.detail) {
					return
				}
			}
			t.Errorf("want a %s error at %s (%q), got %v", tt.typ, tt.path, tt.detail, errs)
		})
	}
}

func mustParse(t *testing.T, def string) *Machine {
	t.Helper()
	m, errs := Parse([]byte(def), field.NewPath("definition"))
	if len(errs) > 0 {
		t.Fatalf("Parse: %v", errs.ToAggregate())
	}
	return m
}
