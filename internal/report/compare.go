package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// Comparison is a before/after of two runs, cell by cell and figure by
// figure. The runs share no rounds, so trials are not paired: each change is
// Welch's, new against old.
type Comparison struct {
	Old, New Run
	// Differences name what the runs' specs or machines differ in, e.g.
	// "duration (1s vs 2s)": a change there may explain a difference.
	Differences []string
	// Only lists variants present in one run only: "old: tls1.2 rsa2048".
	Only   []string
	Tables []Figure
}

// Run is one side of a comparison.
type Run struct {
	Name   string // as the user named the file
	Result *result.Result
}

// Figure is one measure (throughput, p95, ...) of one experiment.
type Figure struct {
	Experiment plan.Experiment
	Title      string // "connections/s", "p95 latency, ms"
	// Quantity names the figure as gates do (Quantity.Name): "rate",
	// "p95", "mean", "client_cpu_per_op", "server_cpu_per_op".
	Quantity  string
	precision precision
	Rows      []Row
}

// Row is one variant at one concurrency. Only is "old" or "new" for a cell
// that one run lacks (then Old or New has N 0 and Delta is unset).
type Row struct {
	Variant     string
	Concurrency int
	Old, New    stats.Summary
	Delta       stats.Delta
	Only        string
}

// measure is a figure taken from every trial that has it.
type measure struct {
	quantity  string // as Quantity.Name
	title     string
	precision precision
	only      plan.Experiment // "" for every experiment
	value     func(v *index, e plan.Experiment) func(result.Trial) (float64, bool)
}

var measures = []measure{
	{quantity: "rate", title: "", precision: rate, value: func(v *index, e plan.Experiment) func(result.Trial) (float64, bool) {
		m := v.metric(e)
		return func(t result.Trial) (float64, bool) { return m(t), true }
	}},
	{quantity: "p95", title: "p95 latency, ms", precision: millis, value: latency(func(h result.Hist) float64 { return h.P95 })},
	{quantity: "mean", title: "mean latency, ms", precision: millis, only: plan.Connect, value: latency(func(h result.Hist) float64 { return h.Mean })},
	{quantity: "client_cpu_per_op", title: "client CPU, µs/op", precision: millis, value: cpuPerOp(func(t result.Trial) time.Duration { return t.ClientCPU })},
	{quantity: "server_cpu_per_op", title: "server CPU, µs/op", precision: millis, value: cpuPerOp(func(t result.Trial) time.Duration { return t.ServerCPU })},
}

func latency(f func(result.Hist) float64) func(*index, plan.Experiment) func(result.Trial) (float64, bool) {
	return func(*index, plan.Experiment) func(result.Trial) (float64, bool) {
		return func(t result.Trial) (float64, bool) { return f(t.Latency), t.Latency.Count > 0 }
	}
}

func cpuPerOp(f func(result.Trial) time.Duration) func(*index, plan.Experiment) func(result.Trial) (float64, bool) {
	return func(*index, plan.Experiment) func(result.Trial) (float64, bool) {
		return func(t result.Trial) (float64, bool) {
			if t.Ops <= 0 || f(t) <= 0 {
				return 0, false
			}
			return float64(f(t)) / float64(time.Microsecond) / float64(t.Ops), true
		}
	}
}

// CompareQuantities are the quantities a comparison has, as Figure.Quantity
// names them (besides a capture's figures).
var CompareQuantities = func() []string {
	out := make([]string, len(measures))
	for i, m := range measures {
		out[i] = m.quantity
	}
	return out
}()

// Compare compares the cells and figures of two runs: variants are matched
// by ID, cells by experiment, variant and concurrency; a figure is compared
// where both runs have it.
func Compare(old, new Run) *Comparison {
	a, b := newIndex(old.Result), newIndex(new.Result)
	c := &Comparison{Old: old, New: new, Differences: differences(old.Result, new.Result)}
	for _, name := range a.variants {
		if !slices.Contains(b.variants, name) {
			c.Only = append(c.Only, "old: "+name)
		}
	}
	for _, name := range b.variants {
		if !slices.Contains(a.variants, name) {
			c.Only = append(c.Only, "new: "+name)
		}
	}
	variants := slices.Clone(a.variants)
	for _, name := range b.variants {
		if !slices.Contains(variants, name) {
			variants = append(variants, name)
		}
	}
	for _, e := range union(a.experiments, b.experiments, expOrder) {
		if e == plan.Wire {
			c.Tables = append(c.Tables, wireFigures(a, b, variants)...)
			continue
		}
		conc := union(a.conc[e], b.conc[e], cmp.Compare[int])
		for i, m := range measures {
			if m.only != "" && m.only != e {
				continue
			}
			f := Figure{Experiment: e, Title: m.title, Quantity: m.quantity, precision: m.precision}
			if i == 0 {
				f.Title = b.unit(e)
			}
			va, vb := m.value(a, e), m.value(b, e)
			for _, cc := range conc {
				for _, name := range variants {
					k := cellKey{e, name, cc}
					ta, tb := a.trials[k], b.trials[k]
					row := Row{Variant: name, Concurrency: cc}
					switch {
					case len(ta) == 0 && len(tb) == 0:
						continue
					case len(tb) == 0 || len(ta) == 0:
						// Listed once, with the main figure.
						if i > 0 {
							continue
						}
						row.Only = "old"
						if len(ta) == 0 {
							row.Only = "new"
						}
						row.Old, row.New = stats.Summarize(values(ta, va)), stats.Summarize(values(tb, vb))
					default:
						xa, xb := values(ta, va), values(tb, vb)
						if len(xa) == 0 || len(xb) == 0 {
							continue
						}
						row.Old, row.New, row.Delta = stats.Summarize(xa), stats.Summarize(xb), stats.Welch(xa, xb)
					}
					f.Rows = append(f.Rows, row)
				}
			}
			if len(f.Rows) > 0 {
				c.Tables = append(c.Tables, f)
			}
		}
	}
	return c
}

// values is the figure of every trial that has it.
func values(ts []result.Trial, f func(result.Trial) (float64, bool)) []float64 {
	var xs []float64
	for _, t := range ts {
		if x, ok := f(t); ok {
			xs = append(xs, x)
		}
	}
	return xs
}

// union merges two lists without repeats, sorted by order.
func union[T comparable](a, b []T, order func(T, T) int) []T {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.SortStableFunc(out, order)
	return out
}

// expOrder is the text report's order: connect, pool, then by name.
func expOrder(a, b plan.Experiment) int {
	rank := func(e plan.Experiment) int {
		switch e {
		case plan.Connect:
			return 0
		case plan.Pool:
			return 1
		}
		return 2
	}
	return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b))
}

// differences names what of the spec and the client machine differs.
func differences(a, b *result.Result) []string {
	var out []string
	diff := func(what, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s (%s vs %s)", what, orNone(x), orNone(y)))
		}
	}
	sa, sb := a.Spec, b.Spec
	diff("target", sa.Target, sb.Target)
	diff("workload", sa.Workload, sb.Workload)
	diff("query mode", sa.QueryMode, sb.QueryMode)
	diff("duration", sa.Duration.String(), sb.Duration.String())
	diff("operations per trial", count(sa.Count), count(sb.Count))
	diff("response size", fmt.Sprint(sa.ResponseSize), fmt.Sprint(sb.ResponseSize))
	diff("data", data(sa.Tables, sa.Rows), data(sb.Tables, sb.Rows))
	ea, eb := a.Env, b.Env
	diff("client", fmt.Sprintf("%d cores %s", ea.Cores, ea.CPUModel), fmt.Sprintf("%d cores %s", eb.Cores, eb.CPUModel))
	diff("server", server(a), server(b))
	return out
}

func data(tables, rows int) string {
	if tables <= 0 {
		return ""
	}
	return fmt.Sprintf("%d×%d rows", tables, rows)
}

func count(n int64) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func server(r *result.Result) string {
	if s := r.Target.Server; s != nil {
		return strings.TrimSpace(s.Software + " " + s.Version)
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
