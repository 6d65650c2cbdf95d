package report

import (
	"fmt"
	"slices"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// seedFigure is one row group of the MongoDB seed's table: where its
// latencies are in a mongodb-seed result.
type seedFigure struct {
	name  string
	exp   plan.Experiment
	phase string // "" for the trial's own latency
}

// The seed's four figures, in its order.
var seedFigures = []seedFigure{
	{"only-connection", plan.NewClient, "only-connection"},
	{"first-query", plan.NewClient, "first-query"},
	{"connection-and-first-query", plan.NewClient, ""},
	{"reused-client query", plan.ReusedClient, ""},
}

// presetTable is the table of the seed study a preset replays, nil for a
// result without a preset. The MongoDB seed's (--preset mongodb-seed):
// each figure per variant over every iteration (histograms merged across
// trials), its round trips, and its change against the baseline of the
// variant's client stack (its own plain), trials paired by round. Its
// error says that a histogram does not decode.
func presetTable(r *result.Result) (*Table, error) {
	if r.Spec.Preset != plan.PresetMongoDBSeed {
		return nil, nil
	}
	baselines := map[string]string{} // by client stack
	stacks := false
	for _, v := range r.Variants {
		if v.Baseline {
			baselines[v.Client] = v.ID
		}
		stacks = stacks || v.Client != ""
	}
	vs := "vs plain"
	if len(baselines) == 1 {
		for _, b := range baselines {
			vs = "vs " + b
		}
	}
	t := Table{
		Title: fmt.Sprintf("MongoDB seed study (--preset %s): the seed's figures, ms, over every iteration (%s per trial)",
			plan.PresetMongoDBSeed, plural(int(r.Spec.Count), "iteration")),
		Left:   2,
		Header: []string{"figure", "variant", "iterations", "mean", "stddev", "p50", "p95", "p99", "round trips", vs},
	}
	for _, f := range seedFigures {
		for i, v := range r.Variants {
			h, trips, err := f.merged(r.Trials, v.ID)
			if err != nil {
				return nil, fmt.Errorf("the %s table: %s %s: %w: the result's histograms are damaged (re-run it)", plan.PresetMongoDBSeed, f.name, v.ID, err)
			}
			name := f.name
			if i > 0 {
				name = ""
			}
			if h.Count == 0 {
				dash := textCell("-")
				t.addCells(textCell(name), textCell(v.ID), countCell(0, "iterations"), dash, dash, dash, dash, dash, dash, dash)
				continue
			}
			change := textCell("baseline")
			if b := baselines[v.Client]; b == "" {
				change = textCell("-")
			} else if v.ID != b {
				change = deltaCell(f.paired(r.Trials, b, v.ID))
			}
			ms := func(v float64) Cell { return numCell(v, millis, "ms") }
			t.addCells(textCell(name), textCell(v.ID), countCell(h.Count, "iterations"), ms(h.Mean), ms(h.StdDev),
				ms(h.P50), ms(h.P95), ms(h.P99), trips, change)
		}
	}
	t.Foot = []string{
		"only-connection: mongo.Connect(), the seed's pymongo.MongoClient(): builds the client and starts its monitor, no I/O",
		"first-query: find_one() with no filter on that new client: server selection waits for the monitor's connection (tcp, TLS, hello),",
		"  then the pool's connection (tcp, TLS, hello with SCRAM's first message, auth) and the find; round trips of both connections",
		"reused-client query: find_one() on one client whose connection is open (one untimed find_one first)",
	}
	if stacks {
		t.Foot = append(t.Foot,
			"pymongo rows: the seed's own loops through pymongo: only-connection is pymongo.MongoClient() (it starts its monitor thread),",
			"  first-query its first find_one(); round trips are counted on Go's connections only (-)")
	}
	against := ""
	if len(baselines) > 1 {
		against = " against the plain variant of the same client stack"
	}
	t.Foot = append(t.Foot, vs+": change of the mean"+against+", trials paired by round, ±95% interval, * where it excludes 0")
	if s := r.Target.Server; s != nil {
		t.Foot = append(t.Foot, fmt.Sprintf("server: %s %s (see the notes for what it does and does not represent)", s.Software, s.Version))
	}
	return &t, nil
}

// latency is the figure's histogram in one trial.
func (f seedFigure) latency(t result.Trial) (result.Hist, result.RoundTrips, bool) {
	if t.Experiment != f.exp {
		return result.Hist{}, result.RoundTrips{}, false
	}
	if f.phase == "" {
		var rt result.RoundTrips
		for i, p := range t.Phases {
			// The trial's round trips are its phases' together.
			if i == 0 {
				rt = p.RoundTrips
				continue
			}
			rt.Min, rt.Max, rt.Mean = rt.Min+p.RoundTrips.Min, rt.Max+p.RoundTrips.Max, rt.Mean+p.RoundTrips.Mean
		}
		return t.Latency, rt, true
	}
	for _, p := range t.Phases {
		if p.Name == f.phase {
			return p.Latency, p.RoundTrips, true
		}
	}
	return result.Hist{}, result.RoundTrips{}, false
}

// merged is the figure over every trial of a variant, and its round trips.
func (f seedFigure) merged(trials []result.Trial, variant string) (result.Hist, Cell, error) {
	all := stats.NewRecorder()
	lo, hi, seen, counted := 0, 0, false, false
	for _, t := range trials {
		if t.Variant != variant {
			continue
		}
		h, rt, ok := f.latency(t)
		if !ok || h.Count == 0 {
			continue
		}
		// A trial counted round trips if any of its phases took one: a
		// client stack's do not (every phase's 0).
		counted = counted || slices.ContainsFunc(t.Phases, func(p result.Phase) bool { return p.RoundTrips.Max > 0 })
		rec, err := stats.DecodeHist(stats.Hist(h))
		if err != nil {
			return result.Hist{}, Cell{}, err
		}
		all.Merge(rec)
		if !seen || rt.Min < lo {
			lo = rt.Min
		}
		hi, seen = max(hi, rt.Max), true
	}
	trips := textCell("-")
	if seen && counted {
		trips = rtCell(float64(lo)).shown(roundTrips(lo, hi))
	}
	return result.Hist(all.Hist()), trips, nil
}

// paired is the change of the figure's mean against the baseline's.
func (f seedFigure) paired(trials []result.Trial, baseline, variant string) stats.Delta {
	base := map[int]float64{}
	for _, t := range trials {
		if h, _, ok := f.latency(t); ok && t.Variant == baseline && h.Count > 0 {
			base[t.Round] = h.Mean
		}
	}
	var bs, vs []float64
	for _, t := range trials {
		if h, _, ok := f.latency(t); ok && t.Variant == variant && h.Count > 0 {
			if x, ok := base[t.Round]; ok {
				bs, vs = append(bs, x), append(vs, h.Mean)
			}
		}
	}
	return stats.Paired(bs, vs)
}
