package report

import (
	"encoding/csv"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// CSV writes one row per experiment, variant and concurrency, then the
// rows of storms, --per-conn and --rate cells, one per figure, under a
// header row naming the columns (see CellSummary and docs/result.md). The
// preset's table is not a row.
func (m *Model) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(columns); err != nil {
		return err
	}
	for _, c := range m.Cells {
		if err := cw.Write(c.record()); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func itoa(n int) string { return strconv.Itoa(n) }

// The rows beyond the closed-loop cells, in the same columns: each names
// what its mean counts (metric), one row per figure.

// stormSummaries are a storm cell's own figures: clients connected per
// storm, the time until all were (and until the last first operation),
// the spread of their dial starts, the hold's median, the listen queues'
// overflows and drops, and the server's CPU per storm.
func (ix *index) stormSummaries(k cellKey, ts []result.Trial) []CellSummary {
	var out []CellSummary
	add := func(metric string, value func(result.Trial) float64) {
		out = append(out, ix.summary(string(k.exp), k.variant, k.c, ts, metric, meanCell(collect(ts, value), rate, metric), noLatency))
	}
	ms := func(d func(*result.Storm) time.Duration) func(result.Trial) float64 {
		return func(t result.Trial) float64 {
			if t.Storm == nil {
				return math.NaN()
			}
			return float64(d(t.Storm)) / float64(time.Millisecond)
		}
	}
	add("connected", func(t result.Trial) float64 {
		if t.Storm == nil {
			return math.NaN()
		}
		return float64(t.Storm.Connected)
	})
	add("all connected ms", ms(func(s *result.Storm) time.Duration { return s.AllConnected }))
	if slices.ContainsFunc(ts, func(t result.Trial) bool { return t.Storm != nil && t.Storm.FirstOps > 0 }) {
		add("last first op ms", ms(func(s *result.Storm) time.Duration { return s.LastFirstOp }))
	}
	if slices.ContainsFunc(ts, func(t result.Trial) bool { return t.Storm != nil && t.Storm.DialSpread > 0 }) {
		add("dial spread ms", ms(func(s *result.Storm) time.Duration { return s.DialSpread }))
	}
	if slices.ContainsFunc(ts, func(t result.Trial) bool { return t.Storm != nil && t.Storm.ToDial != nil }) {
		add("to dial p50 ms", func(t result.Trial) float64 {
			if t.Storm == nil || t.Storm.ToDial == nil {
				return math.NaN()
			}
			return t.Storm.ToDial.P50
		})
	}
	if slices.ContainsFunc(ts, func(t result.Trial) bool { return t.Storm != nil && t.Storm.Hold != nil }) {
		add("hold p50 ms", func(t result.Trial) float64 {
			if t.Storm == nil || t.Storm.Hold == nil {
				return math.NaN()
			}
			return t.Storm.Hold.P50
		})
	}
	if slices.ContainsFunc(ts, func(t result.Trial) bool { return t.Storm != nil && t.Storm.Listen != nil }) {
		listen := func(f func(*result.ListenQueue) int64) func(result.Trial) float64 {
			return func(t result.Trial) float64 {
				if t.Storm == nil || t.Storm.Listen == nil {
					return math.NaN()
				}
				return float64(f(t.Storm.Listen))
			}
		}
		add("listen overflows", listen(func(l *result.ListenQueue) int64 { return l.Overflows }))
		add("listen drops", listen(func(l *result.ListenQueue) int64 { return l.Drops }))
	}
	if slices.ContainsFunc(ts, func(t result.Trial) bool { return t.ServerCPU > 0 }) {
		add("server CPU ms", func(t result.Trial) float64 { return float64(t.ServerCPU) / float64(time.Millisecond) })
	}
	return out
}

// perConnSummaries are the connect --per-conn N cells (N > 1): new
// connections and operations per second, and the time per operation with
// its connection's share; percentiles are each operation's.
func (ix *index) perConnSummaries() []CellSummary {
	var out []CellSummary
	for _, c := range ix.pc.conc {
		for _, n := range ix.pc.ns {
			for _, name := range ix.variants {
				ts := ix.perConnCell(name, c, n)
				if len(ts) == 0 {
					continue
				}
				for _, m := range []struct {
					metric string
					value  func(result.Trial) float64
				}{
					{"connections/s", connRate},
					{"operations/s", result.Trial.Throughput},
					{"ms/op", msPerOp},
				} {
					s := ix.summary(string(plan.Connect), name, c, ts, m.metric, meanCell(collect(ts, m.value), rate, m.metric), trialLatency)
					s.PerConn = number(n)
					if base := ix.baselineOf(name); m.metric == "ms/op" && base != name {
						if d := ix.perConnDelta(base, name, c, n); d.N > 0 {
							s.DeltaPct, s.DeltaCI95 = number(d.Pct), number(d.CI95)
						}
					}
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// rateSummaries are the open-loop cells (--rate), by experiment, offered
// rate and variant: the achieved rate with the latency from the intended
// start (coordinated omission corrected), the service time's percentiles,
// and the shares of arrivals dropped and failed, in percent.
func (ix *index) rateSummaries() []CellSummary {
	var out []CellSummary
	for _, c := range ix.rt.cells {
		for _, rate := range ix.rt.rates {
			for _, name := range ix.variants {
				ts := ix.rt.trials[rateKey{c.e, c.n, name, rate}]
				if len(ts) == 0 {
					continue
				}
				share := func(f func(result.Trial) int64) func(result.Trial) float64 {
					return func(t result.Trial) float64 {
						if t.Open.Arrivals == 0 {
							return math.NaN()
						}
						return 100 * float64(f(t)) / float64(t.Open.Arrivals)
					}
				}
				figures := []rateFigure{
					{"achieved/s", func(t result.Trial) float64 { return t.Open.Achieved() }, trialLatency},
					{"service ms", func(t result.Trial) float64 { return t.Open.Service.Mean }, func(t result.Trial) (result.Hist, bool) {
						return t.Open.Service, t.Open.Service.Count > 0
					}},
					{"dropped %", share(func(t result.Trial) int64 { return t.Open.Dropped }), noLatency},
					{"failed %", share(func(t result.Trial) int64 {
						var n int64
						for _, e := range t.Errors {
							n += e
						}
						return n
					}), noLatency},
				}
				if slices.ContainsFunc(ts, func(t result.Trial) bool { return t.Open.Schedule != nil }) {
					figures = append(figures, lagFigures...)
				}
				for _, m := range figures {
					s := ix.summary(string(c.e), name, ts[0].Concurrency, ts, m.metric, meanCell(collect(ts, m.value), millis, m.metric), m.lat)
					if c.n > 1 {
						s.PerConn = number(c.n)
					}
					s.Offered = number(rate)
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// rateFigure is one row of a --rate cell: its metric, its value in a
// trial, and the histogram whose percentiles it carries.
type rateFigure struct {
	metric string
	value  func(result.Trial) float64
	lat    func(result.Trial) (result.Hist, bool)
}

// lagFigures are the schedule's rows of a --rate cell: the lag (from
// the intended start to the start) with its percentiles, its largest,
// and the shares of started arrivals over 1 ms and 10 ms late.
var lagFigures = []rateFigure{
	{"lag ms", schedule(func(s *result.Schedule) float64 { return s.Lag.Mean }), func(t result.Trial) (result.Hist, bool) {
		if s := t.Open.Schedule; s != nil {
			return s.Lag, s.Lag.Count > 0
		}
		return result.Hist{}, false
	}},
	{"lag max ms", schedule(func(s *result.Schedule) float64 { return s.Lag.Max }), noLatency},
	{"late 1ms %", schedule(func(s *result.Schedule) float64 { return lateShare(s.Late1ms, s.Started) }), noLatency},
	{"late 10ms %", schedule(func(s *result.Schedule) float64 { return lateShare(s.Late10ms, s.Started) }), noLatency},
}

// schedule is f of a trial's schedule, NaN where it has none.
func schedule(f func(*result.Schedule) float64) func(result.Trial) float64 {
	return func(t result.Trial) float64 {
		if t.Open.Schedule == nil {
			return math.NaN()
		}
		return f(t.Open.Schedule)
	}
}

// lateShare is n of started in percent, NaN of none.
func lateShare(n, started int64) float64 {
	if started == 0 {
		return math.NaN()
	}
	return 100 * float64(n) / float64(started)
}

// noLatency is for rows whose figure is not a time: no percentiles.
func noLatency(result.Trial) (result.Hist, bool) { return result.Hist{}, false }
