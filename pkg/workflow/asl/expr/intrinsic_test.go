package expr

import (
	"errors"
	"math/rand"
	"regexp"
	"strings"
	"testing"
)

func TestIntrinsic(t *testing.T) {
	ctx := `{"Execution": {"Id": "arn:exec", "Name": "run-1"}, "State": {"Name": "S"}}`
	tests := []struct {
		name, input, call, want string
	}{
		// Examples from the AWS Step Functions documentation.
		{"Format", `{"name": "Arnav"}`, "States.Format('Hello, my name is {}.', $.name)", `"Hello, my name is Arnav."`},
		{"Format escaped quote", `{"firstName": "John", "lastName": "Doe"}`,
			`States.Format('Welcome to {} {}\'s playlist.', $.firstName, $.lastName)`, `"Welcome to John Doe's playlist."`},
		{"StringToJson", `{"escapedJsonString": "{\"foo\": \"bar\"}"}`, "States.StringToJson($.escapedJsonString)", `{"foo": "bar"}`},
		{"JsonToString", `{"unescapedJson": {"foo": "bar", "n": 1.50}}`, "States.JsonToString($.unescapedJson)", `"{\"foo\":\"bar\",\"n\":1.50}"`},
		{"Array", `{"someJson": {"random": "abcdefghijklmnopqrstuvwxyz"}}`, "States.Array('Foo', 2020, $.someJson, null)",
			`["Foo", 2020, {"random": "abcdefghijklmnopqrstuvwxyz"}, null]`},
		{"ArrayPartition", `{}`, "States.ArrayPartition(States.Array(1,2,3,4,5,6,7,8,9), 4)", `[[1,2,3,4],[5,6,7,8],[9]]`},
		{"ArrayPartition path", `{"inputArray": [1,2,3,4,5,6,7,8,9]}`, "States.ArrayPartition($.inputArray,4)", `[[1,2,3,4],[5,6,7,8],[9]]`},
		{"ArrayContains", `{"inputArray": [1,2,3,4,5,6,7,8,9], "lookingFor": 5}`, "States.ArrayContains($.inputArray, $.lookingFor)", `true`},
		{"ArrayContains absent", `{"inputArray": [1,2,3]}`, "States.ArrayContains($.inputArray, 'x')", `false`},
		{"ArrayContains object", `{"a": [{"x": [1.0]}]}`, "States.ArrayContains($.a, States.StringToJson('{\"x\":[1]}'))", `true`},
		{"ArrayRange", `{}`, "States.ArrayRange(1, 9, 2)", `[1,3,5,7,9]`},
		{"ArrayRange not reaching end", `{}`, "States.ArrayRange(1, 10, 4)", `[1,5,9]`},
		{"ArrayRange descending", `{}`, "States.ArrayRange(5, 1, -2)", `[5,3,1]`},
		{"ArrayRange empty", `{}`, "States.ArrayRange(5, 1, 1)", `[]`},
		{"ArrayRange 1000", `{}`, "States.ArrayLength(States.ArrayRange(1, 1000, 1))", `1000`},
		{"ArrayGetItem", `{"inputArray": [1,2,3,4,5,6,7,8,9], "index": 5}`, "States.ArrayGetItem($.inputArray, $.index)", `6`},
		{"ArrayLength", `{"inputArray": [1,2,3,4,5,6,7,8,9]}`, "States.ArrayLength($.inputArray)", `9`},
		{"ArrayUnique", `{"inputArray": [1,2,3,3,3,3,3,3,4]}`, "States.ArrayUnique($.inputArray)", `[1,2,3,4]`},
		{"ArrayUnique mixed", `{"a": [1, 1.0, "1", {"x": 1}, {"x": 1.0}, null, null, [true], [true]]}`, "States.ArrayUnique($.a)",
			`[1, "1", {"x": 1}, null, [true]]`},
		{"Base64Encode", `{"input": "Data to encode"}`, "States.Base64Encode($.input)", `"RGF0YSB0byBlbmNvZGU="`},
		{"Base64Decode", `{"base64": "RGF0YSB0byBlbmNvZGU="}`, "States.Base64Decode($.base64)", `"Data to encode"`},
		{"Hash SHA-1", `{"Data": "input data", "Algorithm": "SHA-1"}`, "States.Hash($.Data, $.Algorithm)", `"aaff4a450a104cd177d28d18d74485e8cae074b7"`},
		{"Hash MD5", `{"Data": "input data"}`, "States.Hash($.Data, 'MD5')", `"812f45842bc6d66ee14572ce20db8e86"`},
		{"Hash SHA-256", `{"Data": "input data"}`, "States.Hash($.Data, 'SHA-256')", `"b4a697a057313163aee33cd8d40c66e9f0f177e00cac2de32475ffff6169c3e3"`},
		{"Hash SHA-384", `{"Data": "input data"}`, "States.Hash($.Data, 'SHA-384')",
			`"d28a7d5cf25a74f11a50a18452b75e04bb3d70c9dd0510d6123aa008c756511b87525bdc835ebb27e1fb9e9374a15562"`},
		{"Hash SHA-512", `{"Data": "input data"}`, "States.Hash($.Data, 'SHA-512')",
			`"6ce4adb348546d4f449c4d25aad9a7c9cb711d9e91982d3f0b29ca2f3f47d4ce2deba23bf2954f0f1d593fc50283731a533d30d425402d4f91316d871303aac4"`},
		{"JsonMerge", `{"json1": {"a": {"a1": 1, "a2": 2}, "b": 2}, "json2": {"a": {"a3": 1, "a4": 2}, "c": 3}}`,
			"States.JsonMerge($.json1, $.json2, false)", `{"a": {"a3": 1, "a4": 2}, "b": 2, "c": 3}`},
		{"MathRandom seeded", `{"start": 1, "end": 999}`, "States.ArrayContains(States.Array(States.MathRandom($.start, $.end, 7)), States.MathRandom($.start, $.end, 7))", `true`},
		{"MathRandom one value", `{}`, "States.MathRandom(5, 6)", `5`},
		{"MathAdd", `{"value1": 111, "step": -1}`, "States.MathAdd($.value1, $.step)", `110`},
		{"MathAdd literals", `{}`, "States.MathAdd(1, 2)", `3`},
		{"MathAdd integral decimal", `{}`, "States.MathAdd(1.0, 2)", `3`},
		{"StringSplit", `{"inputString": "1,2,3,4,5", "splitter": ","}`, "States.StringSplit($.inputString, $.splitter)", `["1","2","3","4","5"]`},
		{"StringSplit many delimiters", `{"inputString": "This.is+a,test=string", "splitter": ".+,="}`,
			"States.StringSplit($.inputString, $.splitter)", `["This","is","a","test","string"]`},
		{"StringSplit drops empty", `{}`, "States.StringSplit(',,a,,b,', ',')", `["a","b"]`},
		{"StringSplit literal", `{}`, "States.StringSplit('1,2,3,4,5', ',')", `["1","2","3","4","5"]`},

		{"Format escapes", `{}`, `States.Format('\{\} \\ \' {}', 'x')`, `"{} \\ ' x"`},
		{"Format scalars", `{}`, "States.Format('{} {} {} {}', 1.5, true, null, 'z')", `"1.5 true null z"`},
		{"Format no placeholders", `{}`, "States.Format('plain')", `"plain"`},
		{"Format template from path", `{"t": "a {} b", "v": 3}`, "States.Format($.t, $.v)", `"a 3 b"`},
		{"Format context", `{}`, "States.Format('exec {}', $$.Execution.Name)", `"exec run-1"`},
		{"Format nested", `{"a": [1,2]}`, "States.Format('n={}', States.ArrayLength($.a))", `"n=2"`},
		{"spaces around args", `{}`, "States.Array( 1 ,'a' , true )", `[1,"a",true]`},
		{"empty Array", `{}`, "States.Array()", `[]`},
		{"string with comma and paren", `{}`, "States.Array('a, b)', 'c')", `["a, b)","c"]`},
		{"indefinite path arg", `{"a": [{"x": 1}, {"x": 2}]}`, "States.ArrayLength($.a[*].x)", `2`},
		{"filter path arg", `{"a": [{"x": 1}, {"x": 2}]}`, "States.Array($.a[?(@.x > 1)].x, $['a'][0,1].x)", `[[2],[1,2]]`},
		{"JsonToString of string", `{}`, "States.JsonToString('a<b')", `"\"a<b\""`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := CheckIntrinsic(tc.call); err != nil {
				t.Fatalf("CheckIntrinsic(%q): %v", tc.call, err)
			}
			got, err := Intrinsic(tc.call, mustDecode(t, tc.input), mustDecode(t, ctx), rand.New(rand.NewSource(1)))
			if err != nil {
				t.Fatalf("Intrinsic(%q): %v", tc.call, err)
			}
			if g, w := mustEncode(t, got), canon(t, tc.want); g != w {
				t.Errorf("Intrinsic(%q) = %s, want %s", tc.call, g, w)
			}
		})
	}
}

func TestIntrinsicRandom(t *testing.T) {
	uuidRE := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, err := Intrinsic("States.UUID()", nil, nil, rand.New(rand.NewSource(42)))
	if err != nil {
		t.Fatal(err)
	}
	if !uuidRE.MatchString(a.(string)) {
		t.Errorf("UUID %q is not a version 4 UUID", a)
	}
	b, _ := Intrinsic("States.UUID()", nil, nil, rand.New(rand.NewSource(42)))
	c, _ := Intrinsic("States.UUID()", nil, nil, rand.New(rand.NewSource(43)))
	if a != b || a == c {
		t.Errorf("UUIDs %v %v %v: want the same for the same seed and different otherwise", a, b, c)
	}
	if u, err := Intrinsic("States.UUID()", nil, nil, nil); err != nil || !uuidRE.MatchString(u.(string)) {
		t.Errorf("UUID with nil rand = %v, %v", u, err)
	}

	rnd := rand.New(rand.NewSource(1))
	seen := map[string]bool{}
	for range 200 {
		v, err := Intrinsic("States.MathRandom(-2, 3)", nil, nil, rnd)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := asInt(v)
		if !ok || n < -2 || n >= 3 {
			t.Fatalf("MathRandom(-2, 3) = %v, want an integer in [-2, 3)", v)
		}
		seen[mustEncode(t, v)] = true
	}
	if len(seen) != 5 {
		t.Errorf("MathRandom(-2, 3) produced %v, want all of -2..2", seen)
	}
	x, _ := Intrinsic("States.MathRandom(1, 1000000, 99)", nil, nil, rand.New(rand.NewSource(1)))
	y, _ := Intrinsic("States.MathRandom(1, 1000000, 99)", nil, nil, rand.New(rand.NewSource(2)))
	if x != y {
		t.Errorf("seeded MathRandom differs: %v %v", x, y)
	}
}

func TestIntrinsicErrors(t *testing.T) {
	tests := []struct {
		name, input, call, fn, reason string
	}{
		{"Format too few args", `{"a": 1}`, "States.Format('{} {}', $.a)", "States.Format", "2 placeholders but 1 arguments"},
		{"Format object arg", `{"a": {}}`, "States.Format('{}', $.a)", "States.Format", "second argument must be a string, number, boolean or null, got object"},
		{"Format lone brace", `{"t": "a { b"}`, "States.Format($.t)", "States.Format", `unescaped "{"`},
		{"Format template not string", `{"t": 1}`, "States.Format($.t)", "States.Format", "template must be a string"},
		{"StringToJson not string", `{"a": 1}`, "States.StringToJson($.a)", "States.StringToJson", "must be a string, got number"},
		{"StringToJson invalid", `{"a": "{x"}`, "States.StringToJson($.a)", "States.StringToJson", "not JSON"},
		{"ArrayPartition not array", `{"a": "x"}`, "States.ArrayPartition($.a, 2)", "States.ArrayPartition", "first argument must be an array, got string"},
		{"ArrayPartition zero", `{"a": []}`, "States.ArrayPartition($.a, 0)", "States.ArrayPartition", "chunk size must be positive"},
		{"ArrayPartition fraction", `{"a": []}`, "States.ArrayPartition($.a, 1.5)", "States.ArrayPartition", "second argument must be an integer, got 1.5"},
		{"ArrayRange too long", `{"n": 1001}`, "States.ArrayRange(1, $.n, 1)", "States.ArrayRange", "1001 elements, more than the limit of 1000"},
		{"ArrayRange zero step", `{"s": 0}`, "States.ArrayRange(1, 2, $.s)", "States.ArrayRange", "step must not be 0"},
		{"ArrayGetItem out of range", `{"a": [1]}`, "States.ArrayGetItem($.a, 1)", "States.ArrayGetItem", "index 1 is out of range for an array of length 1"},
		{"ArrayGetItem negative", `{"a": [1]}`, "States.ArrayGetItem($.a, -1)", "States.ArrayGetItem", "out of range"},
		{"ArrayLength object", `{"a": {}}`, "States.ArrayLength($.a)", "States.ArrayLength", "must be an array, got object"},
		{"Base64Decode invalid", `{"a": "!!"}`, "States.Base64Decode($.a)", "States.Base64Decode", "not base64"},
		{"Base64Encode too long", `{"a": "` + strings.Repeat("x", 10001) + `"}`, "States.Base64Encode($.a)", "States.Base64Encode", "more than the limit of 10000"},
		{"Hash unknown algorithm", `{"a": "x"}`, "States.Hash($.a, 'SHA-3')", "States.Hash", `unknown algorithm "SHA-3"`},
		{"Hash not string", `{"a": 1}`, "States.Hash($.a, 'MD5')", "States.Hash", "first argument must be a string"},
		{"JsonMerge deep", `{"a": {}, "b": {}}`, "States.JsonMerge($.a, $.b, true)", "States.JsonMerge", "deep merge is not supported"},
		{"JsonMerge not object", `{"a": [], "b": {}}`, "States.JsonMerge($.a, $.b, false)", "States.JsonMerge", "first argument must be an object, got array"},
		{"JsonMerge flag not bool", `{"a": {}, "b": {}}`, "States.JsonMerge($.a, $.b, 'no')", "States.JsonMerge", "must be a boolean"},
		{"MathRandom empty range", `{"a": 5}`, "States.MathRandom($.a, 5)", "States.MathRandom", "end (5) must be greater than the start (5)"},
		{"MathAdd string", `{"a": "1"}`, "States.MathAdd($.a, 1)", "States.MathAdd", "first argument must be an integer, got string"},
		{"MathAdd overflow", `{"a": 9223372036854775807}`, "States.MathAdd($.a, 1)", "States.MathAdd", "overflows"},
		{"StringSplit empty delimiters", `{"a": ""}`, "States.StringSplit('a', $.a)", "States.StringSplit", "delimiters must not be empty"},
		{"missing path", `{}`, "States.ArrayLength($.nope)", "States.ArrayLength", `no field "nope"`},
		{"nested failure", `{}`, "States.Format('{}', States.ArrayGetItem(States.Array(), 0))", "States.ArrayGetItem", "out of range"},
		{"syntax", `{}`, "States.Array(", "States.Array", "expected an argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Intrinsic(tc.call, mustDecode(t, tc.input), nil, nil)
			var ie *IntrinsicError
			if !errors.As(err, &ie) {
				t.Fatalf("Intrinsic(%q) error = %v, want *IntrinsicError", tc.call, err)
			}
			if ie.Func != tc.fn || !strings.Contains(ie.Reason, tc.reason) {
				t.Errorf("Intrinsic(%q) = %v, want %s: ...%s...", tc.call, err, tc.fn, tc.reason)
			}
		})
	}
}

func TestCheckIntrinsic(t *testing.T) {
	tests := []struct{ call, msg string }{
		{"States.Nope(1)", `unknown intrinsic function "States.Nope"`},
		{"Foo.Bar()", `must start with "States."`},
		{"States.Format", `expected "("`},
		{"States.Format()", "States.Format takes at least 1 arguments, got 0"},
		{"States.UUID(1)", "States.UUID takes 0 arguments, got 1"},
		{"States.ArrayLength()", "States.ArrayLength takes 1 argument, got 0"},
		{"States.MathRandom(1)", "States.MathRandom takes 2 to 3 arguments, got 1"},
		{"States.JsonMerge($.a, $.b)", "States.JsonMerge takes 3 arguments, got 2"},
		{"States.Array(1 2)", `expected "," or ")"`},
		{"States.Array(1,)", "expected an argument"},
		{"States.Array('abc)", "unterminated string"},
		{`States.Array('a\n')`, "invalid escape in string"},
		{"States.Array(\"a\")", "expected an argument"},
		{"States.Array(-)", "expected a digit"},
		{"States.Array(1.)", `expected a digit after "."`},
		{"States.Array($.a[)", "expected *, ?(, a quoted name or an index"},
		{"States.Array(yes)", "expected an argument"},
		{"States.Array() x", "unexpected 'x' after the call"},
		{"States.Array(States.Nope())", `unknown intrinsic function "States.Nope"`},
		{"States.Format('{} {}', $.a)", "2 placeholders but 1 arguments"},
		{"States.Format('{', $.a)", `unescaped "{"`},
		{"States.Format('}')", `unescaped "}"`},
		{"States.ArrayRange(1, 2000, 1)", "more than the limit of 1000"},
		{"States.Hash('x', 'SHA-3')", "unknown algorithm"},
		{"States.JsonMerge($.a, $.b, true)", ""}, // paths: only known at run time
		{"States.ArrayLength(States.Array(1, 'a'), 1)", "takes 1 argument"},
		{"States.ArrayGetItem(States.Array(1), 3)", "out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.call, func(t *testing.T) {
			err := CheckIntrinsic(tc.call)
			if tc.msg == "" {
				if err != nil {
					t.Errorf("CheckIntrinsic(%q) = %v, want nil", tc.call, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("CheckIntrinsic(%q) = %v, want error containing %q", tc.call, err, tc.msg)
			}
		})
	}
}

func TestIsIntrinsic(t *testing.T) {
	for s, want := range map[string]bool{
		"States.Format('x')": true,
		"States.UUID()":      true,
		"States.Format":      false,
		"$.a":                false,
		"Format('x')":        false,
	} {
		if got := IsIntrinsic(s); got != want {
			t.Errorf("IsIntrinsic(%q) = %v, want %v", s, got, want)
		}
	}
}
