package report

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// byName indexes quantities by variant, concurrency and name.
func byName(qs []Quantity) map[[3]string]Quantity {
	out := map[[3]string]Quantity{}
	for _, q := range qs {
		out[[3]string{q.Variant, itoa(q.Concurrency), q.Name}] = q
	}
	return out
}

func same(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestReplicateQuantities: what gates judge of a replicate run is what
// its tables show, cell by cell: each link's figures per writers' count,
// and each TLS link's change against the plain link of its own commit
// mode, paired by round; a -c sweep's counts are cells apart; a resync is
// one figure without an interval.
func TestReplicateQuantities(t *testing.T) {
	r := replicateResult(t)
	r.Replicate.Plan.Resync = true
	r.Replicate.Resyncs = []result.Resync{
		{Link: "plain", Bytes: 40e6, Elapsed: 2 * time.Second},
		{Link: "tls1.3", Bytes: 40e6, Elapsed: 4 * time.Second},
	}
	x := newReplIndex(r) // the trials with 4 writers
	// The same rounds again with 8 writers, twice the writes.
	for _, tr := range slices.Clone(r.Trials) {
		rep := *tr.Replication
		rep.WritesPerSec *= 2
		tr.Concurrency, tr.Replication = 8, &rep
		r.Trials = append(r.Trials, tr)
	}
	qs := Build(r).Quantities
	q := byName(qs)
	for _, v := range x.vs {
		for _, c := range []string{"4", "8"} {
			for _, name := range ReplicateQuantityNames[:len(ReplicateQuantityNames)-1] {
				if name == "server_lag.p50" || name == "error_rate" {
					continue // none sampled in this result; no operation failed
				}
				if got := q[[3]string{v.ID, c, name}]; got.Trials != 3 || got.Unit == "" {
					t.Errorf("%s c=%s %s: %+v, want 3 trials", v.ID, c, name, got)
				}
			}
		}
		want4 := 8000.0
		if v.TLS != "off" {
			want4 = 6000
		}
		if v.Sync != "off" {
			want4 /= 3
		}
		if got := q[[3]string{v.ID, "4", "writes_per_s"}].Mean; !same(got, want4) {
			t.Errorf("%s c=4 writes_per_s %g, want %g", v.ID, got, want4)
		}
		if got := q[[3]string{v.ID, "8", "writes_per_s"}].Mean; !same(got, 2*want4) {
			t.Errorf("%s c=8 writes_per_s %g, want %g", v.ID, got, 2*want4)
		}
		p99 := q[[3]string{v.ID, "4", "commit.p99"}]
		if v.Baseline {
			if p99.Overhead.N != 0 {
				t.Errorf("%s, a baseline, has an overhead: %+v", v.ID, p99.Overhead)
			}
			continue
		}
		// As the table's "vs baseline" pairs it: with the plain link of
		// the same commit mode.
		if want := x.change(v, 4, commitP99); p99.Overhead.N != 3 || !same(p99.Overhead.Pct, want.Pct) || !same(p99.Overhead.CI95, want.CI95) || p99.Baseline != x.baseline(v) {
			t.Errorf("%s overhead.commit.p99 %+v against %s, want %+v against %s", v.ID, p99.Overhead, p99.Baseline, want, x.baseline(v))
		}
		if w := q[[3]string{v.ID, "4", "writes_per_s"}].Overhead; !same(w.Pct, -25) {
			t.Errorf("%s overhead.writes_per_s %+v, want -25%%", v.ID, w)
		}
		rs := q[[3]string{v.ID, "0", "resync.mb_per_s"}]
		if !same(rs.Mean, 10) || !math.IsNaN(rs.CI95) || !same(rs.Overhead.Pct, -50) || rs.Overhead.N != 1 || !strings.Contains(rs.Cell, "resync over tls1.3") {
			t.Errorf("%s resync: %+v, want 10 MB/s, -50%% against plain's 20, no interval", v.ID, rs)
		}
	}
	for _, q := range qs {
		if u := QuantityUnit(plan.Replicate, q.Name); u != q.Unit || !slices.Contains(ReplicateQuantityNames, q.Name) {
			t.Errorf("%s: unit %q, QuantityUnit %q; a name gates know: %v", q.Name, q.Unit, u, slices.Contains(ReplicateQuantityNames, q.Name))
		}
	}
}

// TestAdviceQuantities: an advise result's quantities are its changes'
// savings as the confirm table shows them: predicted (now − predicted)
// with the prediction's interval, measured with the replay's, and the
// error; a change that does not apply has none; each change has an ID a
// selector names, and its cell names the endpoint.
func TestAdviceQuantities(t *testing.T) {
	r := read(t, "measured-advise-confirm.json")
	qs := Build(r).Quantities
	a := r.Advise[0]
	seen := map[string]bool{}
	for _, q := range qs {
		seen[q.Variant] = true
		if q.Experiment != plan.Advise || !slices.Contains(AdviceIDs, q.Variant) || q.Cell != "advise "+q.Variant+" on "+a.Profile.Server {
			t.Errorf("%+v: not an advise cell of a known change", q)
		}
		if u := QuantityUnit(plan.Advise, q.Name); u != q.Unit || !slices.Contains(AdviseQuantityNames, q.Name) {
			t.Errorf("%s: unit %q, QuantityUnit %q", q.Name, q.Unit, u)
		}
	}
	q := map[[2]string]Quantity{}
	for _, x := range qs {
		q[[2]string{x.Variant, x.Name}] = x
	}
	for _, c := range a.Advice {
		id := AdviceID(c.Change)
		if c.NotApplicable {
			if seen[id] {
				t.Errorf("%s does not apply, yet has quantities", c.Change)
			}
			continue
		}
		if got := q[[2]string{id, "saved.round_trips"}]; got.Mean != c.RoundTripsSaved || got.Unit != "count" {
			t.Errorf("%s saved.round_trips %+v, want %g", id, got, c.RoundTripsSaved)
		}
		if got := q[[2]string{id, "measured.round_trips"}]; got.Mean != *c.RoundTripsMeasured {
			t.Errorf("%s measured.round_trips %+v, want %g", id, got, *c.RoundTripsMeasured)
		}
		for _, f := range []struct {
			name string
			fig  result.Figure
		}{{"setup", c.Setup}, {"server_cpu", c.Server}} {
			saved, ok := f.fig.Saved()
			got, has := q[[2]string{id, "saved." + f.name}]
			if has != ok || (ok && (!same(got.Mean, saved) || !same(got.CI95, *f.fig.PredictedCI))) {
				t.Errorf("%s saved.%s %+v, want %g ±%v", id, f.name, got, saved, f.fig.PredictedCI)
			}
			meas, ok := measuredSaving(f.fig)
			got, has = q[[2]string{id, "measured." + f.name}]
			if has != ok || (ok && (!same(got.Mean, meas) || !same(got.CI95, *f.fig.MeasuredCI) || got.Trials < 2)) {
				t.Errorf("%s measured.%s %+v, want %g ±%v", id, f.name, got, meas, f.fig.MeasuredCI)
			}
			got, has = q[[2]string{id, "error_pct." + f.name}]
			if has != (f.fig.ErrorPct != nil) || (has && (got.Mean != *f.fig.ErrorPct || got.Unit != "%" || !math.IsNaN(got.CI95))) {
				t.Errorf("%s error_pct.%s %+v, want %v", id, f.name, got, f.fig.ErrorPct)
			}
		}
	}
	if got := AdviceID("a change of tomorrow → TLS 1.4"); got != "a-change-of-tomorrow-tls-1.4" {
		t.Errorf("AdviceID of an unknown change: %q", got)
	}
}
