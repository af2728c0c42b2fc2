package expr

import "testing"

// FuzzParse checks that no input makes the parsers or evaluators panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"$.a[?(@.x > 1 && !(@.y == 'z'))]", "$..a[1:-1:2]", "$['a','b'][0,1]", "$$.x",
		"States.Format('{} \\' \\{', $.a[?(@ == 1)])", "States.ArrayRange(1, 9, 2)",
		"States.JsonMerge($.a, States.StringToJson('{}'), false)",
	} {
		f.Add(s)
	}
	data := map[string]any{"a": []any{map[string]any{"x": "1"}, "s"}, "b": map[string]any{"c": nil}}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckPath(s) == nil {
			_, _ = Query(s, data, data)
			_, _ = Set(data, s, nil)
		}
		if CheckIntrinsic(s) == nil {
			_, _ = Intrinsic(s, data, data, nil)
		}
	})
}
