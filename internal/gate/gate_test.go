package gate

import (
	"encoding/xml"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want Gate
	}{
		// The three examples, exactly as written.
		{"connect[tls1.3].overhead.p99 < 40% @ci95", Gate{Experiment: plan.Connect, Variant: "tls1.3", Quantity: "p99", Overhead: true, Op: "<", Bound: 40, Unit: "%", CI95: true}},
		{"connect[*].roundtrips.tls-handshake <= 1", Gate{Experiment: plan.Connect, Variant: "*", Quantity: "roundtrips.tls-handshake", Op: "<=", Bound: 1, Unit: "count"}},
		{"compare: pool[*].server_cpu_per_op.delta < +10% @ci95", Gate{Compare: true, Experiment: plan.Pool, Variant: "*", Quantity: "server_cpu_per_op", Delta: true, Op: "<", Bound: 10, Unit: "%", CI95: true}},
		// Units scale to the quantity's.
		{"connect[tls1.3].phase.tls-handshake<2ms", Gate{Experiment: plan.Connect, Variant: "tls1.3", Quantity: "phase.tls-handshake", Op: "<", Bound: 2, Unit: "ms"}},
		{"pool[tls1.3 rsa2048].p95 <= 0.5 s", Gate{Experiment: plan.Pool, Variant: "tls1.3 rsa2048", Quantity: "p95", Op: "<=", Bound: 500, Unit: "ms"}},
		{"pool[plain].p50 < 750us", Gate{Experiment: plan.Pool, Variant: "plain", Quantity: "p50", Op: "<", Bound: 0.75, Unit: "ms"}},
		{"connect[*].server_cpu_per_op < 2ms", Gate{Experiment: plan.Connect, Variant: "*", Quantity: "server_cpu_per_op", Op: "<", Bound: 2000, Unit: "us"}},
		{"connect[*].client_cpu_per_op < 900", Gate{Experiment: plan.Connect, Variant: "*", Quantity: "client_cpu_per_op", Op: "<", Bound: 900, Unit: "us"}},
		{"pool[*].error_rate < 1%", Gate{Experiment: plan.Pool, Variant: "*", Quantity: "error_rate", Op: "<", Bound: 0.01, Unit: "ratio"}},
		{"pool[*].rate >= 1000/s", Gate{Experiment: plan.Pool, Variant: "*", Quantity: "rate", Op: ">=", Bound: 1000, Unit: "/s"}},
		{"connect[tls1.2].overhead.rate > -30% @ci95", Gate{Experiment: plan.Connect, Variant: "tls1.2", Quantity: "rate", Overhead: true, Op: ">", Bound: -30, Unit: "%", CI95: true}},
		{"connect[tls1.3].capacity >= 300/s", Gate{Experiment: plan.Connect, Variant: "tls1.3", Quantity: "capacity", Op: ">=", Bound: 300, Unit: "/s"}},
		{"pool[*].achieved_rate > 95", Gate{Experiment: plan.Pool, Variant: "*", Quantity: "achieved_rate", Op: ">", Bound: 95, Unit: "/s"}},
		{"storm[*].storm.all_connected < 3s", Gate{Experiment: plan.Storm, Variant: "*", Quantity: "storm.all_connected", Op: "<", Bound: 3000, Unit: "ms"}},
		{"connect[tls1.3].roundtrips.auth == 1", Gate{Experiment: plan.Connect, Variant: "tls1.3", Quantity: "roundtrips.auth", Op: "==", Bound: 1, Unit: "count"}},
	} {
		g, err := Parse(tc.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.expr, err)
			continue
		}
		tc.want.Name, tc.want.Expr = tc.expr, tc.expr
		if math.Abs(g.Bound-tc.want.Bound) < 1e-9 {
			g.Bound = tc.want.Bound
		}
		if g.unitOf() != tc.want.Unit {
			t.Errorf("Parse(%q): unit %s, want %s", tc.expr, g.unitOf(), tc.want.Unit)
		}
		if g.Name != tc.want.Name || g.Compare != tc.want.Compare || g.Experiment != tc.want.Experiment || g.Variant != tc.want.Variant ||
			g.Quantity != tc.want.Quantity || g.Overhead != tc.want.Overhead || g.Delta != tc.want.Delta || g.Op != tc.want.Op ||
			g.Bound != tc.want.Bound || g.CI95 != tc.want.CI95 {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.expr, g, tc.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ expr, problem string }{
		{"connect[tls1.3].overhead.p99 < 40", "in percent"},
		{"connect[tls1.3].overhead.p999 < 40%", `unknown quantity "p999"`},
		{"connect[tls1.3].p99 < 40%", "does not fit a time"},
		{"connect[tls1.3].p99 < 40", "a time needs its unit"},
		{"connect[*].roundtrips.tls-handshake <= 1ms", "does not fit round trips"},
		{"connect[*].roundtrips.tls-handshak <= 1", `unknown phase "tls-handshak"`},
		{"pool[*].error_rate < 1ms", "does not fit error_rate"},
		{"pool[*].rate > 3ms", "does not fit rate"},
		{"conect[*].rate > 3", `unknown experiment "conect"`},
		{"connect[].rate > 3", "selector is empty"},
		{"connect[*].rate > 3 @ci99", `unknown qualifier "@ci99"`},
		{"connect[*].rate", "not a gate"},
		{"connect[*].rate =< 3", "not a gate"},
		{"connect tls1.3 p99 < 3ms", "not a gate"},
		{"compare: pool[*].server_cpu_per_op < 10%", "QUANTITY.delta"},
		{"compare: pool[*].p99.delta < 10%", `unknown quantity "p99" for compare`},
		{"pool[*].server_cpu_per_op.delta < 10%", "put 'compare:' in front"},
	} {
		_, err := Parse(tc.expr)
		var ge *Error
		if !errors.As(err, &ge) || !strings.Contains(err.Error(), tc.problem) {
			t.Errorf("Parse(%q) = %v, want an *Error with %q", tc.expr, err, tc.problem)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q): the error is not one line: %q", tc.expr, err)
		}
	}
}

// spec is a planned lab run of connect with these TLS modes and keys.
func spec(t *testing.T, trials int, tls, keys []string) plan.Spec {
	t.Helper()
	s, err := plan.New(plan.Spec{Experiments: []plan.Experiment{plan.Connect}, Lab: "postgres", TLS: tls, Keys: keys, Trials: trials, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCheck(t *testing.T) {
	one := spec(t, 3, []string{"off", "1.3"}, []string{"rsa2048"})
	two := spec(t, 3, []string{"off", "1.3"}, []string{"rsa2048", "ecdsa-p256"})
	for _, tc := range []struct {
		expr    string
		spec    plan.Spec
		want    []string // the variants resolved
		problem string
	}{
		{"connect[tls1.3].overhead.p99 < 40% @ci95", one, []string{"tls1.3 rsa2048"}, ""},
		{"connect[tls1.3 rsa2048].p99 < 4ms", one, []string{"tls1.3 rsa2048"}, ""},
		{"connect[*].roundtrips.tls-handshake <= 1", two, []string{"plain", "tls1.3 rsa2048", "tls1.3 ecdsa-p256"}, ""},
		{"connect[ecdsa-p256].p99 < 4ms", two, []string{"tls1.3 ecdsa-p256"}, ""},
		{"connect[tls1.3].p99 < 4ms", two, nil, "ambiguous"},
		{"connect[tls1.2].p99 < 4ms", one, nil, `no variant "tls1.2": the run's variants are [plain], [tls1.3 rsa2048]`},
		{"pool[*].p99 < 4ms", one, nil, "no pool experiment (it runs connect)"},
		{"connect[plain].overhead.p99 < 4%", one, nil, "is the baseline"},
		{"connect[*].p99 < 4ms @ci95", spec(t, 1, []string{"off", "1.3"}, []string{"rsa2048"}), nil, "at least 2 trials"},
		{"compare: connect[*].p95.delta < 4%", one, nil, "give it to tlsbench compare"},
	} {
		g, err := Parse(tc.expr)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.expr, err)
		}
		got, err := Check([]Gate{g}, tc.spec)
		switch {
		case tc.problem != "":
			if err == nil || !strings.Contains(err.Error(), tc.problem) {
				t.Errorf("Check(%q) = %v, want %q", tc.expr, err, tc.problem)
			}
		case err != nil:
			t.Errorf("Check(%q): %v", tc.expr, err)
		case strings.Join(got[0].Variants, "|") != strings.Join(tc.want, "|"):
			t.Errorf("Check(%q) variants %q, want %q", tc.expr, got[0].Variants, tc.want)
		}
	}
}

func mustGate(t *testing.T, expr string, variants ...string) Gate {
	t.Helper()
	g, err := Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	g.Variants = variants
	return g
}

func TestEvaluate(t *testing.T) {
	nan := math.NaN()
	qs := []report.Quantity{
		{Experiment: plan.Connect, Variant: "plain", Concurrency: 1, Name: "p99", Mean: 1, CI95: 0.1, Overhead: stats.Delta{Pct: nan, CI95: nan}},
		{Experiment: plan.Connect, Variant: "tls1.3", Concurrency: 1, Name: "p99", Mean: 1.3, CI95: 0.1, Overhead: stats.Delta{N: 3, Pct: 30, CI95: 8}},
		{Experiment: plan.Connect, Variant: "tls1.3", Concurrency: 1, Name: "roundtrips.tls-handshake", Mean: 1, CI95: nan},
		{Experiment: plan.Connect, Variant: "tls1.3 x25519", Concurrency: 1, Name: "roundtrips.tls-handshake", Mean: 2, CI95: nan},
		{Experiment: plan.Connect, Variant: "tls1.3", Concurrency: 1024, Rate: 300, Name: "achieved_rate", Mean: 290, CI95: 20},
		{Experiment: plan.Connect, Variant: "tls1.3", Name: "capacity", Mean: 450, CI95: nan},
	}
	for _, tc := range []struct {
		gate      Gate
		pass      bool
		cell, why string
		value     float64
	}{
		{mustGate(t, "connect[tls1.3].overhead.p99 < 40% @ci95", "tls1.3"), true, "connect tls1.3 c=1", "", 38},
		{mustGate(t, "connect[tls1.3].overhead.p99 < 35% @ci95", "tls1.3"), false, "connect tls1.3 c=1", "", 38},
		{mustGate(t, "connect[tls1.3].overhead.p99 < 35%", "tls1.3"), true, "connect tls1.3 c=1", "", 30},
		{mustGate(t, "connect[tls1.3].overhead.p99 > 25% @ci95", "tls1.3"), false, "connect tls1.3 c=1", "", 22},
		{mustGate(t, "connect[*].overhead.p99 < 40%", "plain", "tls1.3"), true, "connect tls1.3 c=1", "", 30},
		{mustGate(t, "connect[*].roundtrips.tls-handshake <= 1", "plain", "tls1.3", "tls1.3 x25519"), false, "connect tls1.3 x25519 c=1", "", 2},
		{mustGate(t, "connect[tls1.3].roundtrips.tls-handshake == 1", "tls1.3"), true, "connect tls1.3 c=1", "", 1},
		{mustGate(t, "connect[plain].roundtrips.tls-handshake <= 1", "plain"), false, "", "no cell of connect [plain] measured roundtrips.tls-handshake", 0},
		{mustGate(t, "connect[*].roundtrips.auth <= 1 @ci95", "tls1.3"), false, "", "no cell", 0},
		{mustGate(t, "connect[tls1.3].roundtrips.tls-handshake <= 1 @ci95", "tls1.3"), false, "connect tls1.3 c=1", "no 95% interval", 0},
		{mustGate(t, "connect[tls1.3].achieved_rate > 280 @ci95", "tls1.3"), false, "connect tls1.3 at 300/s", "", 270},
		{mustGate(t, "connect[tls1.3].capacity >= 400/s", "tls1.3"), true, "connect tls1.3 (rate search)", "", 450},
	} {
		v := Evaluate([]Gate{tc.gate}, qs)[0]
		if v.Pass != tc.pass || v.Cell != tc.cell || !strings.Contains(v.Why, tc.why) || math.Abs(v.Value-tc.value) > 1e-9 {
			t.Errorf("%s: %+v, want pass %v cell %q why %q value %g", tc.gate.Expr, v, tc.pass, tc.cell, tc.why, tc.value)
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gs, err := ReadFile(write("ok.yaml", "- connect[*].roundtrips.tls-handshake <= 1\n- name: tls13-p99\n  gate: connect[tls1.3].overhead.p99 < 40% @ci95\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[0].Name != "connect[*].roundtrips.tls-handshake <= 1" || gs[1].Name != "tls13-p99" || gs[1].Quantity != "p99" {
		t.Errorf("ReadFile = %+v", gs)
	}
	for _, tc := range []struct{ text, problem string }{
		{"gates: 1\n", "not a YAML list"},
		{"- name: x\n  gat: connect[*].rate > 1\n", "item 1 is neither"},
		{"- connect[*].rat > 1\n", `item 1: --gate "connect[*].rat > 1": unknown quantity`},
		{"[]\n", "no gates"},
	} {
		if _, err := ReadFile(write("bad.yaml", tc.text)); err == nil || !strings.Contains(err.Error(), tc.problem) {
			t.Errorf("ReadFile(%q) = %v, want %q", tc.text, err, tc.problem)
		}
	}
}

// The structure of Jenkins xunit's junit-10.xsd (jenkinsci/xunit-plugin,
// src/main/resources/org/jenkinsci/plugins/xunit/types/model/xsd), which
// GitLab's reader also takes: testsuites > testsuite (name, tests,
// failures, errors required; time a SUREFIRE_TIME) > testcase (name
// required) > failure (message, type). Fields are strings so that a
// missing required attribute shows as "".
type xsdSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	Suites  []struct {
		Name     *string `xml:"name,attr"`
		Tests    *string `xml:"tests,attr"`
		Failures *string `xml:"failures,attr"`
		Errors   *string `xml:"errors,attr"`
		Time     *string `xml:"time,attr"`
		Cases    []struct {
			Name    *string `xml:"name,attr"`
			Failure []struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnit(t *testing.T) {
	vs := []result.Gate{
		{Name: "tls13-p99", Expr: "connect[tls1.3].overhead.p99 < 40% @ci95", Pass: false, Cell: "connect tls1.3 c=1", Value: 52, Mean: 45, Low: 38, High: 52, Bound: 40, Unit: "%", Cells: 1},
		{Name: "connect[*].roundtrips.tls-handshake <= 1", Expr: "connect[*].roundtrips.tls-handshake <= 1", Pass: true, Cell: "connect tls1.3 c=1", Value: 1, Mean: 1, Low: 1, High: 1, Bound: 1, Unit: "count", Cells: 1},
	}
	out, err := JUnit(vs, "tlsbench connect", "2026-11-27T11:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	var doc xsdSuites
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d testsuites, want 1:\n%s", len(doc.Suites), out)
	}
	s := doc.Suites[0]
	for what, p := range map[string]*string{"name": s.Name, "tests": s.Tests, "failures": s.Failures, "errors": s.Errors} {
		if p == nil {
			t.Errorf("testsuite has no %s (required by the schema):\n%s", what, out)
		}
	}
	if s.Time != nil && !regexp.MustCompile(`^(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?$`).MatchString(*s.Time) {
		t.Errorf("time %q is no SUREFIRE_TIME", *s.Time)
	}
	if *s.Tests != "2" || *s.Failures != "1" || len(s.Cases) != 2 {
		t.Fatalf("tests %s failures %s cases %d, want 2, 1, 2:\n%s", *s.Tests, *s.Failures, len(s.Cases), out)
	}
	if c := s.Cases[0]; c.Name == nil || *c.Name != "tls13-p99" || len(c.Failure) != 1 ||
		c.Failure[0].Message != "FAIL connect tls1.3 c=1: measured 45% (95% interval 38 to 52%), bound < 40%" {
		t.Errorf("the failed gate's testcase: %+v\n%s", c, out)
	}
	if c := s.Cases[1]; c.Name == nil || len(c.Failure) != 0 {
		t.Errorf("the passed gate's testcase: %+v", c)
	}
	md := string(Markdown(vs, "tlsbench connect"))
	for _, want := range []string{"1 of 2 gates passed", "| tls13-p99: `connect[tls1.3].overhead.p99 < 40% @ci95` | ❌ FAIL | connect tls1.3 c=1 | 45% (95% interval 38 to 52%) |", "| `connect[*].roundtrips.tls-handshake <= 1` | ✅ pass |"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}
