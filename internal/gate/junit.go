package gate

import (
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/tlsbench/tlsbench/internal/result"
)

// The JUnit XML that Jenkins (xunit's junit-10.xsd) and GitLab read: one
// testsuite, one testcase per gate, a failure element for a gate that
// failed with what was measured and the bound.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name      string      `xml:"name,attr"`
		Tests     int         `xml:"tests,attr"`
		Failures  int         `xml:"failures,attr"`
		Errors    int         `xml:"errors,attr"`
		Skipped   int         `xml:"skipped,attr"`
		Timestamp string      `xml:"timestamp,attr,omitempty"`
		Cases     []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Failure   *junitFailure `xml:"failure"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	junitFailure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

// JUnit writes the verdicts as JUnit XML; suite names the run ("tlsbench
// connect", "tlsbench compare") and started is its RFC 3339 start or "".
// A test case judged on fewer than result.SteadyRounds rounds has the
// note (result.RoundsNote) in its output: CI pages show a case alone.
func JUnit(vs []result.Gate, suite, started string) ([]byte, error) {
	s := junitSuite{Name: suite, Tests: len(vs), Failures: Failed(vs), Timestamp: started}
	for _, v := range vs {
		c := junitCase{Name: v.Name, Classname: "tlsbench.gates", SystemOut: verdictLine(v)}
		if note := result.RoundsNote([]result.Gate{v}); note != "" {
			c.SystemOut += "\n" + note
		}
		if !v.Pass {
			c.Failure = &junitFailure{Message: verdictLine(v), Type: "gate", Text: v.Expr}
		}
		s.Cases = append(s.Cases, c)
	}
	doc := junitSuites{Name: suite, Tests: s.Tests, Failures: s.Failures, Suites: []junitSuite{s}}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}

// verdictLine is a verdict in one line: "FAIL connect tls1.3 c=1: measured
// 52%; upper end 63% of the 95% t-interval over 5 paired rounds (41 to
// 63%), bound < 40%".
func verdictLine(v result.Gate) string {
	word := "pass"
	if !v.Pass {
		word = "FAIL"
	}
	if v.Why != "" {
		return word + ": " + v.Why
	}
	return word + " " + Reading(v)
}

// Reading is what decided a verdict, in a line: "connect tls1.3 c=1:
// measured 2 round trips, bound <= 1", or why it has no figure.
func Reading(v result.Gate) string {
	if v.Why != "" {
		return v.Why
	}
	return fmt.Sprintf("%s: measured %s, bound %s", v.Cell, v.Measured(), bound(v))
}

// bound is the gate's comparison as its expression wrote it.
func bound(v result.Gate) string {
	expr, _, _ := strings.Cut(v.Expr, "@")
	for _, op := range []string{"<=", ">=", "==", "<", ">"} {
		if i := strings.Index(expr, op); i >= 0 {
			return strings.TrimSpace(expr[i:])
		}
	}
	return expr
}

// Markdown writes the verdicts as a Markdown table for a CI step summary
// ($GITHUB_STEP_SUMMARY).
func Markdown(vs []result.Gate, title string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s: %d of %d gates passed\n\n", title, len(vs)-Failed(vs), len(vs))
	b.WriteString("| gate | verdict | cell | measured |\n|---|---|---|---|\n")
	esc := strings.NewReplacer("|", `\|`, "\n", " ")
	for _, v := range vs {
		word := "✅ pass"
		if !v.Pass {
			word = "❌ FAIL"
		}
		name := "`" + esc.Replace(v.Name) + "`"
		if v.Name != v.Expr {
			name = esc.Replace(v.Name) + ": `" + esc.Replace(v.Expr) + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, word, esc.Replace(v.Cell), esc.Replace(v.Measured()))
	}
	if note := result.RoundsNote(vs); note != "" {
		b.WriteString("\n" + note + "\n")
	}
	return []byte(b.String())
}
