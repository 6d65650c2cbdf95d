package report

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report/chart"
	"github.com/tlsbench/tlsbench/internal/result"
)

// perConnResult is a connect --per-conn run of plain and tls1.3 rsa2048 in
// three rounds: plain takes 0.2 ms per operation at every N, TLS as much
// more as over says (percent, by N), each round a little off.
func perConnResult(over map[int]float64) *result.Result {
	spec, err := plan.New(plan.Spec{Experiments: []plan.Experiment{plan.Connect}, TLS: []string{"off", "1.3"}, PerConn: []int{1, 3, 10, 100}})
	if err != nil {
		panic(err)
	}
	r := result.New()
	r.Spec, r.Variants = spec, spec.Variants()
	off := []float64{0.01, -0.008, 0.004}
	for round := range 3 {
		for _, n := range spec.PerConn {
			for vi, v := range r.Variants {
				ms := 0.2
				if !v.Plain() {
					ms *= 1 + over[n]/100 + off[(round+vi)%3]
				}
				elapsed := 10 * time.Second
				ops := int64(math.Round(elapsed.Seconds() * 1000 / ms))
				t := result.Trial{Experiment: plan.Connect, Variant: v.ID, Concurrency: 1, Round: round, Elapsed: elapsed,
					Ops: ops, Conns: ops / int64(n), Latency: result.Hist{Count: ops, Mean: ms / 2, P50: ms / 2, P95: ms}}
				if n > 1 {
					t.PerConn = n
				}
				r.Trials = append(r.Trials, t)
			}
		}
	}
	return r
}

// TestPerConnBreakEven: the least N from which on TLS's time per operation
// stays below plain's +10% (its interval included), and its wording and
// chart points, golden in testdata/perconn.golden.
func TestPerConnBreakEven(t *testing.T) {
	tests := []struct {
		name string
		over map[int]float64
		from int
	}{
		{"from 10 on", map[int]float64{1: 400, 3: 150, 10: 5, 100: 1}, 10},
		{"already at 1", map[int]float64{1: 3, 3: 1, 10: 0.5, 100: 0}, 1},
		{"never", map[int]float64{1: 400, 3: 50, 10: 20, 100: 12}, 0},
		{"not below at 100 again", map[int]float64{1: 400, 3: 150, 10: 2, 100: 30}, 0},
		{"an interval across 10%", map[int]float64{1: 400, 3: 150, 10: 9.5, 100: 1}, 100},
	}
	var words bytes.Buffer
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := perConnResult(tt.over)
			ix := newIndex(r)
			fs := ix.perConnOverheads()
			if len(fs) != 1 {
				t.Fatalf("%d break-even facts, want 1: %+v", len(fs), fs)
			}
			f := fs[0]
			if f.From != tt.from || f.Plain != "plain" || f.Variant != "tls1.3 rsa2048" || len(f.At) != 4 {
				t.Errorf("break-even from %d (%s against %s, %d points), want from %d", f.From, f.Variant, f.Plain, len(f.At), tt.from)
			}
			for _, p := range f.At {
				if want := tt.over[p.N]; math.Abs(p.Delta.Pct-want) > 1.5 {
					t.Errorf("at %d: %+.1f%%, want about %+.1f%%", p.N, p.Delta.Pct, want)
				}
			}
			var found []string
			for _, x := range Findings(r) {
				if x.Topic == TopicPerConn {
					found = append(found, x.Text)
				}
			}
			if len(found) != 1 {
				t.Fatalf("per-conn findings %q, want one", found)
			}
			fmt.Fprintf(&words, "%s:\n  %s\n  chart:", tt.name, found[0])
			for _, p := range f.At {
				fmt.Fprintf(&words, " (%d, %.1f ±%.1f)", p.N, p.Delta.Pct, p.Delta.CI95)
			}
			words.WriteString("\n")

			charts := Build(r).Figures
			i := slices.IndexFunc(charts, func(c chart.Figure) bool { return c.ID == "connect-per-conn-c1" })
			if i < 0 {
				t.Fatalf("no per-conn chart among %d", len(charts))
			}
			if _, err := chart.SVG(charts[i]); err != nil {
				t.Fatal(err)
			}
			// The text report's table: each N with both variants.
			var text bytes.Buffer
			if err := Build(r).Text(&text); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"connect c=1 by operations per connection", "connect c=1 per-conn 100: phases"} {
				if !strings.Contains(text.String(), want) {
					t.Errorf("the text report has no %q", want)
				}
			}
		})
	}
	golden(t, filepath.Join("testdata", "perconn.golden"), words.Bytes())
}

// TestPerConnApart: trials of more than one operation per connection stay
// out of the connect cells, whose figures are one per connection; a run of
// N > 1 only still compares its variants.
func TestPerConnApart(t *testing.T) {
	r := perConnResult(map[int]float64{1: 400, 3: 150, 10: 5, 100: 1})
	ix := newIndex(r)
	for k, ts := range ix.trials {
		for _, tr := range ts {
			if tr.PerConn > 1 {
				t.Errorf("cell %+v holds a trial of per-conn %d", k, tr.PerConn)
			}
		}
	}
	var only []result.Trial
	for _, tr := range r.Trials {
		if tr.PerConn == 10 || tr.PerConn == 100 {
			only = append(only, tr)
		}
	}
	r.Trials = only
	ix = newIndex(r)
	if !ix.comparable() || len(ix.experiments) != 0 {
		t.Errorf("per-conn 10,100 only: comparable %v, experiments %v; want comparable, no connect cells", ix.comparable(), ix.experiments)
	}
	if fs := ix.perConnOverheads(); len(fs) != 1 || fs[0].From != 10 {
		t.Errorf("per-conn 10,100 only: break-even %+v, want from 10", fs)
	}
}
