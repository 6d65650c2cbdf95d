package report

import (
	"fmt"
	"math"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report/chart"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// replAxis is the X axis of a replicate chart: the offered write rate of
// the --rate trials at one count of writers, or the writers of a -c sweep.
type replAxis struct {
	id, label, at string
	ticks         []chart.Tick
	// points are variant v's trials at each place on the axis.
	points func(v plan.ReplicaVariant) []replPoint
}

type replPoint struct {
	x  float64
	ts []result.Trial
}

// replicateCharts draws a replicate run's commit latency (p50 and p99)
// and heartbeat lag p99 per variant against the write rate (--rate) or
// the writers (-c 1,4,16), where a variant has more than one point.
func (b *figurer) replicateCharts() {
	if !isReplicate(b.ix.r) {
		return
	}
	x := newReplIndex(b.ix.r)
	p := b.ix.r.Replicate.Plan
	for _, n := range x.rated.writers {
		ax := replAxis{id: "rate", label: "offered writes per second (--rate), log scale", at: " against the write rate",
			points: func(v plan.ReplicaVariant) []replPoint {
				var out []replPoint
				for _, r := range x.rated.rates {
					if ts := x.rated.trials[replRateKey{v.ID, n, r}]; len(ts) > 0 {
						out = append(out, replPoint{r, ts})
					}
				}
				return out
			}}
		if len(x.rated.writers) > 1 {
			ax.id, ax.at = fmt.Sprintf("rate-c%d", n), fmt.Sprintf(" against the write rate, %s", plural(n, "writer"))
		}
		b.replCharts(x, p, ax)
	}
	if len(x.writers) > 1 {
		ax := replAxis{id: "writers", label: "writers (-c), each a closed loop, log scale", at: " by writers",
			points: func(v plan.ReplicaVariant) []replPoint {
				var out []replPoint
				for _, c := range x.writers {
					if ts := x.trials[replKey{v.ID, c}]; len(ts) > 0 {
						out = append(out, replPoint{float64(c), ts})
					}
				}
				return out
			}}
		for _, c := range x.writers {
			ax.ticks = append(ax.ticks, chart.Tick{Value: float64(c), Label: fmt.Sprint(c)})
		}
		b.replCharts(x, p, ax)
	}
}

// replCharts draws the commit latency figure and the lag figure over ax.
func (b *figurer) replCharts(x *replIndex, p plan.Replication, ax replAxis) {
	type measure struct {
		suffix string
		dashed bool
		f      replFigure
	}
	draw := func(id, title, ylabel string, ms []measure, guide time.Duration, guideName string) {
		var series []chart.Series
		var ys []float64
		lo, hi, top := math.Inf(1), 0.0, 0.0
		for _, v := range x.vs {
			places := ax.points(v)
			for _, m := range ms {
				var pts []chart.Point
				for _, pl := range places {
					var vals []float64
					for _, t := range pl.ts {
						if y := m.f(t); finite(y) {
							vals = append(vals, y)
						}
					}
					s := stats.Summarize(vals)
					if len(vals) == 0 || !finite(s.Mean) {
						continue
					}
					if !finite(s.StdDev) {
						s.StdDev = 0
					}
					pts = append(pts, chart.Point{X: pl.x, Y: s.Mean, Err: s.StdDev})
					ys = append(ys, s.Mean)
					lo, hi, top = min(lo, pl.x), max(hi, pl.x), max(top, s.Mean+s.StdDev)
				}
				if len(pts) == 0 {
					continue
				}
				st := b.styles[v.ID]
				st.Dashed = m.dashed
				series = append(series, chart.Series{Name: v.ID + m.suffix, Style: st, Points: pts})
			}
		}
		if len(series) == 0 {
			return
		}
		var guides []chart.Guide
		if guide > 0 {
			y := float64(guide) / float64(time.Millisecond)
			guides = append(guides, chart.Guide{Name: guideName + " " + guide.String(), Y: y, From: lo / 1.5, To: hi * 1.5})
			top = max(top, y)
			ys = append(ys, y)
		}
		caption := "Points: each variant's mean over its trials at that place; error bars: ±1 standard deviation over trials (none for one trial)."
		if ax.id != "writers" {
			caption += " Commit latency counts from each write's intended start, so that queueing behind a slow primary counts."
		}
		yAxis := chart.Axis{Label: ylabel, Min: chart.At(0), Max: chart.At(top * 1.08)}
		if chart.Dwarfs(ys) {
			yLo := math.Inf(1)
			for _, v := range ys {
				yLo = min(yLo, v)
			}
			yAxis = chart.Axis{Label: ylabel + ", log scale", Log: true, Min: chart.At(yLo / 1.6), Max: chart.At(top * 1.6)}
			caption += logNote
		}
		b.add(chart.Figure{
			ID:      "replicate-" + id + "-" + ax.id,
			Title:   "replicate: " + title + ax.at,
			Caption: caption,
			Kind:    chart.Lines,
			X:       chart.Axis{Label: ax.label, Log: true, Ticks: ax.ticks, Min: chart.At(lo / 1.25), Max: chart.At(hi * 1.25)},
			Y:       yAxis,
			Series:  series,
			Guides:  guides,
		})
	}
	commitGuide := time.Duration(0)
	if ax.id != "writers" && p.Knee != nil {
		commitGuide = p.SLO
	}
	draw("commit", "commit latency (p50 dashed, p99)", "commit latency, ms",
		[]measure{{" p50", true, commitP50}, {" p99", false, commitP99}}, commitGuide, "SLO (synchronous)")
	lagGuide := time.Duration(0)
	if ax.id != "writers" && p.Knee != nil {
		lagGuide = p.LagSLO
	}
	draw("lag", "the replica's heartbeat lag p99", "heartbeat lag p99, ms", []measure{{"", false, lagP99}}, lagGuide, "lag SLO")
}
