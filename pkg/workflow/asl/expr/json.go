package expr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Decode parses JSON bytes into a value, keeping numbers as json.Number.
// Anything after the first value other than white space is an error.
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("decode JSON: unexpected data after the value")
	}
	return v, nil
}

// Encode is the inverse of Decode: compact JSON with object keys sorted (as
// encoding/json does), json.Number written verbatim and HTML characters left
// unescaped, so the same value always encodes to the same bytes.
func Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode JSON: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// asInt returns v as an int64 when it is a JSON number with an integral
// value that fits (1, -3, 2.0, 1e2).
func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i, true
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return 0, false
		}
		return floatInt(f)
	case float64:
		return floatInt(n)
	case int:
		return int64(n), true
	case int64:
		return n, true
	}
	return 0, false
}

func floatInt(f float64) (int64, bool) {
	if f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// asFloat returns v as a float64 when it is a JSON number.
func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil && !isRangeErr(err) {
			return 0, false
		}
		return f, true
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func isNumber(v any) bool {
	_, ok := asFloat(v)
	return ok
}

func intNumber(i int64) json.Number { return json.Number(strconv.FormatInt(i, 10)) }

// compareNumbers orders two JSON numbers: exactly when both are int64,
// else as float64.
func compareNumbers(a, b any) (int, bool) {
	if ia, ok := exactInt(a); ok {
		if ib, ok := exactInt(b); ok {
			return cmpInt(ia, ib), true
		}
	}
	fa, ok1 := asFloat(a)
	fb, ok2 := asFloat(b)
	if !ok1 || !ok2 {
		return 0, false
	}
	switch {
	case fa < fb:
		return -1, true
	case fa > fb:
		return 1, true
	case fa == fb:
		return 0, true
	}
	return 0, false // NaN
}

// exactInt is asInt restricted to numbers written as integers, so that big
// integers are compared without a detour through float64.
func exactInt(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := strconv.ParseInt(string(n), 10, 64)
		return i, err == nil
	case int:
		return int64(n), true
	case int64:
		return n, true
	}
	return 0, false
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// equal is deep equality of JSON values, numbers compared by value.
func equal(a, b any) bool {
	if isNumber(a) || isNumber(b) {
		c, ok := compareNumbers(a, b)
		return ok && c == 0
	}
	switch a := a.(type) {
	case nil:
		return b == nil
	case string:
		s, ok := b.(string)
		return ok && a == s
	case bool:
		x, ok := b.(bool)
		return ok && a == x
	case map[string]any:
		m, ok := b.(map[string]any)
		if !ok || len(a) != len(m) {
			return false
		}
		for k, v := range a {
			w, ok := m[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		l, ok := b.([]any)
		if !ok || len(a) != len(l) {
			return false
		}
		for i := range a {
			if !equal(a[i], l[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// typeName names the JSON type of v for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	if isNumber(v) {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}
