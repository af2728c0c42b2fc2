package expr

import (
	"errors"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

func TestPayload(t *testing.T) {
	ctx := `{"Execution": {"Id": "arn:exec"}, "Map": {"Item": {"Index": 1, "Value": {"x": 2}}}}`
	tests := []struct {
		name, tmpl, input, want string
	}{
		// The spec's Parameters example.
		{"spec parameters", `{"flagged": true, "parts": {"first.$": "$.vals[0]", "last3.$": "$.vals[-3:]"}}`,
			`{"flagged": 7, "vals": [0, 10, 20, 30, 40, 50]}`,
			`{"flagged": true, "parts": {"first": 0, "last3": [30, 40, 50]}}`},
		{"context object", `{"id.$": "$$.Execution.Id", "item.$": "$$.Map.Item.Value", "index.$": "$$.Map.Item.Index"}`, `{}`,
			`{"id": "arn:exec", "item": {"x": 2}, "index": 1}`},
		{"intrinsic", `{"greeting.$": "States.Format('Hello, {}', $.name)", "n.$": "States.MathAdd($.n, 1)"}`, `{"name": "Ann", "n": 41}`,
			`{"greeting": "Hello, Ann", "n": 42}`},
		{"whole input", `{"all.$": "$"}`, `{"a": [1]}`, `{"all": {"a": [1]}}`},
		{"arrays of objects", `{"list": [{"v.$": "$.a"}, 1, "s", [{"w.$": "$.b"}]]}`, `{"a": "A", "b": "B"}`,
			`{"list": [{"v": "A"}, 1, "s", [{"w": "B"}]]}`},
		{"literal strings stay", `{"p": "$.a", "q": "States.UUID()"}`, `{"a": 1}`, `{"p": "$.a", "q": "States.UUID()"}`},
		{"filter yields array", `{"cheap.$": "$.items[?(@.price < 5)].name"}`,
			`{"items": [{"name": "a", "price": 1}, {"name": "b", "price": 9}]}`, `{"cheap": ["a"]}`},
		{"indefinite empty", `{"none.$": "$.items[?(@.price > 100)]"}`, `{"items": []}`, `{"none": []}`},
		{"scalar template", `"x"`, `{}`, `"x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := mustDecode(t, tc.tmpl)
			if errs := CheckPayload(tmpl); len(errs) > 0 {
				t.Fatalf("CheckPayload: %v", errs)
			}
			before := mustEncode(t, tmpl)
			got, err := Payload(tmpl, mustDecode(t, tc.input), mustDecode(t, ctx), rand.New(rand.NewSource(1)))
			if err != nil {
				t.Fatalf("Payload: %v", err)
			}
			if g, w := mustEncode(t, got), canon(t, tc.want); g != w {
				t.Errorf("Payload = %s, want %s", g, w)
			}
			if after := mustEncode(t, tmpl); after != before {
				t.Errorf("Payload mutated the template: %s", after)
			}
		})
	}
}

func TestPayloadErrors(t *testing.T) {
	tests := []struct {
		name, tmpl, input string
		intrinsic         bool
		reason            string
	}{
		{"missing path", `{"a": {"b.$": "$.nope"}}`, `{}`, false, `field "a.b.$": no field "nope" at $`},
		{"missing in array", `{"l": [{"b.$": "$.nope"}]}`, `{}`, false, `field "l[0].b.$"`},
		{"intrinsic failure", `{"h.$": "States.Hash($.a, 'X')"}`, `{"a": "x"}`, true, `field "h.$": unknown algorithm`},
		{"not a string", `{"h.$": 3}`, `{}`, false, `field "h.$" must hold a string, got number`},
		{"neither", `{"h.$": "hello"}`, `{}`, false, "neither a path nor an intrinsic"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Payload(mustDecode(t, tc.tmpl), mustDecode(t, tc.input), nil, nil)
			var pe *PathError
			var ie *IntrinsicError
			switch {
			case tc.intrinsic && !errors.As(err, &ie), !tc.intrinsic && !errors.As(err, &pe):
				t.Fatalf("Payload error = %#v, want intrinsic=%v", err, tc.intrinsic)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("Payload error = %v, want %q", err, tc.reason)
			}
		})
	}
}

func TestCheckPayload(t *testing.T) {
	tmpl := `{
	  "ok.$": "$.a",
	  "okc.$": "$$.Execution.Id",
	  "oki.$": "States.Array($.a)",
	  "plain": "$.not checked",
	  "bad.$": "$.a[",
	  "num.$": 1,
	  "word.$": "hello",
	  "call.$": "States.Nope()",
	  "dup": 1,
	  "dup.$": "$.x",
	  "nested": {"deep": [{"x.$": "$$."}]}
	}`
	errs := CheckPayload(mustDecode(t, tmpl))
	want := []struct{ key, msg string }{
		{"bad.$", "invalid path"},
		{"call.$", `unknown intrinsic function "States.Nope"`},
		{"dup.$", `both "dup" and "dup.$" are present`},
		{"nested.deep.[0].x.$", "expected a field name"},
		{"num.$", `must hold a string, got number`},
		{"word.$", "neither a path"},
	}
	if len(errs) != len(want) {
		t.Fatalf("CheckPayload = %v, want %d errors", errs, len(want))
	}
	for i, w := range want {
		if got := strings.Join(errs[i].Key, "."); got != w.key || !strings.Contains(errs[i].Err.Error(), w.msg) {
			t.Errorf("error %d = %v (key %q), want key %q with %q", i, errs[i], got, w.key, w.msg)
		}
	}
	if got := errs[3].Error(); !strings.HasPrefix(got, "nested.deep[0].x.$: ") {
		t.Errorf("TemplateError.Error() = %q", got)
	}
	if !slices.Equal(errs[3].Key, []string{"nested", "deep", "[0]", "x.$"}) {
		t.Errorf("Key = %q", errs[3].Key)
	}
	if errs := CheckPayload(nil); errs != nil {
		t.Errorf("CheckPayload(nil) = %v", errs)
	}
}
