package expr

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math/big"
	"math/rand"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits AWS Step Functions puts on intrinsic arguments and results.
const (
	maxArrayRange   = 1000
	maxBase64Input  = 10000
	maxHashInput    = 10000
	maxStringInputs = 10000
)

// function is one intrinsic: its argument count (max < 0: no limit) and
// its body, which gets evaluated arguments.
type function struct {
	min, max int
	call     func(e *env, args []any) (any, error)
}

func (f *function) arity() string {
	switch {
	case f.max < 0:
		return fmt.Sprintf("at least %d arguments", f.min)
	case f.min == f.max && f.min == 1:
		return "1 argument"
	case f.min == f.max:
		return fmt.Sprintf("%d arguments", f.min)
	}
	return fmt.Sprintf("%d to %d arguments", f.min, f.max)
}

// functions is the fixed table of intrinsic functions by name.
var functions = map[string]*function{
	"States.Format":         {1, -1, format},
	"States.StringToJson":   {1, 1, stringToJSON},
	"States.JsonToString":   {1, 1, jsonToString},
	"States.Array":          {0, -1, array},
	"States.ArrayPartition": {2, 2, arrayPartition},
	"States.ArrayContains":  {2, 2, arrayContains},
	"States.ArrayRange":     {3, 3, arrayRange},
	"States.ArrayGetItem":   {2, 2, arrayGetItem},
	"States.ArrayLength":    {1, 1, arrayLength},
	"States.ArrayUnique":    {1, 1, arrayUnique},
	"States.Base64Encode":   {1, 1, base64Encode},
	"States.Base64Decode":   {1, 1, base64Decode},
	"States.Hash":           {2, 2, hashFunc},
	"States.JsonMerge":      {3, 3, jsonMerge},
	"States.MathRandom":     {2, 3, mathRandom},
	"States.MathAdd":        {2, 2, mathAdd},
	"States.StringSplit":    {2, 2, stringSplit},
	"States.UUID":           {0, 0, uuid},
}

// ordinals name argument positions in errors.
var ordinals = []string{"first", "second", "third"}

func argName(i int) string {
	if i < len(ordinals) {
		return ordinals[i] + " argument"
	}
	return fmt.Sprintf("argument %d", i+1)
}

func stringArg(args []any, i int) (string, error) {
	s, ok := args[i].(string)
	if !ok {
		return "", fmt.Errorf("the %s must be a string, got %s", argName(i), typeName(args[i]))
	}
	return s, nil
}

func arrayArg(args []any, i int) ([]any, error) {
	a, ok := args[i].([]any)
	if !ok {
		return nil, fmt.Errorf("the %s must be an array, got %s", argName(i), typeName(args[i]))
	}
	return a, nil
}

func objectArg(args []any, i int) (map[string]any, error) {
	m, ok := args[i].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the %s must be an object, got %s", argName(i), typeName(args[i]))
	}
	return m, nil
}

func intArg(args []any, i int) (int64, error) {
	n, ok := asInt(args[i])
	if !ok {
		if isNumber(args[i]) {
			return 0, fmt.Errorf("the %s must be an integer, got %v", argName(i), args[i])
		}
		return 0, fmt.Errorf("the %s must be an integer, got %s", argName(i), typeName(args[i]))
	}
	return n, nil
}

// rawTemplate is a literal States.Format template as written, escapes kept.
type rawTemplate struct{ s string }

// format is States.Format(template, args...): each {} is replaced by the
// next argument; \{ \} \' and \\ are the escapes.
func format(_ *env, args []any) (any, error) {
	var tmpl string
	switch t := args[0].(type) {
	case rawTemplate:
		tmpl = t.s
	case string:
		tmpl = t
	default:
		return nil, fmt.Errorf("the template must be a string, got %s", typeName(args[0]))
	}
	n, err := countPlaceholders(tmpl)
	if err != nil {
		return nil, err
	}
	if n != len(args)-1 {
		return nil, fmt.Errorf("the template has %d placeholders but %d arguments follow it", n, len(args)-1)
	}
	var b strings.Builder
	next := 1
	for i := 0; i < len(tmpl); i++ {
		switch c := tmpl[i]; {
		case c == '\\' && i+1 < len(tmpl) && strings.IndexByte(`'{}\`, tmpl[i+1]) >= 0:
			i++
			b.WriteByte(tmpl[i])
		case c == '{':
			i++ // countPlaceholders checked that "}" follows
			s, err := formatValue(args[next], next)
			if err != nil {
				return nil, err
			}
			b.WriteString(s)
			next++
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// countPlaceholders counts the {} of a template and rejects a lone brace.
func countPlaceholders(tmpl string) (int, error) {
	n := 0
	for i := 0; i < len(tmpl); i++ {
		switch tmpl[i] {
		case '\\':
			if i+1 < len(tmpl) && strings.IndexByte(`'{}\`, tmpl[i+1]) >= 0 {
				i++
			}
		case '{':
			if i+1 >= len(tmpl) || tmpl[i+1] != '}' {
				return 0, fmt.Errorf("unescaped \"{\" at offset %d of the template: write {} for an argument or \\{ for a brace", i)
			}
			i++
			n++
		case '}':
			return 0, fmt.Errorf("unescaped \"}\" at offset %d of the template: write \\} for a brace", i)
		}
	}
	return n, nil
}

func formatValue(v any, i int) (string, error) {
	switch x := v.(type) {
	case nil:
		return "null", nil
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case json.Number:
		return string(x), nil
	case map[string]any, []any:
		return "", fmt.Errorf("the %s must be a string, number, boolean or null, got %s", argName(i), typeName(v))
	}
	if isNumber(v) {
		b, err := Encode(v)
		return string(b), err
	}
	return "", fmt.Errorf("the %s must be a string, number, boolean or null, got %s", argName(i), typeName(v))
}

func stringToJSON(_ *env, args []any) (any, error) {
	s, err := stringArg(args, 0)
	if err != nil {
		return nil, err
	}
	v, err := Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("the argument is not JSON: %w", err)
	}
	return v, nil
}

func jsonToString(_ *env, args []any) (any, error) {
	b, err := Encode(args[0])
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func array(_ *env, args []any) (any, error) {
	out := make([]any, len(args))
	copy(out, args)
	return out, nil
}

func arrayPartition(_ *env, args []any) (any, error) {
	a, err := arrayArg(args, 0)
	if err != nil {
		return nil, err
	}
	size, err := intArg(args, 1)
	if err != nil {
		return nil, err
	}
	if size <= 0 {
		return nil, fmt.Errorf("the chunk size must be positive, got %d", size)
	}
	out := []any{}
	for len(a) > 0 {
		n := int(min(size, int64(len(a))))
		out = append(out, append([]any{}, a[:n]...))
		a = a[n:]
	}
	return out, nil
}

func arrayContains(_ *env, args []any) (any, error) {
	a, err := arrayArg(args, 0)
	if err != nil {
		return nil, err
	}
	for _, x := range a {
		if equal(x, args[1]) {
			return true, nil
		}
	}
	return false, nil
}

// arrayRange is States.ArrayRange(start, end, step): start, start+step,
// ... up to and including end, at most 1000 elements.
func arrayRange(_ *env, args []any) (any, error) {
	var v [3]int64
	for i := range v {
		n, err := intArg(args, i)
		if err != nil {
			return nil, err
		}
		v[i] = n
	}
	start, end, step := v[0], v[1], v[2]
	if step == 0 {
		return nil, errors.New("the step must not be 0")
	}
	out := []any{}
	if step > 0 && start > end || step < 0 && start < end {
		return out, nil
	}
	count := new(big.Int).Sub(big.NewInt(end), big.NewInt(start))
	count.Quo(count, big.NewInt(step))
	count.Add(count, big.NewInt(1))
	if count.Cmp(big.NewInt(maxArrayRange)) > 0 {
		return nil, fmt.Errorf("the range has %s elements, more than the limit of %d", count, maxArrayRange)
	}
	for i, n := start, count.Int64(); n > 0; i, n = i+step, n-1 {
		out = append(out, intNumber(i))
	}
	return out, nil
}

func arrayGetItem(_ *env, args []any) (any, error) {
	a, err := arrayArg(args, 0)
	if err != nil {
		return nil, err
	}
	i, err := intArg(args, 1)
	if err != nil {
		return nil, err
	}
	if i < 0 || i >= int64(len(a)) {
		return nil, fmt.Errorf("index %d is out of range for an array of length %d", i, len(a))
	}
	return a[i], nil
}

func arrayLength(_ *env, args []any) (any, error) {
	a, err := arrayArg(args, 0)
	if err != nil {
		return nil, err
	}
	return intNumber(int64(len(a))), nil
}

// arrayUnique keeps the first of each set of equal elements, in order.
func arrayUnique(_ *env, args []any) (any, error) {
	a, err := arrayArg(args, 0)
	if err != nil {
		return nil, err
	}
	out := []any{}
	seen := map[string]bool{}
	for _, x := range a {
		key, ok := canonicalKey(x)
		if ok {
			if seen[key] {
				continue
			}
			seen[key] = true
		} else if containsEqual(out, x) {
			continue
		}
		out = append(out, x)
	}
	return out, nil
}

// canonicalKey is a map key for values that equal compares exactly by
// their encoding: everything without numbers that could be written two
// ways. ok is false for the rest, which fall back to a linear scan.
func canonicalKey(v any) (string, bool) {
	switch x := v.(type) {
	case nil, bool, string:
		b, err := Encode(x)
		return string(b), err == nil
	case json.Number:
		if i, ok := exactInt(x); ok {
			return string(intNumber(i)), true
		}
	}
	return "", false
}

func containsEqual(a []any, v any) bool {
	for _, x := range a {
		if equal(x, v) {
			return true
		}
	}
	return false
}

func base64Encode(_ *env, args []any) (any, error) {
	s, err := stringArg(args, 0)
	if err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(s); n > maxBase64Input {
		return nil, fmt.Errorf("the input has %d characters, more than the limit of %d", n, maxBase64Input)
	}
	return base64.StdEncoding.EncodeToString([]byte(s)), nil
}

func base64Decode(_ *env, args []any) (any, error) {
	s, err := stringArg(args, 0)
	if err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(s); n > maxBase64Input {
		return nil, fmt.Errorf("the input has %d characters, more than the limit of %d", n, maxBase64Input)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("the input is not base64: %w", err)
	}
	return string(b), nil
}

// hashFunc is States.Hash(data, algorithm), hex in lower case.
func hashFunc(_ *env, args []any) (any, error) {
	data, err := stringArg(args, 0)
	if err != nil {
		return nil, err
	}
	alg, err := stringArg(args, 1)
	if err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(data); n > maxHashInput {
		return nil, fmt.Errorf("the input has %d characters, more than the limit of %d", n, maxHashInput)
	}
	var h hash.Hash
	switch alg {
	case "MD5":
		h = md5.New()
	case "SHA-1":
		h = sha1.New()
	case "SHA-256":
		h = sha256.New()
	case "SHA-384":
		h = sha512.New384()
	case "SHA-512":
		h = sha512.New()
	default:
		return nil, fmt.Errorf("unknown algorithm %q: use MD5, SHA-1, SHA-256, SHA-384 or SHA-512", alg)
	}
	h.Write([]byte(data))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// jsonMerge is States.JsonMerge(a, b, false): a shallow merge where b's
// members win. AWS Step Functions supports only the shallow mode.
func jsonMerge(_ *env, args []any) (any, error) {
	a, err := objectArg(args, 0)
	if err != nil {
		return nil, err
	}
	b, err := objectArg(args, 1)
	if err != nil {
		return nil, err
	}
	deep, ok := args[2].(bool)
	if !ok {
		return nil, fmt.Errorf("the third argument (deep merge) must be a boolean, got %s", typeName(args[2]))
	}
	if deep {
		return nil, errors.New("deep merge is not supported: the third argument must be false")
	}
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out, nil
}

// mathRandom is States.MathRandom(start, end[, seed]): an integer n with
// start <= n < end. A seed makes the result the same on every run.
func mathRandom(e *env, args []any) (any, error) {
	start, err := intArg(args, 0)
	if err != nil {
		return nil, err
	}
	end, err := intArg(args, 1)
	if err != nil {
		return nil, err
	}
	if end <= start {
		return nil, fmt.Errorf("the end (%d) must be greater than the start (%d)", end, start)
	}
	span := uint64(end) - uint64(start)
	if span > 1<<63-1 {
		return nil, fmt.Errorf("the range from %d to %d is too large", start, end)
	}
	rnd := e.rnd
	if len(args) == 3 {
		seed, err := intArg(args, 2)
		if err != nil {
			return nil, err
		}
		rnd = rand.New(rand.NewSource(seed))
	}
	var n int64
	if rnd != nil {
		n = rnd.Int63n(int64(span))
	} else {
		n = rand.Int63n(int64(span))
	}
	return intNumber(start + n), nil
}

func mathAdd(_ *env, args []any) (any, error) {
	a, err := intArg(args, 0)
	if err != nil {
		return nil, err
	}
	b, err := intArg(args, 1)
	if err != nil {
		return nil, err
	}
	sum := a + b
	if (sum > a) != (b > 0) {
		return nil, fmt.Errorf("%d + %d overflows a 64-bit integer", a, b)
	}
	return intNumber(sum), nil
}

// stringSplit is States.StringSplit(s, delimiters): s cut at every
// character of delimiters, empty pieces dropped.
func stringSplit(_ *env, args []any) (any, error) {
	s, err := stringArg(args, 0)
	if err != nil {
		return nil, err
	}
	delims, err := stringArg(args, 1)
	if err != nil {
		return nil, err
	}
	if delims == "" {
		return nil, errors.New("the delimiters must not be empty")
	}
	if n := utf8.RuneCountInString(s); n > maxStringInputs {
		return nil, fmt.Errorf("the input has %d characters, more than the limit of %d", n, maxStringInputs)
	}
	out := []any{}
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(delims, r) }) {
		out = append(out, p)
	}
	return out, nil
}

// uuid is a version 4 UUID drawn from the environment's randomness.
func uuid(e *env, _ []any) (any, error) {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		var u uint64
		if e.rnd != nil {
			u = e.rnd.Uint64()
		} else {
			u = rand.Uint64()
		}
		for j := range 8 {
			b[i+j] = byte(u >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}
