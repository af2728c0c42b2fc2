package asl

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/minik8s/minik8s/pkg/workflow/asl/expr"
)

// eval evaluates a Choice rule against the state's effective input. A
// comparison of values of different types is false; a Variable (or a
// ...Path operand) that selects nothing is a States.Runtime error, as in
// AWS, except for IsPresent, which is what it tests.
func (r *ChoiceRule) eval(in any, ctx map[string]any) (bool, *stateError) {
	switch {
	case r.And != nil:
		for _, c := range r.And {
			ok, err := c.eval(in, ctx)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case r.Or != nil:
		for _, c := range r.Or {
			ok, err := c.eval(in, ctx)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case r.Not != nil:
		ok, err := r.Not.eval(in, ctx)
		return !ok, err
	}
	v, present := selectValue(r.Variable, in, ctx)
	if r.Operator == "IsPresent" {
		return present == r.Value.(bool), nil
	}
	if !present {
		return false, runtimeError("Invalid path %q: the Choice rule's Variable selects nothing in the input", r.Variable)
	}
	kind, isPath, _ := operatorKind(r.Operator)
	op := r.Operator
	want := r.Value
	if isPath {
		op = strings.TrimSuffix(op, "Path")
		var ok bool
		want, ok = selectValue(r.ValuePath, in, ctx)
		if !ok {
			return false, runtimeError("Invalid path %q: the Choice rule's %s selects nothing in the input", r.ValuePath, r.Operator)
		}
	}
	switch kind {
	case kindTest:
		b, _ := want.(bool)
		var is bool
		switch op {
		case "IsNull":
			is = v == nil
		case "IsNumeric":
			_, is = toFloat(v)
		case "IsString":
			_, is = v.(string)
		case "IsBoolean":
			_, is = v.(bool)
		case "IsTimestamp":
			s, ok := v.(string)
			if ok {
				_, is = timestamp(s)
			}
		}
		return is == b, nil
	case kindMatch:
		s, ok1 := v.(string)
		pattern, ok2 := want.(string)
		return ok1 && ok2 && stringMatches(s, pattern), nil
	case kindString:
		a, ok1 := v.(string)
		b, ok2 := want.(string)
		if !ok1 || !ok2 {
			return false, nil
		}
		return compareOp(op, strings.Compare(a, b)), nil
	case kindNumber:
		a, ok1 := toFloat(v)
		b, ok2 := toFloat(want)
		if !ok1 || !ok2 {
			return false, nil
		}
		c := 0
		if a < b {
			c = -1
		} else if a > b {
			c = 1
		}
		return compareOp(op, c), nil
	case kindBoolean:
		a, ok1 := v.(bool)
		b, ok2 := want.(bool)
		return ok1 && ok2 && a == b, nil
	case kindTimestamp:
		as, ok1 := v.(string)
		bs, ok2 := want.(string)
		if !ok1 || !ok2 {
			return false, nil
		}
		a, ok1 := timestamp(as)
		b, ok2 := timestamp(bs)
		if !ok1 || !ok2 {
			return false, nil
		}
		return compareOp(op, a.Compare(b)), nil
	}
	return false, nil
}

// selectValue evaluates a Choice Path: whether it selects anything, and
// what. An indefinite path that selects nothing is not present.
func selectValue(p string, in any, ctx map[string]any) (any, bool) {
	v, err := expr.Query(p, in, ctx)
	if err != nil {
		return nil, false
	}
	if a, ok := v.([]any); ok && len(a) == 0 && expr.CheckReferencePath(p) != nil {
		return nil, false
	}
	return v, true
}

// compareOp applies the relation the operator names (by its suffix) to
// the result of a three-way comparison.
func compareOp(op string, c int) bool {
	switch {
	case strings.HasSuffix(op, "GreaterThanEquals"):
		return c >= 0
	case strings.HasSuffix(op, "LessThanEquals"):
		return c <= 0
	case strings.HasSuffix(op, "GreaterThan"):
		return c > 0
	case strings.HasSuffix(op, "LessThan"):
		return c < 0
	default: // ...Equals
		return c == 0
	}
}

// toFloat returns a JSON number as float64.
func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		return f, err == nil
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// stringMatches matches s against a StringMatches pattern: "*" matches any
// run of characters; a backslash makes the next character literal ("\*"
// for an asterisk, "\\" for a backslash).
func stringMatches(s, pattern string) bool {
	// Split the pattern into literal segments around unescaped stars.
	var segs []string
	var cur strings.Builder
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < len(pattern):
			i++
			cur.WriteByte(pattern[i])
		case c == '*':
			segs = append(segs, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	segs = append(segs, cur.String())
	if len(segs) == 1 {
		return s == segs[0]
	}
	first, last := segs[0], segs[len(segs)-1]
	if !strings.HasPrefix(s, first) {
		return false
	}
	s = s[len(first):]
	for _, seg := range segs[1 : len(segs)-1] {
		i := strings.Index(s, seg)
		if i < 0 {
			return false
		}
		s = s[i+len(seg):]
	}
	return strings.HasSuffix(s, last)
}
