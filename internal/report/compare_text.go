package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/stats"
)

const compareLegend = "old, new: mean ±half-width of the 95% CI over trials; delta: change of the mean ±half-width of its 95% interval " +
	"(Welch: the runs are not paired); * when the interval excludes 0, ~ when not; p: Welch's t-test; n: trials old+new"

// CompareText writes c as text tables, one per experiment and figure,
// benchstat-like: old, new, delta, and whether the change is significant.
func CompareText(w io.Writer, c *Comparison) error {
	var b strings.Builder
	b.WriteString("tlsbench compare\n")
	side(&b, "old", c.Old)
	side(&b, "new", c.New)
	if len(c.Differences) > 0 {
		fmt.Fprintf(&b, "note: the runs differ in %s: comparing them may be unfair\n", strings.Join(c.Differences, ", "))
	}
	for _, o := range c.Only {
		fmt.Fprintf(&b, "note: variant only in %s\n", o)
	}
	b.WriteString("\n")
	if len(c.Tables) == 0 {
		b.WriteString("no cell in common: nothing to compare\n")
	}
	for _, f := range c.Tables {
		t := Table{
			Title:  fmt.Sprintf("%s: %s, mean ±95%% CI", f.Experiment, f.Title),
			Left:   2,
			Header: []string{"", "variant", "old", "new", "delta", "", ""},
		}
		last := -1
		for _, r := range f.Rows {
			conc := plan.Label(r.Concurrency)
			if r.Concurrency == last {
				conc = ""
			}
			last = r.Concurrency
			t.add(append([]string{conc, r.Variant, meanCI(r.Old, f.precision), meanCI(r.New, f.precision)}, change(r)...)...)
		}
		t.write(&b)
	}
	b.WriteString(compareLegend + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// side is the header line of one run: "old: A.json — builtin, 2026-..., 3 × 1s".
func side(b *strings.Builder, label string, r Run) {
	res := r.Result
	parts := []string{shownTarget(res.Target.URL)}
	if res.Spec.Workload != "" {
		parts = append(parts, res.Spec.Workload)
	}
	if !res.Started.IsZero() {
		parts = append(parts, res.Started.UTC().Format(time.RFC3339))
	}
	if c := res.Capture; c != nil {
		parts = append(parts, fmt.Sprintf("%s: %s", c.Source, plural(int(c.Conns), "connection")))
	} else if res.Spec.Count > 0 {
		parts = append(parts, fmt.Sprintf("%d × %d operations", res.Spec.Trials, res.Spec.Count))
	} else {
		parts = append(parts, fmt.Sprintf("%d × %s", res.Spec.Trials, res.Spec.Duration))
	}
	if res.Interrupted {
		parts = append(parts, "interrupted")
	}
	fmt.Fprintf(b, "%s: %s — %s\n", label, r.Name, strings.Join(parts, ", "))
}

// meanCI renders "4134 ±271": the mean and the half-width of its 95% CI at
// the mean's precision; the mean alone for one trial, "-" for none.
func meanCI(s stats.Summary, f precision) string {
	if s.N == 0 {
		return "-"
	}
	if math.IsNaN(s.CI95) {
		return num(s.Mean, f)
	}
	return num(s.Mean, f) + " ±" + fixed(s.CI95, f(s.Mean))
}

// change is the last three cells of a row: the delta, * or ~, and the
// p-value with the trial counts.
func change(r Row) []string {
	if r.Only != "" {
		return []string{"only in " + r.Only, "", ""}
	}
	d := r.Delta
	if d.N == 0 {
		return []string{"-", "", ""}
	}
	s := pctCI(d)
	mark := "~"
	if d.Significant {
		mark = "*"
	}
	n := fmt.Sprintf("n=%d+%d", r.Old.N, r.New.N)
	if !math.IsNaN(d.P) {
		n = fmt.Sprintf("p=%.3f %s", d.P, n)
	}
	return []string{s, mark, n}
}
