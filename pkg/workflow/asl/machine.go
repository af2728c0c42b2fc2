package asl

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/workflow/asl/expr"
)

// State types.
const (
	TypeTask     = "Task"
	TypePass     = "Pass"
	TypeChoice   = "Choice"
	TypeWait     = "Wait"
	TypeSucceed  = "Succeed"
	TypeFail     = "Fail"
	TypeParallel = "Parallel"
	TypeMap      = "Map"
)

var stateTypes = []string{TypeTask, TypePass, TypeChoice, TypeWait, TypeSucceed, TypeFail, TypeParallel, TypeMap}

// Jitter strategies of a Retrier.
const (
	JitterFull = "FULL"
	JitterNone = "NONE"
)

// maxStateName is the longest state name the language allows.
const maxStateName = 80

// Machine is a parsed and validated state machine (a whole definition, or
// a Parallel branch, or a Map's ItemProcessor).
type Machine struct {
	Comment string
	StartAt string
	Version string
	// TimeoutSeconds is the machine-wide timeout (0: none), enforced by the
	// caller.
	TimeoutSeconds int
	States         map[string]*State
}

// State is one state of a Machine. Which fields are meaningful depends on
// Type.
type State struct {
	Name    string
	Type    string
	Comment string
	// Next is the following state; End says the machine ends here.
	Next string
	End  bool

	InputPath  OptionalPath
	OutputPath OptionalPath
	ResultPath OptionalPath
	// Parameters, ResultSelector and ItemSelector are payload templates
	// (nil: absent). A Map's legacy Parameters is its ItemSelector.
	Parameters     any
	ResultSelector any
	// Result is a Pass state's result, when HasResult.
	Result    any
	HasResult bool
	Retry     []Retrier
	Catch     []Catcher

	// Task.
	Resource             string // normalised: function:<name> or workflow:<name>
	TimeoutSeconds       int
	TimeoutSecondsPath   string
	HeartbeatSeconds     int
	HeartbeatSecondsPath string

	// Choice.
	Choices []*ChoiceRule
	Default string

	// Wait: exactly one of these.
	Seconds       *int
	Timestamp     *time.Time
	SecondsPath   string
	TimestampPath string

	// Fail.
	Error     string
	Cause     string
	ErrorPath string
	CausePath string

	// Parallel.
	Branches []*Machine

	// Map.
	ItemsPath                      string
	ItemProcessor                  *Machine
	ItemSelector                   any
	MaxConcurrency                 int
	MaxConcurrencyPath             string
	ToleratedFailureCount          *int
	ToleratedFailureCountPath      string
	ToleratedFailurePercentage     *float64
	ToleratedFailurePercentagePath string

	// branchDefs and processorDef are the JSON definitions of the child
	// machines, as Work.Children carries them.
	branchDefs   []json.RawMessage
	processorDef json.RawMessage
}

// Retrier is one entry of a state's Retry.
type Retrier struct {
	ErrorEquals     []string
	IntervalSeconds int
	MaxAttempts     int
	BackoffRate     float64
	// MaxDelaySeconds caps the delay (0: no cap).
	MaxDelaySeconds int
	JitterStrategy  string
}

// Catcher is one entry of a state's Catch.
type Catcher struct {
	ErrorEquals []string
	Next        string
	ResultPath  OptionalPath
}

// ChoiceRule is one rule of a Choice state: a boolean combination (And,
// Or, Not) or a comparison of Variable by Operator against Value (or, when
// Operator ends in "Path", against the value at ValuePath).
type ChoiceRule struct {
	And []*ChoiceRule
	Or  []*ChoiceRule
	Not *ChoiceRule

	Variable  string
	Operator  string
	Value     any
	ValuePath string

	// Next is set on the rules directly in Choices only.
	Next string
}

// comparison kinds of the Choice operators.
const (
	kindString    = "string"
	kindNumber    = "number"
	kindBoolean   = "boolean"
	kindTimestamp = "timestamp"
	kindTest      = "test" // Is*: a boolean literal, no Path form
	kindMatch     = "match"
)

// operators are the Choice comparison operators, by the kind of their
// value. All but the Is* tests and StringMatches have a "...Path" form.
var operators = map[string]string{
	"StringEquals":               kindString,
	"StringLessThan":             kindString,
	"StringGreaterThan":          kindString,
	"StringLessThanEquals":       kindString,
	"StringGreaterThanEquals":    kindString,
	"StringMatches":              kindMatch,
	"NumericEquals":              kindNumber,
	"NumericLessThan":            kindNumber,
	"NumericGreaterThan":         kindNumber,
	"NumericLessThanEquals":      kindNumber,
	"NumericGreaterThanEquals":   kindNumber,
	"BooleanEquals":              kindBoolean,
	"TimestampEquals":            kindTimestamp,
	"TimestampLessThan":          kindTimestamp,
	"TimestampGreaterThan":       kindTimestamp,
	"TimestampLessThanEquals":    kindTimestamp,
	"TimestampGreaterThanEquals": kindTimestamp,
	"IsNull":                     kindTest,
	"IsPresent":                  kindTest,
	"IsNumeric":                  kindTest,
	"IsString":                   kindTest,
	"IsBoolean":                  kindTest,
	"IsTimestamp":                kindTest,
}

// operatorKind returns the kind of op and whether it is a Path form.
func operatorKind(op string) (kind string, isPath bool, ok bool) {
	if k, ok := operators[op]; ok {
		return k, false, true
	}
	if base, found := strings.CutSuffix(op, "Path"); found {
		if k, ok := operators[base]; ok && k != kindTest && k != kindMatch {
			return k, true, true
		}
	}
	return "", false, false
}

// Parse parses and validates a definition (JSON). Every problem is a
// *field.Error under fldPath naming the exact field. It returns a nil
// Machine when there are errors.
func Parse(def []byte, fldPath *field.Path) (*Machine, field.ErrorList) {
	if !json.Valid(def) {
		var v any
		err := json.Unmarshal(def, &v)
		return nil, field.ErrorList{field.Invalid(fldPath, "", fmt.Sprintf("not valid JSON: %v", err))}
	}
	d := &decoder{}
	m := d.machine(def, fldPath, machineTop)
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return m, nil
}

// Resources lists every Task Resource of m, including those of its
// Parallel branches and Map processors: normalised, deduplicated, sorted.
func (m *Machine) Resources() []string {
	set := map[string]bool{}
	m.resources(set)
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

func (m *Machine) resources(set map[string]bool) {
	for _, s := range m.States {
		if s.Resource != "" {
			set[s.Resource] = true
		}
		for _, b := range s.Branches {
			b.resources(set)
		}
		if s.ItemProcessor != nil {
			s.ItemProcessor.resources(set)
		}
	}
}

// machine kinds: what fields the object may have besides StartAt and States.
const (
	machineTop = iota
	machineBranch
	machineProcessor
)

func (d *decoder) machine(raw json.RawMessage, p *field.Path, kind int) *Machine {
	o := d.object(raw, p)
	if o == nil {
		return nil
	}
	m := &Machine{States: map[string]*State{}}
	m.Comment, _ = o.str("Comment")
	if ql, ok := o.str("QueryLanguage"); ok && ql != "JSONPath" {
		d.add(field.NotSupported(p.Child("QueryLanguage"), ql, []string{"JSONPath"}))
	}
	if kind == machineTop {
		m.Version, _ = o.str("Version")
		m.TimeoutSeconds, _ = o.integer("TimeoutSeconds", 1, math.MaxInt32)
	}
	if kind == machineProcessor {
		if raw, ok := o.take("ProcessorConfig"); ok {
			d.processorConfig(raw, p.Child("ProcessorConfig"))
		}
	}
	startAt, hasStart := o.requiredStr("StartAt", "the name of the first state")
	m.StartAt = startAt
	statesPath := p.Child("States")
	rawStates, ok := o.take("States")
	var states map[string]json.RawMessage
	switch {
	case !ok:
		d.add(field.Required(statesPath, "a machine needs States"))
	case jsonKind(rawStates) != "object" || json.Unmarshal(rawStates, &states) != nil:
		d.add(field.Invalid(statesPath, shown(rawStates), "must be a JSON object of states by name"))
	case len(states) == 0:
		d.add(field.Required(statesPath, "a machine needs at least one state"))
	}
	switch kind {
	case machineTop:
		o.done("a state machine")
	case machineBranch:
		o.done("a Parallel branch")
	default:
		o.done("an ItemProcessor")
	}

	names := make([]string, 0, len(states))
	for name := range states {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sp := statesPath.Key(name)
		if name == "" || len(name) > maxStateName {
			d.add(field.Invalid(sp, name, fmt.Sprintf("a state name must be 1 to %d characters", maxStateName)))
		}
		if s := d.state(states[name], sp, name); s != nil {
			m.States[name] = s
		}
	}
	if hasStart && len(states) > 0 {
		if _, ok := states[startAt]; !ok {
			d.add(field.Invalid(p.Child("StartAt"), startAt, "no state has this name"))
		}
	}
	d.checkTargets(m, states, statesPath)
	if hasStart {
		if _, ok := states[startAt]; ok {
			d.checkReachable(m, names, startAt, statesPath)
		}
	}
	return m
}

// childDefinition re-encodes the parts of a branch or processor object a
// child execution needs.
func childDefinition(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	out := map[string]json.RawMessage{}
	for _, k := range []string{"StartAt", "States", "Comment"} {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	return b
}

func (d *decoder) processorConfig(raw json.RawMessage, p *field.Path) {
	o := d.object(raw, p)
	if o == nil {
		return
	}
	if mode, ok := o.str("Mode"); ok && mode != "INLINE" {
		d.add(field.NotSupported(p.Child("Mode"), mode, []string{"INLINE"}))
	}
	o.done("ProcessorConfig")
}

// targets lists the state names s transitions to, with the field naming each.
func (s *State) targets(sp *field.Path) (paths []*field.Path, names []string) {
	if s.Next != "" {
		paths, names = append(paths, sp.Child("Next")), append(names, s.Next)
	}
	if s.Default != "" {
		paths, names = append(paths, sp.Child("Default")), append(names, s.Default)
	}
	for i, c := range s.Choices {
		if c != nil && c.Next != "" {
			paths, names = append(paths, sp.Child("Choices").Index(i).Child("Next")), append(names, c.Next)
		}
	}
	for i, c := range s.Catch {
		if c.Next != "" {
			paths, names = append(paths, sp.Child("Catch").Index(i).Child("Next")), append(names, c.Next)
		}
	}
	return paths, names
}

func (d *decoder) checkTargets(m *Machine, states map[string]json.RawMessage, statesPath *field.Path) {
	names := make([]string, 0, len(m.States))
	for name := range m.States {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		paths, targets := m.States[name].targets(statesPath.Key(name))
		for i, t := range targets {
			if _, ok := states[t]; !ok {
				d.add(field.Invalid(paths[i], t, "no state has this name (in this machine's States)"))
			}
		}
	}
}

func (d *decoder) checkReachable(m *Machine, names []string, startAt string, statesPath *field.Path) {
	seen := map[string]bool{startAt: true}
	queue := []string{startAt}
	for len(queue) > 0 {
		s := m.States[queue[0]]
		queue = queue[1:]
		if s == nil {
			continue
		}
		_, targets := s.targets(nil)
		for _, t := range targets {
			if !seen[t] {
				seen[t] = true
				queue = append(queue, t)
			}
		}
	}
	for _, name := range names {
		if !seen[name] && m.States[name] != nil {
			d.add(field.Invalid(statesPath.Key(name), name, "state is not reachable from StartAt"))
		}
	}
}

func (d *decoder) state(raw json.RawMessage, p *field.Path, name string) *State {
	o := d.object(raw, p)
	if o == nil {
		return nil
	}
	s := &State{Name: name}
	typ, ok := o.requiredStr("Type", "one of "+strings.Join(stateTypes, ", "))
	if !ok {
		o.done("")
		return nil
	}
	switch typ {
	case TypeTask, TypePass, TypeChoice, TypeWait, TypeSucceed, TypeFail, TypeParallel, TypeMap:
	default:
		d.add(field.NotSupported(p.Child("Type"), typ, stateTypes))
		return nil
	}
	s.Type = typ
	s.Comment, _ = o.str("Comment")
	if ql, ok := o.str("QueryLanguage"); ok && ql != "JSONPath" {
		d.add(field.NotSupported(p.Child("QueryLanguage"), ql, []string{"JSONPath"}))
	}
	if typ != TypeFail {
		s.InputPath = o.optionalPath("InputPath", false)
		s.OutputPath = o.optionalPath("OutputPath", false)
	}
	switch typ {
	case TypeTask, TypePass, TypeWait, TypeParallel, TypeMap:
		d.nextEnd(o, s)
	}
	switch typ {
	case TypeTask, TypePass, TypeParallel, TypeMap:
		s.ResultPath = o.optionalPath("ResultPath", true)
	}
	switch typ {
	case TypeTask, TypePass, TypeParallel:
		s.Parameters, _ = o.template("Parameters")
	}
	switch typ {
	case TypeTask, TypeParallel, TypeMap:
		s.ResultSelector, _ = o.template("ResultSelector")
		s.Retry = d.retriers(o)
		s.Catch = d.catchers(o)
	}
	switch typ {
	case TypePass:
		if raw, ok := o.take("Result"); ok {
			v, err := expr.Decode(raw)
			if err != nil {
				d.add(field.Invalid(p.Child("Result"), shown(raw), err.Error()))
			}
			s.Result, s.HasResult = v, true
		}
	case TypeTask:
		d.task(o, s)
	case TypeChoice:
		d.choice(o, s)
	case TypeWait:
		d.wait(o, s)
	case TypeFail:
		d.fail(o, s)
	case TypeParallel:
		d.parallel(o, s)
	case TypeMap:
		d.mapState(o, s)
	}
	o.done("a " + typ + " state")
	return s
}

func (d *decoder) nextEnd(o *object, s *State) {
	next := o.target("Next", false)
	hasNext := next != ""
	end, hasEnd := o.boolean("End")
	s.Next = next
	switch {
	case hasNext && hasEnd && end:
		d.add(field.Forbidden(o.path.Child("End"), "may not be set together with Next"))
	case hasEnd && end:
		s.End = true
	case !hasNext && !o.has("Next"):
		d.add(field.Required(o.path.Child("Next"), "a state that does not end the machine needs Next (or End: true)"))
	}
}

func (d *decoder) task(o *object, s *State) {
	p := o.path
	if r, ok := o.requiredStr("Resource", "function:<name>, workflow:<name> or a function's name"); ok {
		s.Resource = d.resource(p.Child("Resource"), r)
	}
	s.TimeoutSeconds, _ = o.integer("TimeoutSeconds", 1, math.MaxInt32)
	s.TimeoutSecondsPath, _ = o.pathField("TimeoutSecondsPath", true)
	s.HeartbeatSeconds, _ = o.integer("HeartbeatSeconds", 1, math.MaxInt32)
	s.HeartbeatSecondsPath, _ = o.pathField("HeartbeatSecondsPath", true)
	if o.has("TimeoutSeconds") && o.has("TimeoutSecondsPath") {
		d.add(field.Forbidden(p.Child("TimeoutSecondsPath"), "may not be set together with TimeoutSeconds"))
	}
	if o.has("HeartbeatSeconds") && o.has("HeartbeatSecondsPath") {
		d.add(field.Forbidden(p.Child("HeartbeatSecondsPath"), "may not be set together with HeartbeatSeconds"))
	}
	if s.HeartbeatSeconds > 0 && s.TimeoutSeconds > 0 && s.HeartbeatSeconds >= s.TimeoutSeconds {
		d.add(field.Invalid(p.Child("HeartbeatSeconds"), s.HeartbeatSeconds, "must be less than TimeoutSeconds"))
	}
}

// resource validates and normalises a Task's Resource.
func (d *decoder) resource(p *field.Path, r string) string {
	const msg = "must be function:<name>, workflow:<name> or a function's name"
	kind, name, found := strings.Cut(r, ":")
	if !found {
		kind, name = "function", r
	}
	if kind != "function" && kind != "workflow" {
		d.add(field.Invalid(p, r, msg))
		return ""
	}
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		d.add(field.Invalid(p, r, msg+": "+strings.Join(errs, "; ")))
		return ""
	}
	return kind + ":" + name
}

func (d *decoder) choice(o *object, s *State) {
	elems, ok := o.array("Choices")
	if !ok && !o.has("Choices") {
		d.add(field.Required(o.path.Child("Choices"), "a Choice state needs Choices"))
	} else if ok && len(elems) == 0 {
		d.add(field.Required(o.path.Child("Choices"), "a Choice state needs at least one rule"))
	}
	for i, e := range elems {
		s.Choices = append(s.Choices, d.rule(e, o.path.Child("Choices").Index(i), true))
	}
	s.Default = o.target("Default", false)
}

// rule decodes a Choice rule; top says it is directly in Choices (and so
// has Next).
func (d *decoder) rule(raw json.RawMessage, p *field.Path, top bool) *ChoiceRule {
	o := d.object(raw, p)
	if o == nil {
		return nil
	}
	r := &ChoiceRule{}
	o.str("Comment")
	if top {
		r.Next = o.target("Next", true)
	}
	var ops []string
	for k := range o.fields {
		if k == "And" || k == "Or" || k == "Not" {
			ops = append(ops, k)
		} else if _, _, ok := operatorKind(k); ok {
			ops = append(ops, k)
		}
	}
	sort.Strings(ops)
	switch len(ops) {
	case 0:
		d.add(field.Required(p, "a rule needs one of And, Or, Not or a comparison operator (StringEquals, NumericLessThan, IsPresent, ...)"))
	case 1:
	default:
		for _, op := range ops[1:] {
			o.take(op)
			d.add(field.Forbidden(p.Child(op), fmt.Sprintf("a rule has one operator, and this one has %s too", ops[0])))
		}
	}
	if len(ops) > 0 {
		op := ops[0]
		if (op == "And" || op == "Or" || op == "Not") && o.has("Variable") {
			o.take("Variable")
			d.add(field.Forbidden(p.Child("Variable"), "only a comparison has Variable, not "+op))
		}
		switch op {
		case "And", "Or":
			elems, ok := o.array(op)
			if ok && len(elems) == 0 {
				d.add(field.Required(p.Child(op), "needs at least one rule"))
			}
			var rules []*ChoiceRule
			for i, e := range elems {
				rules = append(rules, d.rule(e, p.Child(op).Index(i), false))
			}
			if op == "And" {
				r.And = rules
				if r.And == nil {
					r.And = []*ChoiceRule{}
				}
			} else {
				r.Or = rules
				if r.Or == nil {
					r.Or = []*ChoiceRule{}
				}
			}
		case "Not":
			raw, _ := o.take("Not")
			r.Not = d.rule(raw, p.Child("Not"), false)
		default:
			d.comparison(o, r, op)
		}
	}
	if !top && o.has("Next") {
		o.take("Next")
		d.add(field.Forbidden(p.Child("Next"), "only a rule directly in Choices has Next"))
	}
	o.done("a Choice rule")
	return r
}

func (d *decoder) comparison(o *object, r *ChoiceRule, op string) {
	r.Operator = op
	r.Variable, _ = o.pathField("Variable", false)
	if !o.has("Variable") {
		d.add(field.Required(o.path.Child("Variable"), "a comparison needs Variable"))
	}
	kind, isPath, _ := operatorKind(op)
	p := o.path.Child(op)
	if isPath {
		r.ValuePath, _ = o.pathField(op, false)
		return
	}
	raw, _ := o.take(op)
	v, err := expr.Decode(raw)
	if err != nil {
		d.add(field.Invalid(p, shown(raw), err.Error()))
		return
	}
	r.Value = v
	switch kind {
	case kindString, kindMatch:
		if _, ok := v.(string); !ok {
			d.add(field.Invalid(p, shown(raw), "must be a string"))
		}
	case kindNumber:
		if _, ok := v.(json.Number); !ok {
			d.add(field.Invalid(p, shown(raw), "must be a number"))
		}
	case kindBoolean, kindTest:
		if _, ok := v.(bool); !ok {
			d.add(field.Invalid(p, shown(raw), "must be a boolean"))
		}
	case kindTimestamp:
		str, ok := v.(string)
		if ok {
			_, ok = timestamp(str)
		}
		if !ok {
			d.add(field.Invalid(p, shown(raw), "must be an RFC3339 timestamp such as 2016-03-14T01:59:00Z"))
		}
	}
}

func (d *decoder) wait(o *object, s *State) {
	p := o.path
	var set []string
	for _, k := range []string{"Seconds", "Timestamp", "SecondsPath", "TimestampPath"} {
		if o.has(k) {
			set = append(set, k)
		}
	}
	switch len(set) {
	case 0:
		d.add(field.Required(p.Child("Seconds"), "a Wait state needs exactly one of Seconds, Timestamp, SecondsPath or TimestampPath"))
	case 1:
	default:
		for _, k := range set[1:] {
			d.add(field.Forbidden(p.Child(k), fmt.Sprintf("a Wait state has exactly one of Seconds, Timestamp, SecondsPath or TimestampPath, and this one has %s too", set[0])))
		}
	}
	if n, ok := o.integer("Seconds", 0, math.MaxInt32); ok {
		s.Seconds = &n
	}
	if ts, ok := o.str("Timestamp"); ok {
		if t, ok := timestamp(ts); ok {
			s.Timestamp = &t
		} else {
			d.add(field.Invalid(p.Child("Timestamp"), ts, "must be an RFC3339 timestamp such as 2016-03-14T01:59:00Z"))
		}
	}
	s.SecondsPath, _ = o.pathField("SecondsPath", true)
	s.TimestampPath, _ = o.pathField("TimestampPath", true)
}

func (d *decoder) fail(o *object, s *State) {
	p := o.path
	s.Error, _ = o.str("Error")
	s.Cause, _ = o.str("Cause")
	s.ErrorPath = d.pathOrIntrinsic(o, "ErrorPath")
	s.CausePath = d.pathOrIntrinsic(o, "CausePath")
	if o.has("Error") && o.has("ErrorPath") {
		d.add(field.Forbidden(p.Child("ErrorPath"), "may not be set together with Error"))
	}
	if o.has("Cause") && o.has("CausePath") {
		d.add(field.Forbidden(p.Child("CausePath"), "may not be set together with Cause"))
	}
}

// pathOrIntrinsic decodes a field that holds a Reference Path or an
// intrinsic function call.
func (d *decoder) pathOrIntrinsic(o *object, k string) string {
	raw, ok := o.take(k)
	if !ok {
		return ""
	}
	var s string
	if jsonKind(raw) != "string" || json.Unmarshal(raw, &s) != nil {
		d.add(field.Invalid(o.path.Child(k), shown(raw), "must be a string"))
		return ""
	}
	if expr.IsIntrinsic(s) {
		if err := expr.CheckIntrinsic(s); err != nil {
			d.add(field.Invalid(o.path.Child(k), s, fmt.Sprintf("must be a valid intrinsic function: %v", err)))
			return ""
		}
		return s
	}
	if err := expr.CheckReferencePath(s); err != nil {
		d.add(field.Invalid(o.path.Child(k), s, fmt.Sprintf("must be a Reference Path or an intrinsic function: %v", err)))
		return ""
	}
	return s
}

func (d *decoder) parallel(o *object, s *State) {
	p := o.path.Child("Branches")
	elems, ok := o.array("Branches")
	if !ok && !o.has("Branches") || ok && len(elems) == 0 {
		d.add(field.Required(p, "a Parallel state needs at least one branch"))
	}
	for i, e := range elems {
		if b := d.machine(e, p.Index(i), machineBranch); b != nil {
			s.Branches = append(s.Branches, b)
			s.branchDefs = append(s.branchDefs, childDefinition(e))
		}
	}
}

func (d *decoder) mapState(o *object, s *State) {
	p := o.path
	if o.has("ItemsPath") {
		s.ItemsPath, _ = o.pathField("ItemsPath", true)
	}
	if s.ItemsPath == "" {
		s.ItemsPath = "$"
	}
	procKey := "ItemProcessor"
	switch {
	case o.has("ItemProcessor") && o.has("Iterator"):
		d.add(field.Forbidden(p.Child("Iterator"), "may not be set together with ItemProcessor (Iterator is its older name)"))
	case o.has("Iterator"):
		procKey = "Iterator"
	case !o.has("ItemProcessor"):
		d.add(field.Required(p.Child("ItemProcessor"), "a Map state needs ItemProcessor"))
	}
	if raw, ok := o.take(procKey); ok {
		kind := machineProcessor
		if procKey == "Iterator" {
			kind = machineBranch
		}
		s.ItemProcessor = d.machine(raw, p.Child(procKey), kind)
		s.processorDef = childDefinition(raw)
	}
	selKey := "ItemSelector"
	switch {
	case o.has("ItemSelector") && o.has("Parameters"):
		d.add(field.Forbidden(p.Child("Parameters"), "may not be set together with ItemSelector (Parameters is its older name in a Map)"))
	case o.has("Parameters"):
		selKey = "Parameters"
	}
	s.ItemSelector, _ = o.template(selKey)

	if n, ok := o.integer("MaxConcurrency", 0, math.MaxInt32); ok {
		s.MaxConcurrency = n
	}
	s.MaxConcurrencyPath, _ = o.pathField("MaxConcurrencyPath", true)
	if n, ok := o.integer("ToleratedFailureCount", 0, math.MaxInt32); ok {
		s.ToleratedFailureCount = &n
	}
	s.ToleratedFailureCountPath, _ = o.pathField("ToleratedFailureCountPath", true)
	if f, ok := o.number("ToleratedFailurePercentage"); ok {
		if f < 0 || f > 100 {
			d.add(field.Invalid(p.Child("ToleratedFailurePercentage"), f, "must be between 0 and 100"))
		} else {
			s.ToleratedFailurePercentage = &f
		}
	}
	s.ToleratedFailurePercentagePath, _ = o.pathField("ToleratedFailurePercentagePath", true)
	for _, k := range []string{"MaxConcurrency", "ToleratedFailureCount", "ToleratedFailurePercentage"} {
		if o.has(k) && o.has(k+"Path") {
			d.add(field.Forbidden(p.Child(k+"Path"), "may not be set together with "+k))
		}
	}
}

func (d *decoder) retriers(o *object) []Retrier {
	elems, _ := o.array("Retry")
	var out []Retrier
	for i, e := range elems {
		p := o.path.Child("Retry").Index(i)
		ro := d.object(e, p)
		if ro == nil {
			continue
		}
		r := Retrier{IntervalSeconds: 1, MaxAttempts: 3, BackoffRate: 2, JitterStrategy: JitterNone}
		ro.str("Comment")
		r.ErrorEquals = d.errorEquals(ro, i, len(elems), "retrier")
		if n, ok := ro.integer("IntervalSeconds", 1, 99999999); ok {
			r.IntervalSeconds = n
		}
		if n, ok := ro.integer("MaxAttempts", 0, 99999999); ok {
			r.MaxAttempts = n
		}
		if f, ok := ro.number("BackoffRate"); ok {
			if f < 1 {
				d.add(field.Invalid(p.Child("BackoffRate"), f, "must be at least 1.0"))
			} else {
				r.BackoffRate = f
			}
		}
		if n, ok := ro.integer("MaxDelaySeconds", 1, 31622400); ok {
			r.MaxDelaySeconds = n
		}
		if js, ok := ro.str("JitterStrategy"); ok {
			if js != JitterFull && js != JitterNone {
				d.add(field.NotSupported(p.Child("JitterStrategy"), js, []string{JitterFull, JitterNone}))
			} else {
				r.JitterStrategy = js
			}
		}
		ro.done("a Retrier")
		out = append(out, r)
	}
	return out
}

func (d *decoder) catchers(o *object) []Catcher {
	elems, _ := o.array("Catch")
	var out []Catcher
	for i, e := range elems {
		p := o.path.Child("Catch").Index(i)
		co := d.object(e, p)
		if co == nil {
			continue
		}
		c := Catcher{}
		co.str("Comment")
		c.ErrorEquals = d.errorEquals(co, i, len(elems), "catcher")
		c.Next = co.target("Next", true)
		c.ResultPath = co.optionalPath("ResultPath", true)
		co.done("a Catcher")
		out = append(out, c)
	}
	return out
}

// errorEquals decodes the ErrorEquals of the i-th of n retriers/catchers.
func (d *decoder) errorEquals(o *object, i, n int, what string) []string {
	p := o.path.Child("ErrorEquals")
	if !o.has("ErrorEquals") {
		d.add(field.Required(p, "the error names this "+what+" matches"))
		return nil
	}
	names, _ := o.stringsField("ErrorEquals")
	for j, name := range names {
		if strings.HasPrefix(name, "States.") && !predefinedErrors[name] {
			d.add(field.Invalid(p.Index(j), name, "no such predefined error (names starting with \"States.\" are reserved)"))
		}
		if name == ErrorAll {
			if len(names) != 1 {
				d.add(field.Invalid(p.Index(j), name, "States.ALL must appear alone in ErrorEquals"))
			}
			if i != n-1 {
				d.add(field.Invalid(p.Index(j), name, "States.ALL must be in the last "+what))
			}
		}
	}
	return names
}
