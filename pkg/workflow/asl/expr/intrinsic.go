package expr

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
)

// IntrinsicError is an intrinsic function that failed at run time (the
// caller reports it as States.IntrinsicFailure).
type IntrinsicError struct{ Func, Reason string }

func (e *IntrinsicError) Error() string { return fmt.Sprintf("%s: %s", e.Func, e.Reason) }

// IsIntrinsic reports whether s looks like an intrinsic call: it starts
// with "States." and has a "(".
func IsIntrinsic(s string) bool {
	return strings.HasPrefix(s, "States.") && strings.Contains(s, "(")
}

// CheckIntrinsic parses an intrinsic call such as
// States.Format('hello {}', $.name): arguments are string literals in
// single quotes (with \' \{ \} \\ escapes), numbers, true, false, null,
// Paths ($..., $$...) and nested calls. It checks function names and
// argument counts, the placeholders of a literal Format template, and
// evaluates calls whose arguments are all literals, so that
// States.ArrayRange(1, 5000, 1) fails here rather than at run time. The
// error is a *SyntaxError or an *IntrinsicError.
func CheckIntrinsic(s string) error {
	c, err := parseIntrinsic(s)
	if err != nil {
		return err
	}
	_, err = c.check()
	return err
}

// Intrinsic evaluates an intrinsic call against the input and the context
// object. rnd supplies randomness (MathRandom without a seed, UUID); nil
// means the math/rand package functions. Errors are *IntrinsicError.
func Intrinsic(s string, input, ctx any, rnd *rand.Rand) (any, error) {
	c, err := parseIntrinsic(s)
	if err != nil {
		reason := err.Error()
		if se, ok := err.(*SyntaxError); ok {
			reason = "invalid call: " + se.where()
		}
		return nil, &IntrinsicError{Func: funcName(s), Reason: reason}
	}
	return c.eval(&env{input: input, ctx: ctx, rnd: rnd})
}

// funcName is the name before "(" for errors about calls that do not parse.
func funcName(s string) string {
	if i := strings.IndexByte(s, '('); i > 0 {
		return strings.TrimSpace(s[:i])
	}
	return "intrinsic"
}

type env struct {
	input, ctx any
	rnd        *rand.Rand
}

// arg is an argument of a call: a literal, a Path or a nested call.
type arg interface {
	eval(e *env) (any, error)
}

type litArg struct {
	v any
	// raw is the text between the quotes of a string literal, escapes kept,
	// for the placeholders of States.Format.
	raw      string
	isString bool
}

func (a *litArg) eval(*env) (any, error) { return a.v, nil }

type pathArg struct {
	src string
	p   *path
	fn  string
}

func (a *pathArg) eval(e *env) (any, error) {
	v, err := Query(a.src, e.input, e.ctx)
	if err != nil {
		return nil, &IntrinsicError{Func: a.fn, Reason: err.Error()}
	}
	return v, nil
}

type call struct {
	name string
	fn   *function
	args []arg
}

func (c *call) eval(e *env) (any, error) {
	vals := make([]any, len(c.args))
	for i, a := range c.args {
		v, err := a.eval(e)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	if c.name == "States.Format" {
		if l, ok := c.args[0].(*litArg); ok && l.isString {
			vals[0] = rawTemplate{l.raw}
		}
	}
	v, err := c.fn.call(e, vals)
	if err != nil {
		return nil, &IntrinsicError{Func: c.name, Reason: err.Error()}
	}
	return v, nil
}

// check validates what can be known before run time. pure reports that
// the call reads no Path, so that it was evaluated here.
func (c *call) check() (pure bool, err error) {
	pure = true
	for _, a := range c.args {
		switch a := a.(type) {
		case *call:
			p, err := a.check()
			if err != nil {
				return false, err
			}
			pure = pure && p
		case *pathArg:
			pure = false
		}
	}
	if c.name == "States.Format" {
		if l, ok := c.args[0].(*litArg); ok && l.isString {
			n, err := countPlaceholders(l.raw)
			if err != nil {
				return false, &IntrinsicError{Func: c.name, Reason: err.Error()}
			}
			if n != len(c.args)-1 {
				return false, &IntrinsicError{Func: c.name, Reason: fmt.Sprintf("the template has %d placeholders but %d arguments follow it", n, len(c.args)-1)}
			}
		}
	}
	if pure {
		if _, err := c.eval(&env{rnd: rand.New(rand.NewSource(1))}); err != nil {
			return false, err
		}
	}
	return pure, nil
}

func parseIntrinsic(s string) (*call, error) {
	ps := &parser{s: s}
	ps.skipSpace()
	c, err := ps.call()
	if err != nil {
		return nil, err
	}
	ps.skipSpace()
	if !ps.eof() {
		return nil, ps.errf("unexpected %s after the call", ps.found())
	}
	return c, nil
}

func (ps *parser) call() (*call, error) {
	start := ps.pos
	if !ps.has("States.") {
		return nil, ps.errf("an intrinsic function name must start with \"States.\"")
	}
	ps.pos += len("States.")
	for c := ps.peek(); c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c); c = ps.peek() {
		ps.pos++
	}
	name := ps.s[start:ps.pos]
	fn, ok := functions[name]
	if !ok {
		ps.pos = start
		return nil, ps.errf("unknown intrinsic function %q", name)
	}
	ps.skipSpace()
	if err := ps.expect("("); err != nil {
		return nil, err
	}
	c := &call{name: name, fn: fn}
	ps.skipSpace()
	if ps.peek() == ')' {
		ps.pos++
	} else {
		for {
			ps.skipSpace()
			a, err := ps.arg(name)
			if err != nil {
				return nil, err
			}
			c.args = append(c.args, a)
			ps.skipSpace()
			if ps.peek() == ')' {
				ps.pos++
				break
			}
			if ps.peek() != ',' {
				return nil, ps.errf("expected \",\" or \")\" in the arguments of %s, found %s", name, ps.found())
			}
			ps.pos++
		}
	}
	if len(c.args) < fn.min || fn.max >= 0 && len(c.args) > fn.max {
		ps.pos = start
		return nil, ps.errf("%s takes %s, got %d", name, fn.arity(), len(c.args))
	}
	return c, nil
}

func (ps *parser) arg(fn string) (arg, error) {
	start := ps.pos
	switch c := ps.peek(); {
	case c == '\'':
		raw, v, err := ps.intrinsicString()
		if err != nil {
			return nil, err
		}
		return &litArg{v: v, raw: raw, isString: true}, nil
	case c == '$':
		p, err := ps.path()
		if err != nil {
			return nil, err
		}
		return &pathArg{src: ps.s[start:ps.pos], p: p, fn: fn}, nil
	case c == '-' || isDigit(c):
		n, err := ps.number()
		if err != nil {
			return nil, err
		}
		return &litArg{v: n}, nil
	case ps.has("States."):
		return ps.call()
	}
	for _, kw := range []struct {
		s string
		v any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if ps.has(kw.s) {
			ps.pos += len(kw.s)
			return &litArg{v: kw.v}, nil
		}
	}
	return nil, ps.errf("expected an argument ('string', number, true, false, null, $path or States.Call), found %s", ps.found())
}

// intrinsicString parses a single-quoted literal; the escapes are \' \{ \}
// and \\. It returns the text between the quotes as written and its value.
func (ps *parser) intrinsicString() (raw, val string, err error) {
	start := ps.pos
	ps.pos++
	var b strings.Builder
	for {
		if ps.eof() {
			ps.pos = start
			return "", "", ps.errf("unterminated string")
		}
		c := ps.s[ps.pos]
		switch c {
		case '\'':
			ps.pos++
			return ps.s[start+1 : ps.pos-1], b.String(), nil
		case '\\':
			ps.pos++
			switch e := ps.peek(); e {
			case '\'', '{', '}', '\\':
				b.WriteByte(e)
				ps.pos++
			default:
				return "", "", ps.errf("invalid escape in string: only \\' \\{ \\} and \\\\ are allowed")
			}
		default:
			b.WriteByte(c)
			ps.pos++
		}
	}
}

// number parses a JSON number.
func (ps *parser) number() (json.Number, error) {
	start := ps.pos
	if ps.peek() == '-' {
		ps.pos++
	}
	digits := func() int {
		s := ps.pos
		for isDigit(ps.peek()) {
			ps.pos++
		}
		return ps.pos - s
	}
	if digits() == 0 {
		return "", ps.errf("expected a digit, found %s", ps.found())
	}
	if ps.peek() == '.' {
		ps.pos++
		if digits() == 0 {
			return "", ps.errf("expected a digit after \".\", found %s", ps.found())
		}
	}
	if c := ps.peek(); c == 'e' || c == 'E' {
		ps.pos++
		if c := ps.peek(); c == '+' || c == '-' {
			ps.pos++
		}
		if digits() == 0 {
			return "", ps.errf("expected a digit in the exponent, found %s", ps.found())
		}
	}
	return json.Number(ps.s[start:ps.pos]), nil
}
