package report

import (
	"math"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// CellSummary summarizes the trials of one cell (experiment, variant and concurrency): the
// row of the csv summary and an element of the json one. Variant fields are
// empty (Resume nil) for a variant the file does not describe; figures are
// NaN where unknown.
type CellSummary struct {
	Experiment  string `json:"experiment"`
	Variant     string `json:"variant"`
	TLS         string `json:"tls"`
	Key         string `json:"key"`
	Resume      *bool  `json:"resume"`
	Auth        string `json:"auth"`
	Concurrency int    `json:"concurrency"`
	Trials      int    `json:"trials"`
	// Metric names what Mean, StdDev and CI95 count (connections/s, ...).
	Metric string `json:"metric"`
	Mean   number `json:"mean"`
	StdDev number `json:"stddev"`
	CI95   number `json:"ci95"`
	// DeltaPct and DeltaCI95 are the change against the baseline, paired
	// by round as in the text report; unknown on the baseline itself.
	DeltaPct  number `json:"delta_pct"`
	DeltaCI95 number `json:"delta_ci95"`
	// Latency percentiles are means over trials of each trial's.
	P50 number `json:"p50_ms"`
	P95 number `json:"p95_ms"`
	P99 number `json:"p99_ms"`
	// CPU per operation: sums over trials, as the text report's CPU table.
	ClientCPU number `json:"client_cpu_us_per_op"`
	ServerCPU number `json:"server_cpu_us_per_op"`
	// PerConn is the operations per connection of connect --per-conn N
	// rows, Offered the arrival rate of --rate rows (per second); unknown
	// on the others.
	PerConn number `json:"per_conn"`
	Offered number `json:"offered_per_s"`
}

// columns are the csv header, in the order of CellSummary's fields and named as
// its json keys.
var columns = []string{
	"experiment", "variant", "tls", "key", "resume", "auth", "concurrency", "trials",
	"metric", "mean", "stddev", "ci95", "delta_pct", "delta_ci95",
	"p50_ms", "p95_ms", "p99_ms", "client_cpu_us_per_op", "server_cpu_us_per_op",
	"per_conn", "offered_per_s",
}

// record is c as a csv row, in the order of columns.
func (c CellSummary) record() []string {
	resume := ""
	if c.Resume != nil {
		resume = map[bool]string{false: "false", true: "true"}[*c.Resume]
	}
	return []string{
		c.Experiment, c.Variant, c.TLS, c.Key, resume, c.Auth, itoa(c.Concurrency), itoa(c.Trials),
		c.Metric, c.Mean.String(), c.StdDev.String(), c.CI95.String(), c.DeltaPct.String(), c.DeltaCI95.String(),
		c.P50.String(), c.P95.String(), c.P99.String(), c.ClientCPU.String(), c.ServerCPU.String(),
		c.PerConn.String(), c.Offered.String(),
	}
}

// cellSummaries summarizes the result cell by cell, in the order of the
// text report: experiment, then concurrency, then variant.
func (ix *index) cellSummaries() []CellSummary {
	if isAdvise(ix.r) {
		return ix.adviceSummaries()
	}
	var out []CellSummary
	for _, e := range ix.experiments {
		for _, k := range ix.cells(e) {
			ts := ix.trials[k]
			// The throughput table's cells.
			c := ix.summary(string(e), k.variant, k.c, ts, ix.metricName(e), ix.rateCell(k), trialLatency)
			if d := ix.deltaCell(k); d.Figure() {
				c.DeltaPct, c.DeltaCI95 = number(d.Value), number(d.CI)
			}
			out = append(out, c)
			if e == plan.Storm {
				out = append(out, ix.stormSummaries(k, ts)...)
			}
		}
	}
	out = append(out, ix.stackSummaries()...)
	out = append(out, ix.perConnSummaries()...)
	return append(out, ix.rateSummaries()...)
}

// trialLatency is a trial's latency, where it recorded any.
func trialLatency(t result.Trial) (result.Hist, bool) { return t.Latency, t.Latency.Count > 0 }

// summary is one row: the figure mean, metric's mean over the trials ts of
// one variant, the means of their latency percentiles
// (lat) and their CPU per operation; no change against the baseline, which
// the caller adds where it has one.
func (ix *index) summary(e, variant string, c int, ts []result.Trial, metric string, mean Cell, lat func(result.Trial) (result.Hist, bool)) CellSummary {
	cs := CellSummary{
		Experiment:  e,
		Variant:     variant,
		Concurrency: c,
		Trials:      len(ts),
		Metric:      metric,
		Mean:        number(mean.Value),
		StdDev:      number(mean.StdDev),
		CI95:        number(mean.CI),
		DeltaPct:    number(math.NaN()),
		DeltaCI95:   number(math.NaN()),
		PerConn:     number(math.NaN()),
		Offered:     number(math.NaN()),
	}
	if info, ok := ix.info[variant]; ok {
		cs.TLS, cs.Key, cs.Auth = info.TLS, info.Key, info.Auth
		cs.Resume = &info.Resume
	}
	var hs []result.Hist
	for _, t := range ts {
		if h, ok := lat(t); ok {
			hs = append(hs, h)
		}
	}
	meanOf := func(f func(result.Hist) float64) number {
		if len(hs) == 0 {
			return number(math.NaN())
		}
		xs := make([]float64, len(hs))
		for i, h := range hs {
			xs[i] = f(h)
		}
		return number(stats.Summarize(xs).Mean)
	}
	cs.P50 = meanOf(func(h result.Hist) float64 { return h.P50 })
	cs.P95 = meanOf(func(h result.Hist) float64 { return h.P95 })
	cs.P99 = meanOf(func(h result.Hist) float64 { return h.P99 })
	var ops int64
	var client, server time.Duration
	for _, t := range ts {
		ops += t.Ops
		client += t.ClientCPU
		server += t.ServerCPU
	}
	cs.ClientCPU, cs.ServerCPU = usPerOp(client, ops), usPerOp(server, ops)
	return cs
}

// metricName is unit's short form, for machines: connections/s, queries/s,
// MB/s, or opsUnit's.
func (ix *index) metricName(e plan.Experiment) string {
	switch {
	case e == plan.Connect || e == plan.Wire:
		return "connections/s"
	case e == plan.Stream:
		return "MB/s"
	case e == plan.Storm:
		return "clients back/s"
	case e == plan.Replicate:
		return "writes/s"
	case ix.r.Spec.Workload == "read-only" || ix.r.Spec.Workload == "point-select":
		return "queries/s"
	}
	return ix.opsUnit()
}

// usPerOp is perOp's figure.
func usPerOp(cpu time.Duration, ops int64) number { return number(perOp(cpu, ops).Value) }
