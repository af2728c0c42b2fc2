package expr

import (
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
)

// TemplateError is a problem with the field at Key of a payload template:
// object keys as written (with ".$"), array elements as "[i]".
type TemplateError struct {
	Key []string
	Err error
}

func (e TemplateError) Error() string { return joinKey(e.Key) + ": " + e.Err.Error() }

func joinKey(key []string) string {
	var b strings.Builder
	for i, k := range key {
		if i > 0 && !strings.HasPrefix(k, "[") {
			b.WriteByte('.')
		}
		b.WriteString(k)
	}
	return b.String()
}

// CheckPayload validates a payload template (Parameters, ResultSelector,
// ItemSelector): every key ending in ".$" holds a string that is a Path, a
// context Path ($$...) or an intrinsic call, and no object has both "k"
// and "k.$". Nested objects and arrays are walked.
func CheckPayload(tmpl any) []TemplateError {
	var errs []TemplateError
	checkTemplate(tmpl, nil, &errs)
	return errs
}

func checkTemplate(t any, key []string, errs *[]TemplateError) {
	switch t := t.(type) {
	case map[string]any:
		for _, k := range sortedKeys(t) {
			at := append(key[:len(key):len(key)], k)
			name, dynamic := strings.CutSuffix(k, ".$")
			if !dynamic {
				checkTemplate(t[k], at, errs)
				continue
			}
			if _, dup := t[name]; dup {
				*errs = append(*errs, TemplateError{Key: at, Err: fmt.Errorf("both %q and %q are present", name, k)})
			}
			if err := checkDynamic(t[k]); err != nil {
				*errs = append(*errs, TemplateError{Key: at, Err: err})
			}
		}
	case []any:
		for i, x := range t {
			checkTemplate(x, append(key[:len(key):len(key)], "["+strconv.Itoa(i)+"]"), errs)
		}
	}
}

func checkDynamic(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("a field ending in \".$\" must hold a string, got %s", typeName(v))
	}
	switch {
	case strings.HasPrefix(s, "$"):
		if err := CheckPath(s); err != nil {
			return fmt.Errorf("invalid path: %w", err)
		}
	case IsIntrinsic(s):
		if err := CheckIntrinsic(s); err != nil {
			return fmt.Errorf("invalid intrinsic function: %w", err)
		}
	default:
		return fmt.Errorf("%q is neither a path ($..., $$...) nor an intrinsic function (States.Xxx(...))", s)
	}
	return nil
}

// Payload resolves a template against input and ctx: a key "k.$" becomes
// "k" holding the value of its Path ("$..." on input, "$$..." on ctx) or
// intrinsic call; other values are copied, objects and arrays walked. A
// path that matches nothing is a *PathError, a failing intrinsic an
// *IntrinsicError; their Reason names the field. The result may share
// structure with input and ctx.
func Payload(tmpl, input, ctx any, rnd *rand.Rand) (any, error) {
	return resolve(tmpl, input, ctx, rnd, nil)
}

func resolve(t, input, ctx any, rnd *rand.Rand, key []string) (any, error) {
	switch t := t.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for _, k := range sortedKeys(t) {
			at := append(key[:len(key):len(key)], k)
			name, dynamic := strings.CutSuffix(k, ".$")
			if !dynamic {
				v, err := resolve(t[k], input, ctx, rnd, at)
				if err != nil {
					return nil, err
				}
				out[k] = v
				continue
			}
			v, err := resolveDynamic(t[k], input, ctx, rnd, joinKey(at))
			if err != nil {
				return nil, err
			}
			out[name] = v
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			v, err := resolve(x, input, ctx, rnd, append(key[:len(key):len(key)], "["+strconv.Itoa(i)+"]"))
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return t, nil
}

func resolveDynamic(v, input, ctx any, rnd *rand.Rand, field string) (any, error) {
	s, ok := v.(string)
	if !ok {
		return nil, &PathError{Path: fmt.Sprint(v), Reason: fmt.Sprintf("field %q must hold a string, got %s", field, typeName(v))}
	}
	var (
		out any
		err error
	)
	switch {
	case strings.HasPrefix(s, "$"):
		out, err = Query(s, input, ctx)
	case IsIntrinsic(s):
		out, err = Intrinsic(s, input, ctx, rnd)
	default:
		return nil, &PathError{Path: s, Reason: fmt.Sprintf("field %q holds neither a path nor an intrinsic function", field)}
	}
	var pe *PathError
	var ie *IntrinsicError
	switch {
	case errors.As(err, &pe):
		return nil, &PathError{Path: pe.Path, Reason: fmt.Sprintf("field %q: %s", field, pe.Reason)}
	case errors.As(err, &ie):
		return nil, &IntrinsicError{Func: ie.Func, Reason: fmt.Sprintf("field %q: %s", field, ie.Reason)}
	case err != nil:
		return nil, err
	}
	return out, nil
}
