package asl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/workflow/asl/expr"
)

// decoder decodes a definition strictly, field by field, so that every
// problem is reported at its exact path and every field the States
// Language does not define is rejected.
type decoder struct {
	errs field.ErrorList
}

func (d *decoder) add(err *field.Error) { d.errs = append(d.errs, err) }

// object is one JSON object of the definition being decoded. Fields are
// taken one by one; done reports those nobody took.
type object struct {
	d      *decoder
	path   *field.Path
	fields map[string]json.RawMessage
	taken  map[string]bool
}

// jsonKind names the kind of a JSON value by its first byte.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch c := raw[0]; {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	default:
		return "number"
	}
}

// shown is how a raw value appears in an error: short JSON text.
func shown(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// object decodes raw as a JSON object at p, or reports that it is not one
// and returns nil.
func (d *decoder) object(raw json.RawMessage, p *field.Path) *object {
	if jsonKind(raw) != "object" {
		d.add(field.Invalid(p, shown(raw), "must be a JSON object"))
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		d.add(field.Invalid(p, shown(raw), fmt.Sprintf("must be a JSON object: %v", err)))
		return nil
	}
	return &object{d: d, path: p, fields: m, taken: map[string]bool{}}
}

func (o *object) has(k string) bool {
	_, ok := o.fields[k]
	return ok
}

// take returns field k and marks it as known.
func (o *object) take(k string) (json.RawMessage, bool) {
	raw, ok := o.fields[k]
	if ok {
		o.taken[k] = true
	}
	return raw, ok
}

// str returns string field k; a value of another kind is reported.
func (o *object) str(k string) (string, bool) {
	raw, ok := o.take(k)
	if !ok {
		return "", false
	}
	var s string
	if jsonKind(raw) != "string" || json.Unmarshal(raw, &s) != nil {
		o.d.add(field.Invalid(o.path.Child(k), shown(raw), "must be a string"))
		return "", false
	}
	return s, true
}

// target returns field k, the name of a state to go to: a string that is
// not empty. Whether that state exists is checked with the whole machine.
func (o *object) target(k string, required bool) string {
	if !o.has(k) {
		if required {
			o.d.add(field.Required(o.path.Child(k), "the name of the state to go to"))
		}
		return ""
	}
	s, ok := o.str(k)
	if ok && s == "" {
		o.d.add(field.Invalid(o.path.Child(k), s, "must name a state"))
	}
	return s
}

// requiredStr is str, reporting an absent field.
func (o *object) requiredStr(k, what string) (string, bool) {
	if !o.has(k) {
		o.d.add(field.Required(o.path.Child(k), what))
		return "", false
	}
	return o.str(k)
}

func (o *object) boolean(k string) (bool, bool) {
	raw, ok := o.take(k)
	if !ok {
		return false, false
	}
	var b bool
	if jsonKind(raw) != "boolean" || json.Unmarshal(raw, &b) != nil {
		o.d.add(field.Invalid(o.path.Child(k), shown(raw), "must be a boolean"))
		return false, false
	}
	return b, true
}

// number returns number field k.
func (o *object) number(k string) (float64, bool) {
	raw, ok := o.take(k)
	if !ok {
		return 0, false
	}
	f, err := rawNumber(raw)
	if err != nil {
		o.d.add(field.Invalid(o.path.Child(k), shown(raw), "must be a number"))
		return 0, false
	}
	return f, true
}

func rawNumber(raw json.RawMessage) (float64, error) {
	if jsonKind(raw) != "number" {
		return 0, fmt.Errorf("not a number")
	}
	return strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
}

// integer returns integer field k, which must lie in [lo, hi].
func (o *object) integer(k string, lo, hi int) (int, bool) {
	raw, ok := o.take(k)
	if !ok {
		return 0, false
	}
	f, err := rawNumber(raw)
	if err != nil || f != math.Trunc(f) {
		o.d.add(field.Invalid(o.path.Child(k), shown(raw), "must be an integer"))
		return 0, false
	}
	if f < float64(lo) || f > float64(hi) {
		msg := fmt.Sprintf("must be between %d and %d", lo, hi)
		if hi == math.MaxInt32 {
			msg = fmt.Sprintf("must be at least %d", lo)
		}
		o.d.add(field.Invalid(o.path.Child(k), shown(raw), msg))
		return 0, false
	}
	return int(f), true
}

// OptionalPath is the value of InputPath, OutputPath or ResultPath, which
// may be JSON null (distinct from absent, which means "$").
type OptionalPath struct {
	// Null: the field was JSON null.
	Null bool
	// Path is the path ("$" when the field was absent).
	Path string
}

// optionalPath decodes a Path (reference: a Reference Path) field that may
// be null; absent means "$".
func (o *object) optionalPath(k string, reference bool) OptionalPath {
	raw, ok := o.take(k)
	if !ok {
		return OptionalPath{Path: "$"}
	}
	if jsonKind(raw) == "null" {
		return OptionalPath{Null: true}
	}
	p, ok := o.path1(k, raw, reference)
	if !ok {
		return OptionalPath{Path: "$"}
	}
	return OptionalPath{Path: p}
}

// pathField decodes a non-null Path field.
func (o *object) pathField(k string, reference bool) (string, bool) {
	raw, ok := o.take(k)
	if !ok {
		return "", false
	}
	return o.path1(k, raw, reference)
}

func (o *object) path1(k string, raw json.RawMessage, reference bool) (string, bool) {
	var s string
	if jsonKind(raw) != "string" || json.Unmarshal(raw, &s) != nil {
		o.d.add(field.Invalid(o.path.Child(k), shown(raw), "must be a string"))
		return "", false
	}
	var err error
	if reference {
		err = expr.CheckReferencePath(s)
	} else {
		err = expr.CheckPath(s)
	}
	if err != nil {
		what := "a Path"
		if reference {
			what = "a Reference Path"
		}
		o.d.add(field.Invalid(o.path.Child(k), s, fmt.Sprintf("must be %s: %v", what, err)))
		return "", false
	}
	return s, true
}

// template decodes a payload template field (Parameters, ResultSelector,
// ItemSelector): a JSON object whose ".$" keys hold Paths or intrinsics.
func (o *object) template(k string) (any, bool) {
	raw, ok := o.take(k)
	if !ok {
		return nil, false
	}
	p := o.path.Child(k)
	if jsonKind(raw) != "object" {
		o.d.add(field.Invalid(p, shown(raw), "must be a JSON object"))
		return nil, false
	}
	v, err := expr.Decode(raw)
	if err != nil {
		o.d.add(field.Invalid(p, shown(raw), fmt.Sprintf("must be a JSON object: %v", err)))
		return nil, false
	}
	bad := false
	for _, te := range expr.CheckPayload(v) {
		fp := p
		for _, key := range te.Key {
			fp = fp.Child(key)
		}
		o.d.add(field.Invalid(fp, lookup(v, te.Key), te.Err.Error()))
		bad = true
	}
	return v, !bad
}

// lookup finds the value at keys in a decoded template, for error messages.
func lookup(v any, keys []string) any {
	for _, k := range keys {
		switch c := v.(type) {
		case map[string]any:
			v = c[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

// array decodes array field k into its elements.
func (o *object) array(k string) ([]json.RawMessage, bool) {
	raw, ok := o.take(k)
	if !ok {
		return nil, false
	}
	var a []json.RawMessage
	if jsonKind(raw) != "array" || json.Unmarshal(raw, &a) != nil {
		o.d.add(field.Invalid(o.path.Child(k), shown(raw), "must be an array"))
		return nil, false
	}
	return a, true
}

// stringsField decodes a non-empty array of strings.
func (o *object) stringsField(k string) ([]string, bool) {
	elems, ok := o.array(k)
	if !ok {
		return nil, false
	}
	if len(elems) == 0 {
		o.d.add(field.Required(o.path.Child(k), "must not be empty"))
		return nil, false
	}
	out := make([]string, 0, len(elems))
	good := true
	for i, e := range elems {
		var s string
		if jsonKind(e) != "string" || json.Unmarshal(e, &s) != nil {
			o.d.add(field.Invalid(o.path.Child(k).Index(i), shown(e), "must be a string"))
			good = false
			continue
		}
		out = append(out, s)
	}
	return out, good
}

// timestamp parses an RFC3339 timestamp as the States Language writes
// them (e.g. 2016-03-14T01:59:00Z).
func timestamp(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !strings.Contains(s, "T") {
		return time.Time{}, false
	}
	return t, true
}

// special explains why some fields that other flavours of the language
// define are refused.
var special = map[string]string{
	"ItemReader":    "a distributed Map (ItemReader, S3) is not supported: give the items in the input and use ItemsPath",
	"ResultWriter":  "a distributed Map (ResultWriter, S3) is not supported",
	"ItemBatcher":   "a distributed Map (ItemBatcher) is not supported",
	"Label":         "a distributed Map (Label) is not supported",
	"Arguments":     "JSONata is not supported: only JSONPath (use Parameters)",
	"Output":        "JSONata is not supported: only JSONPath (use OutputPath and ResultSelector)",
	"Assign":        "variables (Assign) are not supported",
	"Credentials":   "Task Credentials are not supported",
	"ExecutionType": "a distributed Map (ExecutionType) is not supported",
}

// done reports every field of o that no one took: a field some other
// state type has as not allowed here, any other as unknown.
func (o *object) done(where string) {
	keys := make([]string, 0, len(o.fields))
	for k := range o.fields {
		if !o.taken[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := o.path.Child(k)
		switch {
		case special[k] != "":
			o.d.add(field.Forbidden(p, special[k]))
		case where != "" && stateFields[k]:
			o.d.add(field.Forbidden(p, fmt.Sprintf("not allowed in %s", where)))
		default:
			o.d.add(field.Forbidden(p, "unknown field"))
		}
	}
}

// stateFields are the fields some state type has.
var stateFields = map[string]bool{
	"Type": true, "Comment": true, "Next": true, "End": true, "InputPath": true,
	"OutputPath": true, "ResultPath": true, "Parameters": true, "ResultSelector": true,
	"Result": true, "Retry": true, "Catch": true, "Resource": true, "TimeoutSeconds": true,
	"TimeoutSecondsPath": true, "HeartbeatSeconds": true, "HeartbeatSecondsPath": true,
	"Choices": true, "Default": true, "Seconds": true, "Timestamp": true, "SecondsPath": true,
	"TimestampPath": true, "Error": true, "Cause": true, "ErrorPath": true, "CausePath": true,
	"Branches": true, "ItemsPath": true, "ItemProcessor": true, "Iterator": true,
	"ItemSelector": true, "MaxConcurrency": true, "MaxConcurrencyPath": true,
	"ToleratedFailureCount": true, "ToleratedFailureCountPath": true,
	"ToleratedFailurePercentage": true, "ToleratedFailurePercentagePath": true,
}
