package expr

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := Decode([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

// canon re-encodes a JSON text so that it compares with Encode's output.
func canon(t *testing.T, s string) string {
	t.Helper()
	b, err := Encode(mustDecode(t, s))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustEncode(t *testing.T, v any) string {
	t.Helper()
	b, err := Encode(v)
	if err != nil {
		t.Fatalf("encode %#v: %v", v, err)
	}
	return string(b)
}

const store = `{
  "store": {
    "book": [
      {"category": "reference", "author": "Nigel Rees", "title": "Sayings of the Century", "price": 8.95},
      {"category": "fiction", "author": "Evelyn Waugh", "title": "Sword of Honour", "price": 12.99},
      {"category": "fiction", "author": "Herman Melville", "title": "Moby Dick", "isbn": "0-553-21311-3", "price": 8.99},
      {"category": "fiction", "author": "J. R. R. Tolkien", "title": "The Lord of the Rings", "isbn": "0-395-19395-8", "price": 22.99}
    ],
    "bicycle": {"color": "red", "price": 19.95}
  },
  "a b": {"it's": 1},
  "n": [0, 1, 2, 3, 4, 5],
  "mixed": [1, "1", 1.0, true, null, "x"],
  "expensive": 10
}`

func TestQuery(t *testing.T) {
	spec := `{"foo": 123, "bar": ["a", "b", "c"], "car": {"cdr": true}}`
	ctx := `{"Execution": {"Id": "arn:exec", "Input": {"k": 1}}, "State": {"Name": "S"}, "Map": {"Item": {"Index": 2}}}`
	tests := []struct {
		name, data, path, want string
	}{
		// The spec's examples.
		{"spec foo", spec, "$.foo", `123`},
		{"spec bar", spec, "$.bar", `["a","b","c"]`},
		{"spec car.cdr", spec, "$.car.cdr", `true`},
		{"root", spec, "$", spec},

		{"bracket name", store, "$['store']['bicycle']['color']", `"red"`},
		{"double quoted name", store, `$["store"]["bicycle"].color`, `"red"`},
		{"name with space and quote", store, `$['a b']['it\'s']`, `1`},
		{"index", store, "$.store.book[0].author", `"Nigel Rees"`},
		{"negative index", store, "$.store.book[-1].title", `"The Lord of the Rings"`},
		{"wildcard array", store, "$.store.book[*].author", `["Nigel Rees","Evelyn Waugh","Herman Melville","J. R. R. Tolkien"]`},
		{"dot wildcard array", store, "$.n.*", `[0,1,2,3,4,5]`},
		{"wildcard object in key order", store, "$.store.bicycle.*", `["red",19.95]`},
		{"bracket wildcard object", store, "$.store.bicycle[*]", `["red",19.95]`},
		{"slice", store, "$.n[1:3]", `[1,2]`},
		{"slice open end", store, "$.n[4:]", `[4,5]`},
		{"slice open start", store, "$.n[:2]", `[0,1]`},
		{"slice negative start", store, "$.n[-3:]", `[3,4,5]`},
		{"slice step", store, "$.n[::2]", `[0,2,4]`},
		{"slice negative step", store, "$.n[::-2]", `[5,3,1]`},
		{"slice reverse range", store, "$.n[4:1:-1]", `[4,3,2]`},
		{"slice beyond end", store, "$.n[4:100]", `[4,5]`},
		{"slice empty", store, "$.n[3:1]", `[]`},
		{"slice spaces", store, "$.n[ 1 : 3 ]", `[1,2]`},
		{"index union", store, "$.n[0,2,-1]", `[0,2,5]`},
		{"name union", store, "$.store.book[0]['author','title']", `["Nigel Rees","Sayings of the Century"]`},
		{"union with missing member", store, "$.store.book[0]['author','nope']", `["Nigel Rees"]`},
		{"recursive name", store, "$..author", `["Nigel Rees","Evelyn Waugh","Herman Melville","J. R. R. Tolkien"]`},
		{"recursive under", store, "$.store..price", `[19.95,8.95,12.99,8.99,22.99]`},
		{"recursive index", store, "$..book[2].title", `["Moby Dick"]`},
		{"recursive bracket", store, "$..['color']", `["red"]`},
		{"recursive wildcard", `{"a": {"b": [1, 2]}, "c": 3}`, "$..*", `[{"b":[1,2]},3,[1,2],1,2]`},
		{"filter exists", store, "$.store.book[?(@.isbn)].title", `["Moby Dick","The Lord of the Rings"]`},
		{"filter not exists", store, "$.store.book[?(!@.isbn)].title", `["Sayings of the Century","Sword of Honour"]`},
		{"filter <", store, "$.store.book[?(@.price < 10)].title", `["Sayings of the Century","Moby Dick"]`},
		{"filter <=", store, "$.store.book[?(@.price <= 8.99)].title", `["Sayings of the Century","Moby Dick"]`},
		{"filter >", store, "$.store.book[?(@.price>20)].title", `["The Lord of the Rings"]`},
		{"filter >=", store, "$.store.book[?(@.price >= 22.99)].title", `["The Lord of the Rings"]`},
		{"filter == string", store, "$.store.book[?(@.category == 'reference')].author", `["Nigel Rees"]`},
		{"filter == double quoted", store, `$.store.book[?(@.category == "reference")].author`, `["Nigel Rees"]`},
		{"filter !=", store, "$.store.book[?(@.category != 'fiction')].author", `["Nigel Rees"]`},
		{"filter &&", store, "$.store.book[?(@.category == 'fiction' && @.price < 10)].title", `["Moby Dick"]`},
		{"filter ||", store, "$.store.book[?(@.price < 9 || @.price > 20)].title", `["Sayings of the Century","Moby Dick","The Lord of the Rings"]`},
		{"filter parentheses", store, "$.store.book[?((@.price < 9 || @.price > 20) && @.isbn)].title", `["Moby Dick","The Lord of the Rings"]`},
		{"filter not parentheses", store, "$.store.book[?(!(@.price < 20))].title", `["The Lord of the Rings"]`},
		{"filter root path", store, "$.store.book[?(@.price < $.expensive)].title", `["Sayings of the Century","Moby Dick"]`},
		{"filter current element", store, "$.n[?(@ >= 4)]", `[4,5]`},
		{"filter numbers numerically", store, "$.mixed[?(@ == 1)]", `[1,1.0]`},
		{"filter string is not number", store, "$.mixed[?(@ == '1')]", `["1"]`},
		{"filter true", store, "$.mixed[?(@ == true)]", `[true]`},
		{"filter null", store, "$.mixed[?(@ == null)]", `[null]`},
		{"filter string order", store, "$.store.book[?(@.author < 'H')].author", `["Evelyn Waugh"]`},
		{"filter orders only numbers with numbers", store, "$.mixed[?(@ > 0)]", `[1,1.0]`},
		{"filter orders only strings with strings", store, "$.mixed[?(@ >= 'a')]", `["x"]`},
		{"filter on object tests the object", store, "$.store.bicycle[?(@.color == 'red')].price", `[19.95]`},
		{"filter no match", store, "$.store.book[?(@.price > 100)]", `[]`},
		{"filter nested path", `{"xs": [{"a": {"b": 1}}, {"a": {"b": 2}}]}`, "$.xs[?(@.a.b == 2)]", `[{"a":{"b":2}}]`},
		{"filter exponent number", store, "$.n[?(@ > 3e0)]", `[4,5]`},
		{"filter negative number", `{"xs": [-2, -1, 0]}`, "$.xs[?(@ < -1)]", `[-2]`},
		{"wildcard on scalar", store, "$.expensive[*]", `[]`},
		{"context", ctx, "$$.Execution.Id", `"arn:exec"`},
		{"context root", ctx, "$$", ctx},
		{"context map index", ctx, "$$.Map.Item.Index", `2`},
		{"unicode name", `{"héllo": {"wörld": 1}}`, "$.héllo.wörld", `1`},
		{"dash and colon in names", `{"a-b": {"c:d": 1}}`, "$.a-b.c:d", `1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := mustDecode(t, tc.data)
			var ctx any = map[string]any{"unused": true}
			if strings.HasPrefix(tc.path, "$$") {
				ctx, data = data, nil
			}
			got, err := Query(tc.path, data, ctx)
			if err != nil {
				t.Fatalf("Query(%q): %v", tc.path, err)
			}
			if g, w := mustEncode(t, got), canon(t, tc.want); g != w {
				t.Errorf("Query(%q) = %s, want %s", tc.path, g, w)
			}
		})
	}
}

func TestQueryMissing(t *testing.T) {
	data := mustDecode(t, store)
	tests := []struct{ path, reason string }{
		{"$.nope", `no field "nope" at $`},
		{"$.store.book[9]", "index 9 out of range at $.store.book (length 4)"},
		{"$.store.book[-5]", "index -5 out of range"},
		{"$.store.bicycle[0]", "$.store.bicycle is object, not an array"},
		{"$.expensive.x", "$.expensive is number, not an object"},
		{"$['a b'].x", `no field "x" at $['a b']`},
		{"$$.Execution", "$$ is null, not an object"},
		{"$.a[", "at offset"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			_, err := Query(tc.path, data, nil)
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Fatalf("Query(%q) error = %v, want *PathError", tc.path, err)
			}
			if pe.Path != tc.path || !strings.Contains(pe.Reason, tc.reason) {
				t.Errorf("Query(%q) = %v, want reason containing %q", tc.path, err, tc.reason)
			}
		})
	}
}

func TestCheckPath(t *testing.T) {
	valid := []string{
		"$", "$$", "$.a", "$.a.b", "$['a b']", `$["a"]`, "$.a[0]", "$.a[-1]", "$.a[*]", "$.a.*",
		"$.a[1:3]", "$.a[:]", "$.a[::2]", "$.a[0,2]", "$['a','b']", "$..a", "$..*", "$..[0]",
		"$.a[?(@.x > 1)]", "$.a[?(@.x == 'y' && !@.z || (@.w != null))]", "$.a[?(@ == true)]",
		"$.a[?(@.x <= $.max)]", "$$.Execution.Input.x", "$.a[ ?(@.x) ]",
	}
	for _, p := range valid {
		if err := CheckPath(p); err != nil {
			t.Errorf("CheckPath(%q) = %v, want nil", p, err)
		}
	}
	invalid := []struct{ path, msg string }{
		{"", `must start with "$"`},
		{"a.b", `must start with "$"`},
		{"$a", "unexpected 'a' after the path"},
		{"$.", "expected a field name"},
		{"$.a.", "expected a field name"},
		{"$.a[", "expected *, ?(, a quoted name or an index"},
		{"$.a[0", `expected "]"`},
		{"$.a[x]", "expected *, ?(, a quoted name or an index"},
		{"$['a]", "unterminated string"},
		{`$['a\q']`, `invalid escape \q`},
		{"$.a[1:2:0]", "slice step cannot be 0"},
		{"$.a[0,]", "expected an index in the union"},
		{"$['a',0]", "expected a quoted name in the union"},
		{"$.a b", "unexpected ' ' after the path"},
		{"$...a", "expected a field name"},
		{"$.a[?(@.x = 1)]", "expected a comparison operator"},
		{"$.a[?(@.x > )]", "expected @path, $path, a string"},
		{"$.a[?(1)]", "a literal alone is not a condition"},
		{"$.a[?(@.x > 1]", `expected ")"`},
		{"$.a[?@.x]", `expected "("`},
		{"$.a[99999999999999999999]", `invalid index "99999999999999999999"`},
		{"$.a[-]", `invalid index "-"`},
	}
	for _, tc := range invalid {
		err := CheckPath(tc.path)
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("CheckPath(%q) = %v, want *SyntaxError containing %q", tc.path, err, tc.msg)
		}
	}
}

func TestCheckReferencePath(t *testing.T) {
	for _, p := range []string{"$", "$$", "$.a", "$.a.b[0]", "$['a b'][-1]", "$$.Execution.Id"} {
		if err := CheckReferencePath(p); err != nil {
			t.Errorf("CheckReferencePath(%q) = %v, want nil", p, err)
		}
	}
	for _, tc := range []struct{ path, msg string }{
		{"$.a[*]", "wildcards"},
		{"$.a.*", "wildcards"},
		{"$..a", "recursive descent"},
		{"$.a[1:2]", "slices"},
		{"$.a[0,1]", "unions"},
		{"$['a','b']", "unions"},
		{"$.a[?(@.b)]", "filters"},
		{"x", `must start with "$"`},
	} {
		if err := CheckReferencePath(tc.path); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("CheckReferencePath(%q) = %v, want error containing %q", tc.path, err, tc.msg)
		}
	}
}

func TestSet(t *testing.T) {
	tests := []struct {
		name, data, path, value, want string
	}{
		// The spec's ResultPath examples.
		{"spec replace detail", `{"master": {"detail": [1, 2, 3]}}`, "$.master.detail", `"Hello, AWS Step Functions!"`,
			`{"master": {"detail": "Hello, AWS Step Functions!"}}`},
		{"spec new field", `{"master": {"detail": [1, 2, 3]}}`, "$.master.result", `"Hello"`,
			`{"master": {"detail": [1, 2, 3], "result": "Hello"}}`},
		{"root replaces", `{"a": 1}`, "$", `{"b": 2}`, `{"b": 2}`},
		{"root of scalar", `3`, "$", `4`, `4`},
		{"creates objects", `{"a": 1}`, "$.x.y.z", `true`, `{"a": 1, "x": {"y": {"z": true}}}`},
		{"index", `{"a": [1, 2, 3]}`, "$.a[1]", `"two"`, `{"a": [1, "two", 3]}`},
		{"negative index", `{"a": [1, 2, 3]}`, "$.a[-1]", `0`, `{"a": [1, 2, 0]}`},
		{"into array element", `{"a": [{"b": 1}]}`, "$.a[0].c", `2`, `{"a": [{"b": 1, "c": 2}]}`},
		{"bracket names", `{}`, "$['a b']['c']", `null`, `{"a b": {"c": null}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := mustDecode(t, tc.data)
			before := mustEncode(t, data)
			got, err := Set(data, tc.path, mustDecode(t, tc.value))
			if err != nil {
				t.Fatalf("Set(%q): %v", tc.path, err)
			}
			if g, w := mustEncode(t, got), canon(t, tc.want); g != w {
				t.Errorf("Set(%q) = %s, want %s", tc.path, g, w)
			}
			if after := mustEncode(t, data); after != before {
				t.Errorf("Set mutated its input: %s, was %s", after, before)
			}
		})
	}
}

func TestSetErrors(t *testing.T) {
	tests := []struct{ name, data, path, reason string }{
		{"through a string", `{"a": "s"}`, "$.a.b", "$.a is string, not an object"},
		{"through null", `{"a": null}`, "$.a.b", "$.a is null, not an object"},
		{"root not object", `[1]`, "$.a", "$ is array, not an object"},
		{"index out of range", `{"a": [1]}`, "$.a[1]", "index 1 out of range at $.a (length 1)"},
		{"index into object", `{"a": {}}`, "$.a[0]", "$.a is object, not an array"},
		{"index into missing", `{}`, "$.a[0]", "$.a is missing, not an array"},
		{"not a reference path", `{}`, "$.a[*]", "wildcards"},
		{"context", `{}`, "$$.a", "context object"},
		{"syntax", `{}`, "$.", "expected a field name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Set(mustDecode(t, tc.data), tc.path, json.Number("1"))
			var pe *PathError
			if !errors.As(err, &pe) || !strings.Contains(pe.Reason, tc.reason) {
				t.Errorf("Set(%q) error = %v, want *PathError with %q", tc.path, err, tc.reason)
			}
		})
	}
}

func TestDecodeEncode(t *testing.T) {
	v, err := Decode([]byte(`{"b": 1.50, "a": "<&>", "c": [1e3, null]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustEncode(t, v), `{"a":"<&>","b":1.50,"c":[1e3,null]}`; got != want {
		t.Errorf("Encode = %s, want %s", got, want)
	}
	if _, ok := v.(map[string]any)["b"].(json.Number); !ok {
		t.Errorf("numbers should decode as json.Number")
	}
	for _, bad := range []string{``, `{`, `1 2`, `{"a":1}x`} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%q) = nil error", bad)
		}
	}
}
