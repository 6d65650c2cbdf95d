package script

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// expr is a node of a \set expression, as pgbench's exprparse.y builds it:
// a constant, a variable, or a function (operators are functions).
type expr struct {
	op   string // "" for a constant or a variable; else a function or operator name
	val  Value  // the constant
	name string // the variable, without its colon
	args []*expr
}

// maxDepth bounds the nesting of an expression, so that a hostile script
// cannot exhaust the stack.
const maxDepth = 200

// token kinds of pgbench's expression lexer (exprscan.l, EXPR state).
const (
	tEOF = iota
	tInt
	tMaxIntPlusOne // 9223372036854775808, valid only after a unary minus
	tDouble
	tVar
	tIdent // a function name
	tKeyword
	tOp
)

type token struct {
	kind int
	text string // operator or keyword (lower case), identifier, variable name
	i    int64
	f    float64
}

// keywords are the words exprscan.l reserves, case-insensitively.
var keywords = map[string]bool{
	"and": true, "or": true, "not": true, "is": true, "isnull": true, "notnull": true,
	"case": true, "when": true, "then": true, "else": true, "end": true,
	"null": true, "true": true, "false": true,
}

func isAlpha(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c >= 0x80
}
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }

// lexExpr splits an expression into tokens.
func lexExpr(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' || c == '\n':
			i++
		case c == ':':
			j := i + 1
			for j < len(s) && isAlnum(s[j]) {
				j++
			}
			if j == i+1 {
				return nil, fmt.Errorf("unexpected character \":\": a variable is :name")
			}
			out = append(out, token{kind: tVar, text: s[i+1 : j]})
			i = j
		case isDigit(c) || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
			j := i
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			double := false
			if j < len(s) && s[j] == '.' {
				double = true
				j++
				for j < len(s) && isDigit(s[j]) {
					j++
				}
			}
			if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
				k := j + 1
				if k < len(s) && (s[k] == '+' || s[k] == '-') {
					k++
				}
				if k < len(s) && isDigit(s[k]) {
					for k < len(s) && isDigit(s[k]) {
						k++
					}
					double, j = true, k
				}
			}
			text := s[i:j]
			i = j
			if double {
				f, err := strconv.ParseFloat(text, 64)
				if err != nil || math.IsInf(f, 0) {
					return nil, fmt.Errorf("double constant overflow (%s)", text)
				}
				out = append(out, token{kind: tDouble, f: f, text: text})
				continue
			}
			if strings.TrimLeft(text, "0") == "9223372036854775808" {
				out = append(out, token{kind: tMaxIntPlusOne, text: text})
				continue
			}
			n, err := strconv.ParseInt(text, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bigint constant overflow (%s)", text)
			}
			out = append(out, token{kind: tInt, i: n, text: text})
		case isAlpha(c):
			j := i
			for j < len(s) && isAlnum(s[j]) {
				j++
			}
			w := s[i:j]
			i = j
			if lw := strings.ToLower(w); keywords[lw] {
				out = append(out, token{kind: tKeyword, text: lw})
			} else {
				out = append(out, token{kind: tIdent, text: w})
			}
		default:
			op := ""
			for _, o := range []string{"<>", "!=", "<=", ">=", "<<", ">>"} {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" && strings.IndexByte("+-*/%=<>|&#~(),", c) >= 0 {
				op = string(c)
			}
			if op == "" {
				return nil, fmt.Errorf("unexpected character %q", rune(c))
			}
			if op == "!=" {
				op = "<>"
			}
			out = append(out, token{kind: tOp, text: op})
			i += len(op)
		}
	}
	return out, nil
}

// Binding powers of pgbench's grammar, from its yacc precedence list
// (lowest first): OR, AND, NOT, IS, comparisons, bitwise, + -, * / %,
// unary.
const (
	precOr = 1 + iota
	precAnd
	precNot
	precIs
	precCmp
	precBit
	precAdd
	precMul
	precUnary
)

func infix(t token) (prec int, fn string) {
	switch t.kind {
	case tKeyword:
		switch t.text {
		case "or":
			return precOr, "!or"
		case "and":
			return precAnd, "!and"
		case "is", "isnull", "notnull":
			return precIs, t.text
		}
	case tOp:
		switch t.text {
		case "<", ">", "=", "<=", ">=", "<>":
			return precCmp, t.text
		case "|", "#", "&", "<<", ">>":
			return precBit, t.text
		case "+", "-":
			return precAdd, t.text
		case "*", "/":
			return precMul, t.text
		case "%":
			return precMul, "mod"
		}
	}
	return 0, ""
}

type parser struct {
	toks  []token
	pos   int
	depth int
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return token{kind: tEOF}
}

func (p *parser) next() token { t := p.peek(); p.pos++; return t }

func (p *parser) isOp(s string) bool { t := p.peek(); return t.kind == tOp && t.text == s }
func (p *parser) isKw(s string) bool { t := p.peek(); return t.kind == tKeyword && t.text == s }

// parseExpr parses the expression text of a \set.
func parseExpr(s string) (*expr, error) {
	toks, err := lexExpr(s)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("missing expression")
	}
	p := &parser{toks: toks}
	e, err := p.expr(precOr)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, fmt.Errorf("syntax error at %s", describe(t))
	}
	return e, nil
}

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of expression"
	case tInt, tDouble, tMaxIntPlusOne:
		return "number " + t.text
	case tVar:
		return ":" + t.text
	}
	return strconv.Quote(t.text)
}

func call(fn string, args ...*expr) *expr { return &expr{op: fn, args: args} }

// expr parses operators that bind at least as tightly as min.
func (p *parser) expr(min int) (*expr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, fmt.Errorf("expression nested more than %d deep", maxDepth)
	}
	left, err := p.prefix()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		prec, fn := infix(t)
		if prec == 0 || prec < min {
			return left, nil
		}
		p.next()
		switch prec {
		case precIs:
			if left, err = p.is(fn, left); err != nil {
				return nil, err
			}
		default:
			right, err := p.expr(prec + 1)
			if err != nil {
				return nil, err
			}
			switch fn {
			case ">": // a > b is b < a, as pgbench rewrites it
				left = call("<", right, left)
			case ">=":
				left = call("<=", right, left)
			default:
				left = call(fn, left, right)
			}
		}
		// Comparisons and IS do not associate: a < b < c is an error.
		if prec == precCmp || prec == precIs {
			if next, _ := infix(p.peek()); next == prec {
				return nil, fmt.Errorf("syntax error at %s", describe(p.peek()))
			}
		}
	}
}

// is parses what follows IS (NULL, TRUE, FALSE, each maybe after NOT),
// or the postfix ISNULL and NOTNULL.
func (p *parser) is(kw string, left *expr) (*expr, error) {
	null := &expr{val: Value{}}
	switch kw {
	case "isnull":
		return call("!is", left, null), nil
	case "notnull":
		return call("!not", call("!is", left, null)), nil
	}
	not := false
	if p.isKw("not") {
		p.next()
		not = true
	}
	t := p.next()
	var right *expr
	switch {
	case t.kind == tKeyword && t.text == "null":
		right = null
	case t.kind == tKeyword && (t.text == "true" || t.text == "false"):
		right = &expr{val: Bool(t.text == "true")}
	default:
		return nil, fmt.Errorf("syntax error at %s: IS takes NULL, TRUE or FALSE", describe(t))
	}
	e := call("!is", left, right)
	if not {
		e = call("!not", e)
	}
	return e, nil
}

func (p *parser) prefix() (*expr, error) {
	t := p.next()
	switch t.kind {
	case tInt:
		return &expr{val: Int(t.i)}, nil
	case tDouble:
		return &expr{val: Double(t.f)}, nil
	case tMaxIntPlusOne:
		return nil, fmt.Errorf("bigint constant overflow (%s)", t.text)
	case tVar:
		return &expr{name: t.text}, nil
	case tIdent:
		return p.function(t.text)
	case tKeyword:
		switch t.text {
		case "null":
			return &expr{val: Value{}}, nil
		case "true", "false":
			return &expr{val: Bool(t.text == "true")}, nil
		case "not":
			e, err := p.expr(precNot)
			if err != nil {
				return nil, err
			}
			return call("!not", e), nil
		case "case":
			return p.caseExpr()
		}
	case tOp:
		switch t.text {
		case "(":
			e, err := p.expr(precOr)
			if err != nil {
				return nil, err
			}
			if !p.isOp(")") {
				return nil, fmt.Errorf("syntax error at %s: missing \")\"", describe(p.peek()))
			}
			p.next()
			return e, nil
		case "+":
			return p.expr(precUnary)
		case "-":
			if p.peek().kind == tMaxIntPlusOne {
				p.next()
				return &expr{val: Int(math.MinInt64)}, nil
			}
			e, err := p.expr(precUnary)
			if err != nil {
				return nil, err
			}
			return call("-", &expr{val: Int(0)}, e), nil
		case "~":
			e, err := p.expr(precBit + 1)
			if err != nil {
				return nil, err
			}
			return call("#", &expr{val: Int(-1)}, e), nil
		}
	}
	return nil, fmt.Errorf("syntax error at %s", describe(t))
}

func (p *parser) caseExpr() (*expr, error) {
	var args []*expr
	for p.isKw("when") {
		p.next()
		cond, err := p.expr(precOr)
		if err != nil {
			return nil, err
		}
		if !p.isKw("then") {
			return nil, fmt.Errorf("syntax error at %s: CASE WHEN ... THEN", describe(p.peek()))
		}
		p.next()
		then, err := p.expr(precOr)
		if err != nil {
			return nil, err
		}
		args = append(args, cond, then)
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("syntax error at %s: CASE needs WHEN", describe(p.peek()))
	}
	els := &expr{val: Value{}}
	if p.isKw("else") {
		p.next()
		e, err := p.expr(precOr)
		if err != nil {
			return nil, err
		}
		els = e
	}
	if !p.isKw("end") {
		return nil, fmt.Errorf("syntax error at %s: CASE ... END", describe(p.peek()))
	}
	p.next()
	return call("!case", append(args, els)...), nil
}

// functions are pgbench's, with their number of arguments (-1: one or
// more; -2: one or two, the second a seed).
var functions = map[string]int{
	"abs": 1, "least": -1, "greatest": -1, "pi": 0, "sqrt": 1, "ln": 1, "exp": 1,
	"int": 1, "double": 1, "pow": 2, "power": 2, "mod": 2,
	"random": 2, "random_gaussian": 3, "random_exponential": 3, "random_zipfian": 3,
	"hash": -2, "hash_murmur2": -2, "hash_fnv1a": -2,
}

// unsupported are pgbench functions tlsbench does not run, and why.
var unsupported = map[string]string{
	"debug":   "tlsbench prints nothing per operation: remove debug()",
	"permute": "use random() or hash() instead",
}

func (p *parser) function(name string) (*expr, error) {
	lname := strings.ToLower(name)
	if !p.isOp("(") {
		return nil, fmt.Errorf("syntax error at %q: a name must be a function call, name(...), or a variable, :name", name)
	}
	p.next()
	var args []*expr
	if !p.isOp(")") {
		for {
			e, err := p.expr(precOr)
			if err != nil {
				return nil, err
			}
			args = append(args, e)
			if !p.isOp(",") {
				break
			}
			p.next()
		}
	}
	if !p.isOp(")") {
		return nil, fmt.Errorf("syntax error at %s: missing \")\" after the arguments of %s", describe(p.peek()), name)
	}
	p.next()
	if why, ok := unsupported[lname]; ok {
		return nil, fmt.Errorf("%s() is not supported by tlsbench: %s", lname, why)
	}
	n, ok := functions[lname]
	switch {
	case !ok:
		return nil, fmt.Errorf("unexpected function name (%s)", name)
	case n == -1 && len(args) == 0:
		return nil, fmt.Errorf("at least one argument expected (%s)", lname)
	case n == -2 && (len(args) < 1 || len(args) > 2):
		return nil, fmt.Errorf("unexpected number of arguments (%s)", lname)
	case n >= 0 && len(args) != n:
		return nil, fmt.Errorf("unexpected number of arguments (%s)", lname)
	}
	if lname == "power" {
		lname = "pow"
	}
	if lname == "hash" {
		lname = "hash_murmur2"
	}
	if n == -2 && len(args) == 1 {
		args = append(args, &expr{name: "default_seed"})
	}
	return call(lname, args...), nil
}

// vars calls f for every variable e reads.
func (e *expr) vars(f func(name string)) {
	if e.name != "" {
		f(e.name)
	}
	for _, a := range e.args {
		a.vars(f)
	}
}

// constant reports whether e's value is the same on every evaluation: no
// variable, no random function.
func (e *expr) constant() bool {
	if e.name != "" || strings.HasPrefix(e.op, "random") {
		return false
	}
	for _, a := range e.args {
		if !a.constant() {
			return false
		}
	}
	return true
}
