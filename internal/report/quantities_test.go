package report

import (
	"math"
	"testing"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// TestQuantities: the quantities gates judge are the figures the tables
// and the csv show: the rate and p99 of each cell as CellSummary has
// them, its change against the baseline as "vs baseline" pairs it (where
// no round is an outlier), and the protocol's round trips (PostgreSQL 15
// answers Go's TLS 1.3 offer with a HelloRetryRequest: 2).
func TestQuantities(t *testing.T) {
	r := read(t, "measured-postgres-connect.json")
	m := Build(r)
	byCell := map[[2]string]map[string]Quantity{}
	for _, q := range m.Quantities {
		k := [2]string{q.Variant, itoa(q.Concurrency)}
		if byCell[k] == nil {
			byCell[k] = map[string]Quantity{}
		}
		byCell[k][q.Name] = q
	}
	ix := newIndex(r)
	checked := 0
	for _, c := range m.Cells {
		qs := byCell[[2]string{c.Variant, itoa(c.Concurrency)}]
		close := func(what string, got, want float64) {
			if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("%s c=%d %s: %g, want %g", c.Variant, c.Concurrency, what, got, want)
			}
		}
		close("rate", qs["rate"].Mean, float64(c.Mean))
		close("rate's CI", qs["rate"].CI95, float64(c.CI95))
		close("p99", qs["p99"].Mean, float64(c.P99))
		if qs["rate"].Trials != 10 || qs["rate"].Unit != "/s" || qs["p99"].Unit != "ms" {
			t.Errorf("%s: %+v", c.Variant, qs["rate"])
		}
		if c.Variant == "plain" {
			if _, ok := qs["roundtrips.tls-handshake"]; ok || qs["rate"].Overhead.N != 0 {
				t.Errorf("plain has a handshake or an overhead: %+v", qs)
			}
			continue
		}
		if rt := qs["roundtrips.tls-handshake"]; rt.Mean != 2 || rt.Unit != "count" {
			t.Errorf("%s: handshake round trips %+v, want 2 (a HelloRetryRequest)", c.Variant, rt)
		}
		k := cellKey{plan.Connect, c.Variant, c.Concurrency}
		if len(ix.outlierRounds(plan.Connect, c.Concurrency, "plain", c.Variant)) == 0 {
			close("overhead.rate", qs["rate"].Overhead.Pct, float64(c.DeltaPct))
			close("overhead.rate's CI", qs["rate"].Overhead.CI95, float64(c.DeltaCI95))
			checked++
		}
		a, b := ix.trials[cellKey{plan.Connect, "plain", c.Concurrency}], ix.trials[k]
		if d := pairTrials(a, b, figureDefs[1].value(ix, plan.Connect)); d.N == 0 || math.IsNaN(d.Pct) {
			t.Errorf("%s: no p50 pairs: %+v", c.Variant, d)
		}
	}
	if checked == 0 {
		t.Error("every cell held an outlier: no overhead was checked against the table's")
	}
}
