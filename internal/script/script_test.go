package script

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// sent is what a pass sent: each statement's query and arguments.
type sent struct {
	query string
	args  []string
}

func record(out *[]sent) Exec {
	return func(_ *Statement, q string, args []Value) error {
		s := sent{query: q}
		for _, a := range args {
			s.args = append(s.args, a.String())
		}
		*out = append(*out, s)
		return nil
	}
}

func mustMix(t *testing.T, d Dialect, srcs ...string) *Mix {
	t.Helper()
	var scs []*Script
	for i, src := range srcs {
		sc, err := Parse(context.Background(), "s"+string(rune('0'+i))+".sql", src, 1, d)
		if err != nil {
			t.Fatal(err)
		}
		scs = append(scs, sc)
	}
	m, err := NewMix(scs...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStatements: how a script is cut into statements, and what each mode
// sends for it.
func TestStatements(t *testing.T) {
	for _, tc := range []struct {
		name     string
		d        Dialect
		src      string
		prepared []string // Prepared of each statement
		simple   []string // what simple mode sends, :x = 7, :y = -2.5
	}{
		{
			name:     "one per line",
			src:      "\\set x 7\n\\set y -2.5\nSELECT :x;\nSELECT :y, :x;\n",
			prepared: []string{"SELECT $1;", "SELECT $1, $2;"},
			simple:   []string{"SELECT 7;", "SELECT -2.5, 7;"},
		},
		{
			name:     "spanning lines, comments and blanks",
			src:      "-- a comment\n\n\\set x 7\n\\set y 1\nSELECT a\n  FROM t -- why\n  WHERE id = :x;\n\n-- end\n",
			prepared: []string{"SELECT a\n  FROM t -- why\n  WHERE id = $1;"},
			simple:   []string{"SELECT a\n  FROM t -- why\n  WHERE id = 7;"},
		},
		{
			name:     "semicolons and colons in quotes, comments, parentheses, casts",
			src:      "\\set x 7\nSELECT ';:x', \"a;b\", $$;:x$$, $f$ ; $f$, /* ; :x */ :x::int, (SELECT 1; ), E'\\';:x';",
			prepared: []string{"SELECT ';:x', \"a;b\", $$;:x$$, $f$ ; $f$, /* ; :x */ $1::int, (SELECT 1; ), E'\\';:x';"},
			simple:   []string{"SELECT ';:x', \"a;b\", $$;:x$$, $f$ ; $f$, /* ; :x */ 7::int, (SELECT 1; ), E'\\';:x';"},
		},
		{
			name:     "no semicolon before a meta-command or the end",
			src:      "\\set x 7\nSELECT 1\n\\set y 2\nSELECT :y",
			prepared: []string{"SELECT 1", "SELECT $1"},
			simple:   []string{"SELECT 1", "SELECT 2"},
		},
		{
			name:     "mysql quoting and comments",
			d:        MySQL,
			src:      "\\set x 7\n# a comment\nSELECT 'it\\'s;', \"x;\", `a;b`, :x -- tail\n;\nSELECT @v:=:x;",
			prepared: []string{"SELECT 'it\\'s;', \"x;\", `a;b`, ? -- tail\n;", "SELECT @v:=?;"},
			simple:   []string{"SELECT 'it\\'s;', \"x;\", `a;b`, 7 -- tail\n;", "SELECT @v:=7;"},
		},
		{
			name:     "builtins",
			src:      "SELECT :client_id, :scale, :tables, :rows;",
			prepared: []string{"SELECT $1, $2, $3, $4;"},
			simple:   []string{"SELECT 3, 1, 2, 100;"},
		},
		{
			name:     "a lone semicolon is no statement",
			src:      ";\nSELECT 1;;",
			prepared: []string{"SELECT 1;"},
			simple:   []string{"SELECT 1;"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustMix(t, tc.d, tc.src)
			var got []string
			for _, st := range m.Scripts[0].Statements {
				got = append(got, st.Prepared)
			}
			if !slices.Equal(got, tc.prepared) {
				t.Errorf("prepared:\n got %q\nwant %q", got, tc.prepared)
			}
			var simple []sent
			c := m.NewClient(3, false, 2, 100)
			c.vars["y"] = Double(-2.5) // overwritten by a \set, if any
			if err := c.Pass(context.Background(), record(&simple)); err != nil {
				t.Fatal(err)
			}
			got = got[:0]
			for _, s := range simple {
				got = append(got, s.query)
				if s.args != nil {
					t.Errorf("simple mode sent arguments %q", s.args)
				}
			}
			if !slices.Equal(got, tc.simple) {
				t.Errorf("simple:\n got %q\nwant %q", got, tc.simple)
			}
			if m.Statements() != len(tc.prepared) {
				t.Errorf("Statements() = %d, want %d", m.Statements(), len(tc.prepared))
			}
		})
	}
}

// TestPreparedArgs: prepared mode sends the values apart, one per
// reference in order, and keeps variables from pass to pass.
func TestPreparedArgs(t *testing.T) {
	m := mustMix(t, Postgres, "\\set n 1\nSELECT :n, :n;\n\\set n :n + 1\nSELECT :n, :client_id;\n")
	c := m.NewClient(5, true, 1, 1)
	var out []sent
	for range 2 {
		if err := c.Pass(context.Background(), record(&out)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, s := range out {
		got = append(got, s.query+" "+strings.Join(s.args, ","))
	}
	exp := []string{"SELECT $1, $2; 1,1", "SELECT $1, $2; 2,5", "SELECT $1, $2; 1,1", "SELECT $1, $2; 2,5"}
	if !slices.Equal(got, exp) {
		t.Errorf("got %q, want %q", got, exp)
	}
}

// TestParseErrors: every problem is one line, FILE:LINE: and the fix.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		src, want string
		d         Dialect
	}{
		{src: "SELECT 1;\n\\gset\n", want: `f.sql:2: \gset is not supported by tlsbench: tlsbench discards query results: compute the value with \set instead`},
		{src: "\\if :x\n", want: `f.sql:1: \if is not supported by tlsbench: tlsbench runs a script straight through: put each branch in a script of its own and mix them with --script FILE@WEIGHT`},
		{src: "\n\n\\setshell x echo 1\n", want: `f.sql:3: \setshell is not supported by tlsbench`},
		{src: "\\startpipeline\n", want: `f.sql:1: \startpipeline is not supported by tlsbench`},
		{src: "\\shell ls\n", want: `f.sql:1: \shell is not supported by tlsbench`},
		{src: "\\frobnicate\n", want: `f.sql:1: invalid command \frobnicate: tlsbench runs \set and \sleep`},
		{src: "\\set x 1 +\n", want: `f.sql:1: syntax error at end of expression in command "set"`},
		{src: "\\set x (1\n", want: `f.sql:1: syntax error at end of expression: missing ")" in command "set"`},
		{src: "\\set x foo(1)\n", want: `f.sql:1: unexpected function name (foo) in command "set"`},
		{src: "\\set x random(1)\n", want: `f.sql:1: unexpected number of arguments (random) in command "set"`},
		{src: "\\set x 1 < 2 < 3\n", want: `f.sql:1: syntax error at "<" in command "set"`},
		{src: "\\set x 9223372036854775808\n", want: `f.sql:1: bigint constant overflow (9223372036854775808) in command "set"`},
		{src: "\\set x 1 $ 2\n", want: `f.sql:1: unexpected character '$' in command "set"`},
		{src: "\\set x\n", want: `f.sql:1: missing expression in command "set"`},
		{src: "\\set 1x 2\n", want: `f.sql:1: invalid variable name: "1x"`},
		{src: "\\set\n", want: `f.sql:1: missing argument in command "set"`},
		{src: "\\set x random_zipfian(1, 10, 0.5)\n", want: `f.sql:1: zipfian parameter must be in range [1.001, 1000] (not 0.500000) in command "set"`},
		{src: "\\set x random_gaussian(1, 10, 1.5)\n", want: `f.sql:1: gaussian parameter must be at least 2.000000 (not 1.500000) in command "set"`},
		{src: "\\set x random_exponential(1, 10, 0)\n", want: `f.sql:1: exponential parameter must be greater than zero (not 0.000000) in command "set"`},
		{src: "\\set x random(10, 1)\n", want: `f.sql:1: empty range given to random in command "set"`},
		{src: "\\set x 1 / 0\n", want: `f.sql:1: division by zero in command "set"`},
		{src: "\\set x debug(1)\n", want: `f.sql:1: debug() is not supported by tlsbench`},
		{src: "\\set x :y + 1\n", want: `f.sql:1: variable :y is not set: set it with \set y EXPRESSION on an earlier line`},
		{src: "SELECT :aid;\n\\set aid 1\n", want: `f.sql:1: variable :aid is not set`},
		{src: "\\set x 1\nSELECT :'x';\n", want: `f.sql:2: :'...' is psql's quoting`},
		{src: "\\sleep\n", want: `f.sql:1: missing argument in command "sleep"`},
		{src: "\\sleep 1 h\n", want: `f.sql:1: unrecognized time unit, must be us, ms or s (h)`},
		{src: "\\sleep x\n", want: `f.sql:1: invalid sleep time, must be an integer (x)`},
		{src: "\\sleep 1 ms x\n", want: `f.sql:1: too many arguments in command "sleep" (x)`},
		{src: "\\sleep :nope\n", want: `f.sql:1: variable :nope is not set`},
		{src: "SELECT 1;\n\nSELECT 'oops;\n", want: `f.sql:3: unterminated quoted string: close it with '`},
		{src: "SELECT $a$ x;\n", want: `f.sql:1: unterminated dollar-quoted string: close it with $a$`},
		{src: "SELECT /* x;\n", want: `f.sql:1: unterminated /* comment: close it with */`},
		{src: "SELECT 1 \\; SELECT 2;\n", want: `f.sql:1: \; is not supported by tlsbench`},
		{src: "-- nothing\n\\set x 1\n", want: `f.sql:1: the script has no SQL statement: write at least one, ending with ';'`},
		{src: "", want: `f.sql:1: the script has no SQL statement`},
		{src: "SELECT `a;\n", d: MySQL, want: "f.sql:1: unterminated quoted identifier: close it with `"},
	} {
		_, err := Parse(context.Background(), "f.sql", tc.src, 1, tc.d)
		if err == nil {
			t.Errorf("%q: no error, want %q", tc.src, tc.want)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("%q:\n got %s\nwant %s...", tc.src, msg, tc.want)
		}
		var se *Error
		if !errors.As(err, &se) || se.File != "f.sql" {
			t.Errorf("%q: %T is no *Error of f.sql", tc.src, err)
		}
	}
}

// TestExpressions: pgbench's operators, functions, types and NULL.
func TestExpressions(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{"1 + 2 * 3", "7"},
		{"(1 + 2) * 3", "9"},
		{"-2 * 3", "-6"},
		{"- -4", "4"},
		{"+4", "4"},
		{"7 / 2", "3"},
		{"-7 / 2", "-3"},
		{"7 % 3", "1"},
		{"-7 % 3", "-1"},
		{"7.5 % 2", "0"}, // % is an integer operator: rint(7.5) = 8
		{"7 / 2.0", "3.5"},
		{"1.5 + 1", "2.5"},
		{".5", "0.5"},
		{"1e3", "1000"},
		{"2.5e-1", "0.25"},
		{"-9223372036854775808", "-9223372036854775808"},
		{"1 < 2", "true"},
		{"2 <= 1", "false"},
		{"3 > 2.5", "true"},
		{"2 >= 2", "true"},
		{"1 = 1.0", "true"},
		{"1 <> 2", "true"},
		{"1 != 1", "false"},
		{"true and false", "false"},
		{"TRUE OR false", "true"},
		{"not true", "false"},
		{"not 1 = 2", "true"},
		{"null and false", "NULL"},
		{"1 + null", "NULL"},
		{"null is null", "true"},
		{"1 isnull", "false"},
		{"1 notnull", "true"},
		{"true is not false", "true"},
		{"5 & 3", "1"},
		{"5 | 3", "7"},
		{"5 # 3", "6"},
		{"~0", "-1"},
		{"1 << 4", "16"},
		{"-16 >> 2", "-4"},
		{"abs(-3)", "3"},
		{"abs(-2.5)", "2.5"},
		{"int(2.5)", "2"},
		{"int(3.5)", "4"},
		{"int(-2.7)", "-3"},
		{"double(3)", "3"},
		{"greatest(1, 5, 3)", "5"},
		{"least(4, 2.5, 3)", "2.5"},
		{"pi()", "3.14159265358979"},
		{"sqrt(16)", "4"},
		{"ln(exp(2))", "2"},
		{"pow(2, 10)", "1024"},
		{"POWER(2, 0.5)", "1.4142135623731"},
		{"mod(7, 3)", "1"},
		{"case when 1 > 2 then 1 when 2 > 1 then 2 else 3 end", "2"},
		{"case when false then 1 end", "NULL"},
		// pgbench's own test vectors (t/001_pgbench_with_server.pl).
		{"hash(10, 5432)", "-5817877081768721676"},
		{"hash_fnv1a(10, 5432)", "-7793829335365542153"},
		{"17 / (4|1) + ( 4 + (7 >> 2))", "8"},
		{"- (3 * 4 - (-(~ 1) + -(~ 0))) / -1 + 3 % -1", "9"},
		{"64 % (((2 + 1 * 2 + (1 # 2) | 4 * (2 & 11)) - (1 << 2)) + 2)", "12"},
		{"sqrt(+1.5 * 2.0) * abs(-0.8E1)", "13.856406460551"},
		{"least(-5.18, .0E0, 1.0/0) * -3.3", "17.094"},
		{"10 + mod(13 * 7 + 12, 13) - mod(-19 * 11 - 17, 19)", "39"},
		{"pow(-2.0,-3.0)", "-0.125"},
		{"pow(9223372036854775807, 2)", "8.50705917302346e+37"},
		{"case when false THEN -1 when 1 = 1 then 13 + 19 + 2.0 end", "34"},
		{"1e300 * 1e300", "inf"},
	} {
		sc, err := Parse(context.Background(), "e.sql", "\\set v "+tc.expr+"\nSELECT :v;\n", 1, Postgres)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		m, _ := NewMix(sc)
		c := m.NewClient(0, false, 1, 1)
		var out []sent
		if err := c.Pass(context.Background(), record(&out)); err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if got := strings.TrimSuffix(strings.TrimPrefix(out[0].query, "SELECT "), ";"); got != tc.want {
			t.Errorf("%s = %s, want %s", tc.expr, got, tc.want)
		}
	}
}

// TestRuntimeErrors: a value that fails only at run time fails the pass,
// naming the file and line.
func TestRuntimeErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"\\set d 0\n\\set x 1 / :d\nSELECT 1;", `r.sql:2: division by zero in command "set"`},
		{"\\set p 1\n\\set x random_zipfian(1, 10, :p)\nSELECT 1;", `r.sql:2: zipfian parameter must be in range [1.001, 1000] (not 1.000000) in command "set"`},
		{"\\set x 9223372036854775807\n\\set y :x + 1\nSELECT 1;", `r.sql:2: bigint add out of range in command "set"`},
		{"\\set b true\n\\set y :b + 1\nSELECT 1;", `r.sql:2: cannot coerce boolean to int in command "set"`},
	} {
		m := mustMixNamed(t, "r.sql", tc.src)
		err := m.NewClient(0, true, 1, 1).Pass(context.Background(), record(new([]sent)))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %s", tc.src, err, tc.want)
		}
	}
	// The driver's error is kept in the chain, with the line in front.
	m := mustMixNamed(t, "r.sql", "SELECT 1;\nSELECT 2;")
	boom := errors.New("ERROR: boom")
	err := m.NewClient(0, true, 1, 1).Pass(context.Background(), func(st *Statement, _ string, _ []Value) error {
		if st.Line == 2 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || err.Error() != "r.sql:2: ERROR: boom" {
		t.Errorf("got %v", err)
	}
}

func mustMixNamed(t *testing.T, name, src string) *Mix {
	t.Helper()
	sc, err := Parse(context.Background(), name, src, 1, Postgres)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMix(sc)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRandomBounds: every distribution stays in [lb, ub], also at the
// edges of int64 and for one-value ranges, and random() reaches both ends.
func TestRandomBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	draws := 2000
	if testing.Short() {
		draws = 300 // an end of 11 values is still missed 1 time in 10^12
	}
	for _, r := range [][2]int64{{1, 10}, {-5, 5}, {7, 7}, {1, 100000}, {math.MinInt64 / 2, math.MaxInt64/2 - 1}, {math.MaxInt64 - 3, math.MaxInt64}} {
		lo, hi := r[0], r[1]
		seenLo, seenHi := false, false
		for _, f := range []struct {
			name  string
			param float64
		}{{"random", 0}, {"random_exponential", 0.001}, {"random_exponential", 5}, {"random_gaussian", 2}, {"random_gaussian", 10}, {"random_zipfian", 1.001}, {"random_zipfian", 2.5}} {
			for range draws {
				v, err := random(f.name, []Value{Int(lo), Int(hi), Double(f.param)}, rng)
				if err != nil {
					t.Fatalf("%s(%d, %d, %v): %v", f.name, lo, hi, f.param, err)
				}
				if v.i < lo || v.i > hi {
					t.Fatalf("%s(%d, %d, %v) = %d: out of range", f.name, lo, hi, f.param, v.i)
				}
				if f.name == "random" {
					seenLo, seenHi = seenLo || v.i == lo, seenHi || v.i == hi
				}
			}
		}
		if hi-lo < 100 && (!seenLo || !seenHi) {
			t.Errorf("random(%d, %d) never drew an end in %d draws", lo, hi, draws)
		}
	}
	if _, err := random("random", []Value{Int(math.MinInt64), Int(math.MaxInt64)}, rng); err == nil || err.Error() != "random range is too large" {
		t.Errorf("full int64 range: %v", err)
	}
}

// TestDistributions: the shapes pgbench documents, with loose bounds.
func TestDistributions(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 100000
	draw := func(name string, lo, hi int64, param float64) []int {
		counts := make([]int, hi-lo+1)
		for range n {
			v, err := random(name, []Value{Int(lo), Int(hi), Double(param)}, rng)
			if err != nil {
				t.Fatal(err)
			}
			counts[v.i-lo]++
		}
		return counts
	}
	// Zipfian s: P(k) ∝ 1/k^s, so P(1)/P(2) = 2^s.
	z := draw("random_zipfian", 1, 100, 2)
	if r := float64(z[0]) / float64(z[1]); r < 3.5 || r > 4.5 {
		t.Errorf("zipfian(2): P(1)/P(2) = %.2f, want about 4", r)
	}
	// Exponential: the density at the top is exp(-param) of the bottom's;
	// pgbench's docs: with param 5, the first 1/5... compare the halves.
	e := draw("random_exponential", 1, 10, 1)
	if r := float64(e[0]) / float64(e[9]); r < 1.8 || r > 3.0 {
		t.Errorf("exponential(1): P(1)/P(10) = %.2f, want about e^(0.9) = 2.46", r)
	}
	// Gaussian, param 2: pgbench's docs say 67% within the middle half
	// (one standard deviation), 95% of draws within ... check the middle.
	g := draw("random_gaussian", 1, 100, 2)
	mid := 0
	for i := 25; i < 75; i++ {
		mid += g[i]
	}
	if share := float64(mid) / n; share < 0.65 || share > 0.72 {
		t.Errorf("gaussian(2): %.3f of draws in the middle half, want about 0.68", share)
	}
	// Uniform: every value about n/10.
	for i, c := range draw("random", 1, 10, 0) {
		if c < n/10*9/10 || c > n/10*11/10 {
			t.Errorf("random(1, 10): %d drew %d of %d", i+1, c, n)
		}
	}
}

// TestMix: FILE@WEIGHT picks each script with probability weight/total;
// weight 0 never runs; Statements is the weighted mean.
func TestMix(t *testing.T) {
	a, _ := Parse(context.Background(), "a.sql", "SELECT 1;", 3, Postgres)
	b, _ := Parse(context.Background(), "b.sql", "SELECT 2;\nSELECT 3;\nSELECT 4;\nSELECT 5;\nSELECT 6;", 1, Postgres)
	z, _ := Parse(context.Background(), "z.sql", "SELECT 0;", 0, Postgres)
	m, err := NewMix(a, b, z)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Statements(); got != 2 { // (3*1 + 1*5) / 4
		t.Errorf("Statements() = %d, want 2", got)
	}
	if b.Statements[0].ID != 1 || z.Statements[0].ID != 6 || b.Statements[0].Name() != "P_1" {
		t.Errorf("statement ids: %d, %d", b.Statements[0].ID, z.Statements[0].ID)
	}
	c := m.NewClient(0, true, 1, 1)
	counts := map[string]int{}
	for range 4000 {
		if err := c.Pass(context.Background(), func(st *Statement, q string, _ []Value) error {
			if st.Line == 1 {
				counts[q]++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if counts["SELECT 0;"] != 0 || counts["SELECT 1;"] < 2800 || counts["SELECT 1;"] > 3200 {
		t.Errorf("4000 passes ran %v, want about 3000 of a.sql and none of z.sql", counts)
	}
	if _, err := NewMix(z); err == nil {
		t.Error("a mix of weight 0 was accepted")
	}
}

// TestSleep: \sleep waits, in its unit, and a cancelled ctx ends it.
func TestSleep(t *testing.T) {
	m := mustMixNamed(t, "s.sql", "\\set d 30\n\\sleep :d ms\n\\sleep 20000us\nSELECT 1;")
	start := time.Now()
	if err := m.NewClient(0, true, 1, 1).Pass(context.Background(), record(new([]sent))); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 2*time.Second {
		t.Errorf("slept %v, want 50ms", d)
	}
	long := mustMixNamed(t, "s.sql", "\\sleep 10s\nSELECT 1;")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start = time.Now()
	err := long.NewClient(0, true, 1, 1).Pass(ctx, record(new([]sent)))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("cancelled sleep: %v after %v", err, time.Since(start))
	}
}
