package expr

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// PathError is a path that does not match the data (the caller reports it
// as States.ParameterPathFailure or States.ResultPathMatchFailure), or a
// path that does not parse.
type PathError struct{ Path, Reason string }

func (e *PathError) Error() string { return fmt.Sprintf("path %q: %s", e.Path, e.Reason) }

// SyntaxError is a Path or intrinsic call that does not parse; Offset is
// the byte offset in Text where parsing stopped, -1 when the problem is the
// text as a whole.
type SyntaxError struct {
	Text   string
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%q: %s", e.Text, e.where()) }

func (e *SyntaxError) where() string {
	if e.Offset < 0 {
		return e.Msg
	}
	return fmt.Sprintf("at offset %d: %s", e.Offset, e.Msg)
}

// syntaxReason is the Reason of a *PathError for a path that does not parse.
func syntaxReason(err error) string {
	if se, ok := err.(*SyntaxError); ok {
		return "invalid path: " + se.where()
	}
	return err.Error()
}

// CheckPath reports whether p is a valid ASL Path. The error is a
// *SyntaxError.
func CheckPath(p string) error {
	_, err := parsePath(p)
	return err
}

// CheckReferencePath reports whether p is a valid Reference Path: a Path
// made only of "$" (or "$$"), names and integer indexes.
func CheckReferencePath(p string) error {
	_, err := parseReferencePath(p)
	return err
}

// Query evaluates Path p against data, or against ctx when p starts with
// "$$". A definite path yields the single value, or a *PathError when
// nothing is there; an indefinite one yields a []any of the matches,
// possibly empty. Filters on an object test the object itself, as Jayway
// JSONPath (which AWS Step Functions runs) does; wildcards visit object
// members in key order. The result may share structure with data.
func Query(p string, data, ctx any) (any, error) {
	pp, err := parsePath(p)
	if err != nil {
		return nil, &PathError{Path: p, Reason: syntaxReason(err)}
	}
	root := data
	if pp.context {
		root = ctx
	}
	if pp.definite() {
		return pp.lookup(p, root)
	}
	out := pp.eval(root)
	if out == nil {
		out = []any{}
	}
	return out, nil
}

// Set returns data with the value at Reference Path p replaced by v,
// creating objects for missing keys along the way (as ResultPath does); "$"
// replaces the whole value. A path through anything but an object (or an
// array, for an index), including null, or an index out of range is a
// *PathError. data is not mutated: the containers along the path are
// copied, everything else is shared.
func Set(data any, p string, v any) (any, error) {
	pp, err := parseReferencePath(p)
	if err != nil {
		return nil, &PathError{Path: p, Reason: syntaxReason(err)}
	}
	if pp.context {
		return nil, &PathError{Path: p, Reason: "cannot write into the context object"}
	}
	return setAt(data, true, pp.steps, v, p, "$")
}

func setAt(cur any, present bool, steps []step, v any, p, at string) (any, error) {
	if len(steps) == 0 {
		return v, nil
	}
	switch sel := steps[0].sel.(type) {
	case nameSel:
		var m map[string]any
		switch c := cur.(type) {
		case map[string]any:
			m = make(map[string]any, len(c)+1)
			for k, x := range c {
				m[k] = x
			}
		default:
			if present {
				return nil, &PathError{Path: p, Reason: fmt.Sprintf("%s is %s, not an object", at, typeName(cur))}
			}
			m = make(map[string]any, 1)
		}
		child, ok := m[sel.name]
		nv, err := setAt(child, ok, steps[1:], v, p, at+sel.String())
		if err != nil {
			return nil, err
		}
		m[sel.name] = nv
		return m, nil
	case indexSel:
		a, ok := cur.([]any)
		if !ok {
			what := "missing"
			if present {
				what = typeName(cur)
			}
			return nil, &PathError{Path: p, Reason: fmt.Sprintf("%s is %s, not an array", at, what)}
		}
		i, ok := sel.resolve(len(a))
		if !ok {
			return nil, &PathError{Path: p, Reason: fmt.Sprintf("index %d out of range at %s (length %d)", sel.i, at, len(a))}
		}
		nv, err := setAt(a[i], true, steps[1:], v, p, at+sel.String())
		if err != nil {
			return nil, err
		}
		c := slices.Clone(a)
		c[i] = nv
		return c, nil
	}
	return nil, &PathError{Path: p, Reason: "not a reference path"}
}

// path is a parsed JSONPath.
type path struct {
	context bool // rooted at "$$"
	steps   []step
}

// step applies sel to the current nodes, or with recursive ("..") to the
// current nodes and all their descendants.
type step struct {
	recursive bool
	sel       selector
}

type selector interface {
	// apply appends to out what the selector picks from v.
	apply(v, root any, out []any) []any
	String() string
}

func (p *path) definite() bool {
	for _, s := range p.steps {
		if s.recursive {
			return false
		}
		switch s.sel.(type) {
		case nameSel, indexSel:
		default:
			return false
		}
	}
	return true
}

func (p *path) eval(root any) []any {
	nodes := []any{root}
	for _, s := range p.steps {
		var next []any
		for _, n := range nodes {
			if s.recursive {
				for _, d := range descendants(n, nil) {
					next = s.sel.apply(d, root, next)
				}
			} else {
				next = s.sel.apply(n, root, next)
			}
		}
		nodes = next
	}
	return nodes
}

// lookup walks a definite path, saying where it stopped when nothing is
// there.
func (p *path) lookup(src string, root any) (any, error) {
	cur := root
	at := "$"
	if p.context {
		at = "$$"
	}
	for _, s := range p.steps {
		switch sel := s.sel.(type) {
		case nameSel:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, &PathError{Path: src, Reason: fmt.Sprintf("%s is %s, not an object", at, typeName(cur))}
			}
			v, ok := m[sel.name]
			if !ok {
				return nil, &PathError{Path: src, Reason: fmt.Sprintf("no field %q at %s", sel.name, at)}
			}
			cur = v
		case indexSel:
			a, ok := cur.([]any)
			if !ok {
				return nil, &PathError{Path: src, Reason: fmt.Sprintf("%s is %s, not an array", at, typeName(cur))}
			}
			i, ok := sel.resolve(len(a))
			if !ok {
				return nil, &PathError{Path: src, Reason: fmt.Sprintf("index %d out of range at %s (length %d)", sel.i, at, len(a))}
			}
			cur = a[i]
		}
		at += s.sel.String()
	}
	return cur, nil
}

// descendants appends v and everything below it, in document order
// (object members by key).
func descendants(v any, out []any) []any {
	out = append(out, v)
	switch c := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(c) {
			out = descendants(c[k], out)
		}
	case []any:
		for _, x := range c {
			out = descendants(x, out)
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

type nameSel struct{ name string }

func (s nameSel) apply(v, _ any, out []any) []any {
	if m, ok := v.(map[string]any); ok {
		if x, ok := m[s.name]; ok {
			out = append(out, x)
		}
	}
	return out
}

func (s nameSel) String() string {
	if s.name != "" && strings.IndexFunc(s.name, isNameStop) < 0 && s.name != "*" {
		return "." + s.name
	}
	return "[" + quote(s.name) + "]"
}

type indexSel struct{ i int }

func (s indexSel) resolve(n int) (int, bool) {
	i := s.i
	if i < 0 {
		i += n
	}
	return i, i >= 0 && i < n
}

func (s indexSel) apply(v, _ any, out []any) []any {
	if a, ok := v.([]any); ok {
		if i, ok := s.resolve(len(a)); ok {
			out = append(out, a[i])
		}
	}
	return out
}

func (s indexSel) String() string { return "[" + strconv.Itoa(s.i) + "]" }

type wildSel struct{}

func (wildSel) apply(v, _ any, out []any) []any {
	switch c := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(c) {
			out = append(out, c[k])
		}
	case []any:
		out = append(out, c...)
	}
	return out
}

func (wildSel) String() string { return "[*]" }

// sliceSel is [start:end:step] with Python semantics; nil bounds are
// defaults.
type sliceSel struct{ start, end, step *int }

func (s sliceSel) apply(v, _ any, out []any) []any {
	a, ok := v.([]any)
	if !ok {
		return out
	}
	n := len(a)
	st := 1
	if s.step != nil {
		st = *s.step
	}
	norm := func(p *int, def, lo, hi int) int {
		if p == nil {
			return def
		}
		i := *p
		if i < 0 {
			i += n
		}
		return max(lo, min(hi, i))
	}
	if st > 0 {
		for i := norm(s.start, 0, 0, n); i < norm(s.end, n, 0, n); i += st {
			out = append(out, a[i])
		}
	} else {
		for i := norm(s.start, n-1, -1, n-1); i > norm(s.end, -1, -1, n-1); i += st {
			out = append(out, a[i])
		}
	}
	return out
}

func (s sliceSel) String() string {
	f := func(p *int) string {
		if p == nil {
			return ""
		}
		return strconv.Itoa(*p)
	}
	r := "[" + f(s.start) + ":" + f(s.end)
	if s.step != nil {
		r += ":" + f(s.step)
	}
	return r + "]"
}

// unionSel is [a,b,...] of names or indexes.
type unionSel struct{ members []selector }

func (s unionSel) apply(v, root any, out []any) []any {
	for _, m := range s.members {
		out = m.apply(v, root, out)
	}
	return out
}

func (s unionSel) String() string {
	parts := make([]string, len(s.members))
	for i, m := range s.members {
		switch m := m.(type) {
		case nameSel:
			parts[i] = quote(m.name)
		case indexSel:
			parts[i] = strconv.Itoa(m.i)
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// filterSel is [?(expr)]: the elements of an array for which expr holds,
// or an object itself when it holds for the object (as Jayway does).
type filterSel struct{ expr filterExpr }

func (s filterSel) apply(v, root any, out []any) []any {
	switch c := v.(type) {
	case []any:
		for _, x := range c {
			if s.expr.test(x, root) {
				out = append(out, x)
			}
		}
	case map[string]any:
		if s.expr.test(c, root) {
			out = append(out, c)
		}
	}
	return out
}

func (s filterSel) String() string { return "[?(" + s.expr.String() + ")]" }

func quote(s string) string {
	b, _ := Encode(s)
	r := string(b[1 : len(b)-1])
	r = strings.ReplaceAll(r, `\"`, `"`)
	r = strings.ReplaceAll(r, `'`, `\'`)
	return "'" + r + "'"
}

// isNameStop reports the runes that end a dot-notation name.
func isNameStop(r rune) bool {
	switch r {
	case '.', '[', ']', '(', ')', '=', '!', '<', '>', '&', '|', ',', '\'', '"', ' ', '\t', '\n', '\r', '*', '?', '@', '$':
		return true
	}
	return false
}

// parser is a cursor over a Path or intrinsic call.
type parser struct {
	s   string
	pos int
}

func (ps *parser) errf(format string, args ...any) error {
	return &SyntaxError{Text: ps.s, Offset: ps.pos, Msg: fmt.Sprintf(format, args...)}
}

func (ps *parser) eof() bool { return ps.pos >= len(ps.s) }

func (ps *parser) peek() byte {
	if ps.eof() {
		return 0
	}
	return ps.s[ps.pos]
}

func (ps *parser) has(prefix string) bool { return strings.HasPrefix(ps.s[ps.pos:], prefix) }

func (ps *parser) skipSpace() {
	for !ps.eof() && strings.IndexByte(" \t\n\r", ps.peek()) >= 0 {
		ps.pos++
	}
}

func (ps *parser) expect(tok string) error {
	if !ps.has(tok) {
		return ps.errf("expected %q, found %s", tok, ps.found())
	}
	ps.pos += len(tok)
	return nil
}

// found describes what is at the cursor for error messages.
func (ps *parser) found() string {
	if ps.eof() {
		return "end of input"
	}
	r, _ := utf8.DecodeRuneInString(ps.s[ps.pos:])
	return strconv.QuoteRune(r)
}

func parsePath(p string) (*path, error) {
	ps := &parser{s: p}
	pp, err := ps.path()
	if err != nil {
		return nil, err
	}
	if !ps.eof() {
		return nil, ps.errf("unexpected %s after the path", ps.found())
	}
	return pp, nil
}

func parseReferencePath(p string) (*path, error) {
	pp, err := parsePath(p)
	if err != nil {
		return nil, err
	}
	for _, s := range pp.steps {
		var what string
		switch s.sel.(type) {
		case wildSel:
			what = "wildcards (*)"
		case sliceSel:
			what = "slices ([start:end])"
		case unionSel:
			what = "unions ([a,b])"
		case filterSel:
			what = "filters ([?(...)])"
		}
		if s.recursive {
			what = "recursive descent (..)"
		}
		if what != "" {
			return nil, &SyntaxError{Text: p, Offset: -1, Msg: "a reference path cannot use " + what}
		}
	}
	return pp, nil
}

// path parses "$" or "$$" and its steps, stopping at the first byte that
// cannot continue the path.
func (ps *parser) path() (*path, error) {
	if ps.peek() != '$' {
		return nil, ps.errf("a path must start with \"$\", found %s", ps.found())
	}
	ps.pos++
	pp := &path{}
	if ps.peek() == '$' {
		ps.pos++
		pp.context = true
	}
	steps, err := ps.steps()
	if err != nil {
		return nil, err
	}
	pp.steps = steps
	return pp, nil
}

func (ps *parser) steps() ([]step, error) {
	var steps []step
	for {
		switch {
		case ps.has(".."):
			ps.pos += 2
			var sel selector
			var err error
			switch {
			case ps.peek() == '*':
				ps.pos++
				sel = wildSel{}
			case ps.peek() == '[':
				sel, err = ps.bracket()
			default:
				sel, err = ps.name()
			}
			if err != nil {
				return nil, err
			}
			steps = append(steps, step{recursive: true, sel: sel})
		case ps.peek() == '.':
			ps.pos++
			if ps.peek() == '*' {
				ps.pos++
				steps = append(steps, step{sel: wildSel{}})
				continue
			}
			sel, err := ps.name()
			if err != nil {
				return nil, err
			}
			steps = append(steps, step{sel: sel})
		case ps.peek() == '[':
			sel, err := ps.bracket()
			if err != nil {
				return nil, err
			}
			steps = append(steps, step{sel: sel})
		default:
			return steps, nil
		}
	}
}

func (ps *parser) name() (selector, error) {
	start := ps.pos
	for !ps.eof() {
		r, n := utf8.DecodeRuneInString(ps.s[ps.pos:])
		if isNameStop(r) {
			break
		}
		ps.pos += n
	}
	if ps.pos == start {
		return nil, ps.errf("expected a field name, found %s", ps.found())
	}
	return nameSel{name: ps.s[start:ps.pos]}, nil
}

// bracket parses [...]: *, ?(filter), quoted names, indexes, slices and
// unions.
func (ps *parser) bracket() (selector, error) {
	ps.pos++ // [
	ps.skipSpace()
	var sel selector
	switch c := ps.peek(); {
	case c == '*':
		ps.pos++
		sel = wildSel{}
	case c == '?':
		ps.pos++
		if err := ps.expect("("); err != nil {
			return nil, err
		}
		e, err := ps.filterOr()
		if err != nil {
			return nil, err
		}
		ps.skipSpace()
		if err := ps.expect(")"); err != nil {
			return nil, err
		}
		sel = filterSel{expr: e}
	case c == '\'' || c == '"':
		var names []selector
		for {
			s, err := ps.quoted()
			if err != nil {
				return nil, err
			}
			names = append(names, nameSel{name: s})
			ps.skipSpace()
			if ps.peek() != ',' {
				break
			}
			ps.pos++
			ps.skipSpace()
			if c := ps.peek(); c != '\'' && c != '"' {
				return nil, ps.errf("expected a quoted name in the union, found %s", ps.found())
			}
		}
		sel = names[0]
		if len(names) > 1 {
			sel = unionSel{members: names}
		}
	case c == '-' || c == ':' || isDigit(c):
		var err error
		sel, err = ps.indexes()
		if err != nil {
			return nil, err
		}
	default:
		return nil, ps.errf("expected *, ?(, a quoted name or an index after \"[\", found %s", ps.found())
	}
	ps.skipSpace()
	if err := ps.expect("]"); err != nil {
		return nil, err
	}
	return sel, nil
}

// indexes parses n, n,m,... or start:end[:step].
func (ps *parser) indexes() (selector, error) {
	first, err := ps.optInt()
	if err != nil {
		return nil, err
	}
	ps.skipSpace()
	switch ps.peek() {
	case ':':
		sl := sliceSel{start: first}
		ps.pos++
		ps.skipSpace()
		if sl.end, err = ps.optInt(); err != nil {
			return nil, err
		}
		ps.skipSpace()
		if ps.peek() == ':' {
			ps.pos++
			ps.skipSpace()
			at := ps.pos
			if sl.step, err = ps.optInt(); err != nil {
				return nil, err
			}
			if sl.step != nil && *sl.step == 0 {
				ps.pos = at
				return nil, ps.errf("slice step cannot be 0")
			}
		}
		return sl, nil
	case ',':
		if first == nil {
			return nil, ps.errf("expected an index")
		}
		members := []selector{indexSel{i: *first}}
		for ps.peek() == ',' {
			ps.pos++
			ps.skipSpace()
			n, err := ps.optInt()
			if err != nil {
				return nil, err
			}
			if n == nil {
				return nil, ps.errf("expected an index in the union, found %s", ps.found())
			}
			members = append(members, indexSel{i: *n})
			ps.skipSpace()
		}
		return unionSel{members: members}, nil
	}
	if first == nil {
		return nil, ps.errf("expected an index, found %s", ps.found())
	}
	return indexSel{i: *first}, nil
}

// optInt parses an optional integer; nil when none is there.
func (ps *parser) optInt() (*int, error) {
	start := ps.pos
	if ps.peek() == '-' {
		ps.pos++
	}
	for isDigit(ps.peek()) {
		ps.pos++
	}
	if ps.pos == start {
		return nil, nil
	}
	text := ps.s[start:ps.pos]
	n, err := strconv.Atoi(text)
	if err != nil {
		ps.pos = start
		return nil, ps.errf("invalid index %q", text)
	}
	return &n, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// quoted parses a string in single or double quotes with JSON-style
// escapes (and \' ).
func (ps *parser) quoted() (string, error) {
	q := ps.peek()
	start := ps.pos
	ps.pos++
	var b strings.Builder
	for {
		if ps.eof() {
			ps.pos = start
			return "", ps.errf("unterminated string")
		}
		c := ps.s[ps.pos]
		switch {
		case c == q:
			ps.pos++
			return b.String(), nil
		case c == '\\':
			ps.pos++
			if ps.eof() {
				return "", ps.errf("unterminated escape")
			}
			e := ps.s[ps.pos]
			switch e {
			case '\'', '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				if ps.pos+5 > len(ps.s) {
					return "", ps.errf("invalid \\u escape")
				}
				r, err := strconv.ParseUint(ps.s[ps.pos+1:ps.pos+5], 16, 32)
				if err != nil {
					return "", ps.errf("invalid \\u escape")
				}
				b.WriteRune(rune(r))
				ps.pos += 4
			default:
				return "", ps.errf("invalid escape \\%c", e)
			}
			ps.pos++
		default:
			b.WriteByte(c)
			ps.pos++
		}
	}
}
