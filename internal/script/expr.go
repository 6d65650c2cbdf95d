package script

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
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

// maxDepth bounds the nesting of an expression (parentheses, function
// calls, unary operators), so that a hostile script cannot exhaust the
// stack; maxTerms bounds its length in terms (constants, variables,
// function calls), so that one \set cannot take the process's memory or a
// pass's time. pgbench has neither bound; scripts people write stay far
// below both.
const (
	maxDepth = 200
	maxTerms = 250_000
)

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
	tErr // the lexer failed: see parser.err
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

// lexer reads an expression's tokens one at a time, as the parser asks
// for them: a malformed expression fails where it goes wrong, without
// holding all its tokens.
type lexer struct {
	ctx   context.Context // a long expression stops when it is done
	s     string
	i     int
	terms int
}

// errTooLong and errTooDeep are an expression past maxTerms and maxDepth.
var (
	errTooLong = fmt.Errorf("the expression has more than %d terms (tlsbench's bound): split it into several \\set commands and combine their variables", maxTerms)
	errTooDeep = fmt.Errorf("the expression is nested more than %d deep (tlsbench's bound): split it into several \\set commands and combine their variables", maxDepth)
)

// next returns the next token, tEOF at the end.
func (l *lexer) next() (token, error) {
	t, err := l.scan()
	switch t.kind {
	case tInt, tMaxIntPlusOne, tDouble, tVar, tIdent:
		if l.terms++; l.terms > maxTerms {
			return token{}, errTooLong
		}
		if l.terms%4096 == 0 && l.ctx.Err() != nil {
			return token{}, l.ctx.Err()
		}
	}
	return t, err
}

func (l *lexer) scan() (token, error) {
	s := l.s
	for l.i < len(s) {
		i := l.i
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' || c == '\n':
			l.i++
		case c == ':':
			j := i + 1
			for j < len(s) && isAlnum(s[j]) {
				j++
			}
			if j == i+1 {
				return token{}, fmt.Errorf("unexpected character \":\": a variable is :name")
			}
			l.i = j
			return token{kind: tVar, text: s[i+1 : j]}, nil
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
			l.i = j
			if double {
				f, err := strconv.ParseFloat(text, 64)
				if err != nil || math.IsInf(f, 0) {
					return token{}, fmt.Errorf("double constant overflow (%s)", text)
				}
				return token{kind: tDouble, f: f, text: text}, nil
			}
			if strings.TrimLeft(text, "0") == "9223372036854775808" {
				return token{kind: tMaxIntPlusOne, text: text}, nil
			}
			n, err := strconv.ParseInt(text, 10, 64)
			if err != nil {
				return token{}, fmt.Errorf("bigint constant overflow (%s)", text)
			}
			return token{kind: tInt, i: n, text: text}, nil
		case isAlpha(c):
			j := i
			for j < len(s) && isAlnum(s[j]) {
				j++
			}
			w := s[i:j]
			l.i = j
			if lw := strings.ToLower(w); keywords[lw] {
				return token{kind: tKeyword, text: lw}, nil
			}
			return token{kind: tIdent, text: w}, nil
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
				return token{}, fmt.Errorf("unexpected character %q", rune(c))
			}
			l.i += len(op)
			if op == "!=" {
				op = "<>"
			}
			return token{kind: tOp, text: op}, nil
		}
	}
	return token{kind: tEOF}, nil
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
	lex   lexer
	tok   token // the lookahead, once read
	read  bool
	err   error // the lexer's, which ends the parse
	depth int

	// The checks made as the tree is built, while its nodes are fresh in
	// the cache: the variables that are set, the first that is not, and
	// the first function of constant arguments that fails (see call).
	defined map[string]bool
	missing string
	failed  error
	consts  *env
}

// peek returns the next token without taking it; after a lexing error it
// is tErr, which no rule accepts, and parseExpr reports p.err.
func (p *parser) peek() token {
	if !p.read {
		p.read = true
		if p.err == nil {
			p.tok, p.err = p.lex.next()
		}
		if p.err != nil {
			p.tok = token{kind: tErr}
		}
	}
	return p.tok
}

func (p *parser) next() token { t := p.peek(); p.read = false; return t }

func (p *parser) isOp(s string) bool { t := p.peek(); return t.kind == tOp && t.text == s }
func (p *parser) isKw(s string) bool { t := p.peek(); return t.kind == tKeyword && t.text == s }

// parseExpr parses the expression text of a \set whose variables must be
// among defined; a cancelled ctx ends it with ctx's error. Errors come in this order: the lexer's, a syntax error
// (also a bound, errTooLong or errTooDeep), an undefined variable
// (*undefinedError), a function of constant arguments that fails (see
// call).
func parseExpr(ctx context.Context, s string, defined map[string]bool) (*expr, error) {
	p := &parser{lex: lexer{ctx: ctx, s: s}, defined: defined, consts: &env{vars: map[string]Value{}, rng: rand.New(rand.NewPCG(1, 2))}}
	if p.peek().kind == tEOF {
		return nil, fmt.Errorf("missing expression")
	}
	e, err := p.expr(precOr)
	if err == nil && p.peek().kind != tEOF {
		err = fmt.Errorf("syntax error at %s", describe(p.peek()))
	}
	switch {
	case p.err != nil:
		return nil, p.err // the first thing that went wrong
	case err != nil:
		return nil, err
	case p.missing != "":
		return nil, &undefinedError{p.missing}
	case p.failed != nil:
		return nil, p.failed
	}
	return e, nil
}

// undefinedError is a variable read before any \set of it.
type undefinedError struct{ name string }

func (e *undefinedError) Error() string { return undefined(e.name) }

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

// call makes the node of fn on args. A function of constant arguments is
// evaluated at once, so that random_zipfian(1, 10, 0.5) or 1/0 fails when
// the script is read (the first such failure is p.failed), and, unless it
// is random, it is replaced by its value: 1 + 2 + ... + 9 is one constant,
// worked out once, each node on its arguments' values.
func (p *parser) call(fn string, args ...*expr) *expr {
	e := &expr{op: fn, args: args}
	for _, a := range args {
		if !a.literal() {
			return e
		}
	}
	// A random function of constant arguments checks its range and
	// parameter on any draw.
	v, err := e.eval(p.consts)
	switch {
	case err != nil:
		if p.failed == nil {
			p.failed = err
		}
	case !strings.HasPrefix(fn, "random"):
		return &expr{val: v}
	}
	return e
}

// expr parses operators that bind at least as tightly as min.
func (p *parser) expr(min int) (*expr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, errTooDeep
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
				left = p.call("<", right, left)
			case ">=":
				left = p.call("<=", right, left)
			default:
				left = p.call(fn, left, right)
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
		return p.call("!is", left, null), nil
	case "notnull":
		return p.call("!not", p.call("!is", left, null)), nil
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
	e := p.call("!is", left, right)
	if not {
		e = p.call("!not", e)
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
		if !p.defined[t.text] && p.missing == "" {
			p.missing = t.text
		}
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
			return p.call("!not", e), nil
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
			return p.call("-", &expr{val: Int(0)}, e), nil
		case "~":
			e, err := p.expr(precBit + 1)
			if err != nil {
				return nil, err
			}
			return p.call("#", &expr{val: Int(-1)}, e), nil
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
	return p.call("!case", append(args, els)...), nil
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
	return p.call(lname, args...), nil
}

// literal reports whether e is a constant: no variable, no function.
func (e *expr) literal() bool { return e.op == "" && e.name == "" }
