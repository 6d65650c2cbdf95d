// Package script parses and runs pgbench custom scripts (\set with pgbench's expressions, \sleep, :var in SQL, statements ending at ';'): one pass through a script is one operation.
package script

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Dialect is the SQL a script is written in: it decides how statements
// are split (quotes, comments) and how a prepared statement marks its
// parameters.
type Dialect int

// The dialects.
const (
	Postgres Dialect = iota // $1, $2, ...; dollar quotes; E'' strings
	MySQL                   // ?; backticks, # comments, backslash escapes
)

// Builtins are the variables every client has before its first pass, as
// pgbench presets client_id, scale, random_seed and default_seed; tlsbench
// adds tables and rows, the size of its sbtest data.
var Builtins = []string{"client_id", "scale", "random_seed", "default_seed", "tables", "rows"}

// Error is a problem with a script, at a line of its file: one line, as
// "FILE:LINE: message".
type Error struct {
	File string
	Line int
	Msg  string
	Err  error // the driver's error, for a statement that failed
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s:%d: %s%v", e.File, e.Line, e.Msg, e.Err)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Script is one parsed script file.
type Script struct {
	Name   string // the file as given
	Weight int    // share of passes: Weight / the mix's total
	cmds   []command
	sleeps bool // some command is a \sleep
	// Statements are the script's SQL statements in order.
	Statements []*Statement
}

// command is one step of a pass: a \set, a \sleep or a statement.
type command struct {
	line  int
	set   string // the variable a \set assigns
	expr  *expr  // its expression
	sleep *sleep
	stmt  *Statement
}

type sleep struct {
	n    int64  // the duration in unit, when name is ""
	name string // the variable holding it
	unit time.Duration
}

// Statement is one SQL statement of a script.
type Statement struct {
	// ID numbers the statements of a Mix from 0, for prepared statement
	// names (pgbench's P_0, P_1, ...).
	ID   int
	Line int
	// Text is the statement as written, through its ';'.
	Text string
	// Prepared is Text with each :var replaced by the dialect's parameter
	// marker ($1, $2, ... or ?), in order; Vars names them.
	Prepared string
	Vars     []string
	parts    []string // Text around the variable references
}

// Name is the statement's prepared statement name, as pgbench names it.
func (st *Statement) Name() string { return "P_" + strconv.Itoa(st.ID) }

// simple writes the statement with the values of its variables in place
// of the references, as pgbench's simple mode does.
func (st *Statement) simple(vars map[string]Value) string {
	if len(st.Vars) == 0 {
		return st.Text
	}
	var b strings.Builder
	for i, name := range st.Vars {
		b.WriteString(st.parts[i])
		b.WriteString(vars[name].String())
	}
	b.WriteString(st.parts[len(st.Vars)])
	return b.String()
}

// unsupportedMeta says, for each pgbench meta-command tlsbench does not
// run, what to do instead.
var unsupportedMeta = map[string]string{
	"gset":          "tlsbench discards query results: compute the value with \\set instead",
	"aset":          "tlsbench discards query results: compute the value with \\set instead",
	"if":            "tlsbench runs a script straight through: put each branch in a script of its own and mix them with --script FILE@WEIGHT",
	"elif":          "tlsbench runs a script straight through: put each branch in a script of its own and mix them with --script FILE@WEIGHT",
	"else":          "tlsbench runs a script straight through: put each branch in a script of its own and mix them with --script FILE@WEIGHT",
	"endif":         "tlsbench runs a script straight through: put each branch in a script of its own and mix them with --script FILE@WEIGHT",
	"shell":         "tlsbench runs no shell commands during a measurement: remove it",
	"setshell":      "tlsbench runs no shell commands: compute the value with \\set instead",
	"startpipeline": "tlsbench sends one statement at a time: remove \\startpipeline and \\endpipeline",
	"endpipeline":   "tlsbench sends one statement at a time: remove \\startpipeline and \\endpipeline",
}

// maxArgs is pgbench's bound on variable references in one statement.
const maxArgs = 255

// Parse reads a script in pgbench's custom-script format: SQL statements
// ending at ';' (or at a meta-command, or the end of the file), which may
// span lines; lines starting with -- and blank lines are skipped;
// \set NAME EXPRESSION and \sleep N [us|ms|s] are run by tlsbench; any
// other meta-command is an Error. A variable must be set (by an earlier
// \set or as a builtin) before it is used, so that a misspelt name is
// found now, not sent to the server. Parsing takes time in proportion to
// src (a script may be long); a cancelled ctx ends it with ctx's error.
func Parse(ctx context.Context, name string, src string, weight int, d Dialect) (*Script, error) {
	sc := &Script{Name: name, Weight: weight}
	defined := map[string]bool{}
	for _, b := range Builtins {
		defined[b] = true
	}
	fail := func(line int, format string, args ...any) error {
		return &Error{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	sp := splitter{src: src, d: d, line: 1}
	done := ctx.Done()
	for {
		select {
		case <-done:
			return nil, ctx.Err()
		default:
		}
		item, err := sp.next()
		if err != nil {
			return nil, fail(sp.errLine, "%v", err)
		}
		if item == nil {
			break
		}
		if item.stmt != nil {
			st := item.stmt
			if len(st.Vars) > maxArgs {
				return nil, fail(st.Line, "statement has too many arguments (maximum is %d)", maxArgs)
			}
			for _, v := range st.Vars {
				if !defined[v] {
					return nil, fail(st.Line, "%s", undefined(v))
				}
			}
			sc.Statements = append(sc.Statements, st)
			sc.cmds = append(sc.cmds, command{line: st.Line, stmt: st})
			continue
		}
		cmd, err := meta(ctx, item.meta, defined)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			return nil, fail(item.line, "%v", err)
		}
		cmd.line = item.line
		sc.cmds = append(sc.cmds, cmd)
		sc.sleeps = sc.sleeps || cmd.sleep != nil
	}
	if len(sc.Statements) == 0 {
		return nil, fail(1, "the script has no SQL statement: write at least one, ending with ';'")
	}
	return sc, nil
}

func undefined(name string) string {
	return fmt.Sprintf("variable :%s is not set: set it with \\set %s EXPRESSION on an earlier line (preset: :%s)", name, name, strings.Join(Builtins, ", :"))
}

// meta parses a meta-command's line (without its backslash).
func meta(ctx context.Context, line string, defined map[string]bool) (command, error) {
	word, rest := cutWord(line)
	lw := strings.ToLower(word)
	switch lw {
	case "set":
		name, text := cutWord(rest)
		if name == "" {
			return command{}, fmt.Errorf("missing argument in command \"set\"")
		}
		if !validName(name) {
			return command{}, fmt.Errorf("invalid variable name: %q: use letters, digits and _, not starting with a digit", name)
		}
		e, err := parseExpr(ctx, text, defined)
		var undef *undefinedError
		switch {
		case errors.Is(err, errTooLong), errors.Is(err, errTooDeep), errors.As(err, &undef):
			return command{}, err // not pgbench's errors: they say their fix
		case err != nil:
			return command{}, fmt.Errorf("%v in command \"set\"", err)
		}
		defined[name] = true
		return command{set: name, expr: e}, nil
	case "sleep":
		s, err := parseSleep(rest, defined)
		return command{sleep: s}, err
	}
	if why, ok := unsupportedMeta[lw]; ok {
		return command{}, fmt.Errorf("\\%s is not supported by tlsbench: %s", lw, why)
	}
	if word == "" {
		return command{}, fmt.Errorf("a lone backslash: a meta-command is \\set or \\sleep")
	}
	return command{}, fmt.Errorf("invalid command \\%s: tlsbench runs \\set and \\sleep", word)
}

func parseSleep(args string, defined map[string]bool) (*sleep, error) {
	n, rest := cutWord(args)
	unit, more := cutWord(rest)
	switch {
	case n == "":
		return nil, fmt.Errorf("missing argument in command \"sleep\"")
	case more != "":
		return nil, fmt.Errorf("too many arguments in command \"sleep\" (%s)", more)
	}
	s := &sleep{unit: time.Second}
	if strings.HasPrefix(n, ":") {
		s.name = n[1:]
		if !defined[s.name] {
			return nil, fmt.Errorf("%s", undefined(s.name))
		}
	} else {
		// A unit may follow the number directly: \sleep 10ms.
		j := 0
		if j < len(n) && (n[j] == '+' || n[j] == '-') {
			j++
		}
		k := j
		for k < len(n) && isDigit(n[k]) {
			k++
		}
		if k == j || k < len(n) && unit != "" {
			return nil, fmt.Errorf("invalid sleep time, must be an integer (%s) in command \"sleep\"", n)
		}
		if k < len(n) {
			n, unit = n[:k], n[k:]
		}
		v, err := strconv.ParseInt(n, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("invalid sleep time (%s) in command \"sleep\"", n)
		}
		s.n = v
	}
	switch strings.ToLower(unit) {
	case "", "s":
	case "ms":
		s.unit = time.Millisecond
	case "us":
		s.unit = time.Microsecond
	default:
		return nil, fmt.Errorf("unrecognized time unit, must be us, ms or s (%s) in command \"sleep\"", unit)
	}
	return s, nil
}

// cutWord splits off the first whitespace-separated word.
func cutWord(s string) (word, rest string) {
	s = strings.TrimLeft(s, " \t\r\f\v\n")
	i := strings.IndexAny(s, " \t\r\f\v\n")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeft(s[i:], " \t\r\f\v\n")
}

// validName is pgbench's valid_variable_name: letters (any non-ASCII
// byte counts as one), digits and _, not starting with a digit.
func validName(name string) bool {
	if name == "" || isDigit(name[0]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isAlnum(name[i]) {
			return false
		}
	}
	return true
}

// Mix is the scripts of a run, each picked for a pass with probability
// weight / total weight, as pgbench's -f FILE@WEIGHT.
type Mix struct {
	Scripts []*Script
	total   int64
	// seed is the run's :random_seed and :default_seed.
	seed int64
	// timeout bounds every pass's \sleeps (SetTimeout); 0: unbounded.
	timeout time.Duration
}

// maxScripts is pgbench's bound on scripts in one run.
const maxScripts = 128

// NewMix makes the mix of scripts and numbers their statements.
func NewMix(scripts ...*Script) (*Mix, error) {
	if len(scripts) > maxScripts {
		return nil, fmt.Errorf("at most %d scripts are allowed", maxScripts)
	}
	m := &Mix{Scripts: scripts, seed: rand.Int64()}
	id := 0
	for _, sc := range scripts {
		if sc.Weight < 0 {
			return nil, fmt.Errorf("%s: weight %d is negative: use 0 or more", sc.Name, sc.Weight)
		}
		m.total += int64(sc.Weight)
		for _, st := range sc.Statements {
			st.ID = id
			id++
		}
	}
	if m.total == 0 {
		return nil, fmt.Errorf("the total weight of the scripts is zero: give at least one a weight above 0")
	}
	return m, nil
}

// SetTimeout bounds every pass by d, the operation's timeout: a \sleep
// that would outlast it ends the pass there with a TimeoutError. A script
// whose fixed sleeps (\sleep N, not \sleep :var) alone take longer would
// fail every pass: that is an Error now, at the sleep that passes d.
func (m *Mix) SetTimeout(d time.Duration) error {
	for _, sc := range m.Scripts {
		var sum time.Duration
		for _, cmd := range sc.cmds {
			if s := cmd.sleep; s != nil && s.name == "" {
				add := time.Duration(max(s.n, 0)) * s.unit
				if add > d-sum {
					return &Error{File: sc.Name, Line: cmd.line, Msg: fmt.Sprintf("\\sleep: the script's fixed sleeps take %s in every pass, longer than the timeout of %s that bounds a pass", sum+add, d)}
				}
				sum += add
			}
		}
	}
	m.timeout = d
	return nil
}

// Statements is the number of SQL statements a pass runs: for one script,
// its statements; for a mix, the mean weighted by the scripts' shares of
// passes, rounded (per-operation query counts of a mix are that
// approximation).
func (m *Mix) Statements() int {
	var sum int64
	for _, sc := range m.Scripts {
		sum += int64(sc.Weight) * int64(len(sc.Statements))
	}
	return int((sum + m.total/2) / m.total)
}

// pick chooses a script as pgbench's chooseScript does.
func (m *Mix) pick(rng *rand.Rand) *Script {
	if len(m.Scripts) == 1 {
		return m.Scripts[0]
	}
	w := rng.Int64N(m.total)
	for _, sc := range m.Scripts {
		w -= int64(sc.Weight)
		if w < 0 {
			return sc
		}
	}
	return m.Scripts[len(m.Scripts)-1]
}
