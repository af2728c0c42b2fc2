package expr

import (
	"strings"
)

// filterExpr is the expression inside [?( )], tested with @ bound to cur.
type filterExpr interface {
	test(cur, root any) bool
	String() string
}

type orExpr struct{ l, r filterExpr }

func (e orExpr) test(cur, root any) bool { return e.l.test(cur, root) || e.r.test(cur, root) }
func (e orExpr) String() string          { return e.l.String() + " || " + e.r.String() }

type andExpr struct{ l, r filterExpr }

func (e andExpr) test(cur, root any) bool { return e.l.test(cur, root) && e.r.test(cur, root) }
func (e andExpr) String() string          { return e.l.String() + " && " + e.r.String() }

type notExpr struct{ x filterExpr }

func (e notExpr) test(cur, root any) bool { return !e.x.test(cur, root) }
func (e notExpr) String() string          { return "!" + e.x.String() }

type parenExpr struct{ x filterExpr }

func (e parenExpr) test(cur, root any) bool { return e.x.test(cur, root) }
func (e parenExpr) String() string          { return "(" + e.x.String() + ")" }

// existsExpr is a bare path: true when it matches something.
type existsExpr struct{ p pathOperand }

func (e existsExpr) test(cur, root any) bool {
	v, ok := e.p.value(cur, root)
	if l, isList := v.([]any); ok && isList && !e.p.p.definite() {
		return len(l) > 0
	}
	return ok
}
func (e existsExpr) String() string { return e.p.String() }

// cmpExpr compares two operands; a missing operand makes it false.
type cmpExpr struct {
	op   string
	l, r operand
}

func (e cmpExpr) test(cur, root any) bool {
	a, ok := e.l.value(cur, root)
	if !ok {
		return false
	}
	b, ok := e.r.value(cur, root)
	if !ok {
		return false
	}
	switch e.op {
	case "==":
		return equal(a, b)
	case "!=":
		return !equal(a, b)
	}
	var c int
	if isNumber(a) && isNumber(b) {
		if c, ok = compareNumbers(a, b); !ok {
			return false
		}
	} else {
		sa, ok1 := a.(string)
		sb, ok2 := b.(string)
		if !ok1 || !ok2 {
			return false
		}
		c = strings.Compare(sa, sb)
	}
	switch e.op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	}
	return false
}

func (e cmpExpr) String() string { return e.l.String() + " " + e.op + " " + e.r.String() }

type operand interface {
	value(cur, root any) (any, bool)
	String() string
}

type litOperand struct {
	v   any
	src string
}

func (o litOperand) value(_, _ any) (any, bool) { return o.v, true }
func (o litOperand) String() string             { return o.src }

// pathOperand is @... (relative to the element) or $... (the root).
type pathOperand struct {
	rel bool
	p   *path
	src string
}

func (o pathOperand) value(cur, root any) (any, bool) {
	base := root
	if o.rel {
		base = cur
	}
	if o.p.definite() {
		v, err := o.p.lookup(o.src, base)
		return v, err == nil
	}
	l := o.p.eval(base)
	if l == nil {
		l = []any{}
	}
	return l, true
}

func (o pathOperand) String() string { return o.src }

func (ps *parser) filterOr() (filterExpr, error) {
	l, err := ps.filterAnd()
	if err != nil {
		return nil, err
	}
	for {
		ps.skipSpace()
		if !ps.has("||") {
			return l, nil
		}
		ps.pos += 2
		r, err := ps.filterAnd()
		if err != nil {
			return nil, err
		}
		l = orExpr{l: l, r: r}
	}
}

func (ps *parser) filterAnd() (filterExpr, error) {
	l, err := ps.filterUnary()
	if err != nil {
		return nil, err
	}
	for {
		ps.skipSpace()
		if !ps.has("&&") {
			return l, nil
		}
		ps.pos += 2
		r, err := ps.filterUnary()
		if err != nil {
			return nil, err
		}
		l = andExpr{l: l, r: r}
	}
}

func (ps *parser) filterUnary() (filterExpr, error) {
	ps.skipSpace()
	switch {
	case ps.peek() == '!' && !ps.has("!="):
		ps.pos++
		x, err := ps.filterUnary()
		if err != nil {
			return nil, err
		}
		return notExpr{x: x}, nil
	case ps.peek() == '(':
		ps.pos++
		x, err := ps.filterOr()
		if err != nil {
			return nil, err
		}
		ps.skipSpace()
		if err := ps.expect(")"); err != nil {
			return nil, err
		}
		return parenExpr{x: x}, nil
	}
	start := ps.pos
	l, err := ps.operand()
	if err != nil {
		return nil, err
	}
	ps.skipSpace()
	for _, op := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		if ps.has(op) {
			ps.pos += len(op)
			ps.skipSpace()
			r, err := ps.operand()
			if err != nil {
				return nil, err
			}
			return cmpExpr{op: op, l: l, r: r}, nil
		}
	}
	if ps.has("=") {
		return nil, ps.errf("expected a comparison operator (==, !=, <, <=, >, >=), found \"=\"")
	}
	p, ok := l.(pathOperand)
	if !ok {
		ps.pos = start
		return nil, ps.errf("a literal alone is not a condition; compare it with a path")
	}
	return existsExpr{p: p}, nil
}

func (ps *parser) operand() (operand, error) {
	start := ps.pos
	switch c := ps.peek(); {
	case c == '@':
		ps.pos++
		steps, err := ps.steps()
		if err != nil {
			return nil, err
		}
		return pathOperand{rel: true, p: &path{steps: steps}, src: ps.s[start:ps.pos]}, nil
	case c == '$':
		p, err := ps.path()
		if err != nil {
			return nil, err
		}
		return pathOperand{p: p, src: ps.s[start:ps.pos]}, nil
	case c == '\'' || c == '"':
		s, err := ps.quoted()
		if err != nil {
			return nil, err
		}
		return litOperand{v: s, src: ps.s[start:ps.pos]}, nil
	case c == '-' || isDigit(c):
		n, err := ps.number()
		if err != nil {
			return nil, err
		}
		return litOperand{v: n, src: ps.s[start:ps.pos]}, nil
	}
	for _, kw := range []struct {
		s string
		v any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if ps.has(kw.s) {
			ps.pos += len(kw.s)
			return litOperand{v: kw.v, src: kw.s}, nil
		}
	}
	return nil, ps.errf("expected @path, $path, a string, a number, true, false or null, found %s", ps.found())
}
