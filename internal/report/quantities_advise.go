package report

import (
	"math"
	"regexp"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// The quantities of an advise result, for gates: per change that applies
// to an endpoint's profile, what it is predicted to save per connection,
// and with --confirm what the lab replay measured it to save and the
// prediction's error.

// adviceIDs name the changes of package advise in a gate's selector
// (advise[ecdsa-p256]): short, without spaces, as a variant's words are.
var adviceIDs = []struct{ id, change string }{
	{"tls1.3", "TLS 1.2 → 1.3"},
	{"ecdsa-p256", "RSA → ECDSA P-256 server key"},
	{"resumption", "session resumption on"},
	{"no-hrr", "avoid HelloRetryRequest"},
	{"direct-tls", "PostgreSQL 17+ direct TLS"},
	{"pooling", "pooling"},
	{"pq-off", "post-quantum hybrid off"},
	{"pq-on", "post-quantum hybrid on"},
	{"tls-off", "TLS off (the bound)"},
	{"tls-on", "TLS off → on (TLS 1.3)"},
}

// AdviceIDs are the changes a gate can name, in the advice's order.
var AdviceIDs = func() []string {
	ids := make([]string, len(adviceIDs))
	for i, a := range adviceIDs {
		ids[i] = a.id
	}
	return ids
}()

var notID = regexp.MustCompile(`[^a-z0-9.]+`)

// AdviceID is the selector of the change named change; a change it does
// not know yet gets its name in lower case, words joined by "-" ("TLS
// 1.2 → 1.3" would be "tls-1.2-1.3").
func AdviceID(change string) string {
	for _, a := range adviceIDs {
		if a.change == change {
			return a.id
		}
	}
	return strings.Trim(notID.ReplaceAllString(strings.ToLower(change), "-"), "-")
}

// adviceFigureDefs are a change's figures as gates name them, in the
// advice table's order.
var adviceFigureDefs = []struct {
	name, unit string
	f          func(result.Change) result.Figure
}{
	{"setup", "ms", func(c result.Change) result.Figure { return c.Setup }},
	{"p95_setup", "ms", func(c result.Change) result.Figure { return c.P95 }},
	{"server_cpu", "ms", func(c result.Change) result.Figure { return c.Server }},
	{"client_cpu", "ms", func(c result.Change) result.Figure { return c.Client }},
	{"server_cores", "count", func(c result.Change) result.Figure { return c.Cores }},
	{"bytes", "count", func(c result.Change) result.Figure { return c.Bytes }},
	{"capacity", "/s", func(c result.Change) result.Figure { return c.Capacity }},
}

// AdviceFigureNames are the figures of a change, as advise quantities
// name them after saved., measured. or error_pct.
var AdviceFigureNames = func() []string {
	names := make([]string, len(adviceFigureDefs))
	for i, d := range adviceFigureDefs {
		names[i] = d.name
	}
	return names
}()

// AdviseQuantityNames are the quantities of an advise result: the round
// trips a change saves per connection, predicted and measured; and of
// each figure, the saving predicted (saved.), the saving the lab replay
// measured (measured.) and the prediction's error in percent
// (error_pct.).
var AdviseQuantityNames = func() []string {
	names := []string{"saved.round_trips", "measured.round_trips"}
	for _, f := range AdviceFigureNames {
		names = append(names, "saved."+f, "measured."+f, "error_pct."+f)
	}
	return names
}()

// adviceUnit is the unit of an advise quantity, "" for none.
func adviceUnit(name string) string {
	what, fig, ok := strings.Cut(name, ".")
	switch {
	case !ok || (what != "saved" && what != "measured" && what != "error_pct"):
		return ""
	case fig == "round_trips" && what != "error_pct":
		return "count"
	}
	for _, d := range adviceFigureDefs {
		if d.name == fig && what == "error_pct" {
			return "%"
		}
		if d.name == fig {
			return d.unit
		}
	}
	return ""
}

// adviceQuantities lists each endpoint's changes that apply, figure by
// figure, with the interval each figure has: a prediction's, a measured
// saving's over the replay's rounds; round trips and errors have none.
func (ix *index) adviceQuantities() []Quantity {
	var out []Quantity
	for _, a := range ix.r.Advise {
		trials := 0
		for _, r := range a.Replays {
			if r.Error == "" {
				trials = max(trials, r.Trials)
			}
		}
		for _, c := range a.Advice {
			if c.NotApplicable {
				continue
			}
			id := AdviceID(c.Change)
			add := func(name, unit string, n int, mean float64, ci *float64) {
				q := Quantity{Experiment: plan.Advise, Variant: id, Name: name, Unit: unit, Trials: n, Mean: mean, CI95: math.NaN(),
					Overhead: stats.Delta{Pct: math.NaN(), CI95: math.NaN()}, Cell: "advise " + id + " on " + a.Profile.Server}
				if ci != nil {
					q.CI95 = *ci
				}
				out = append(out, q)
			}
			add("saved.round_trips", "count", 1, c.RoundTripsSaved, nil)
			if c.RoundTripsMeasured != nil {
				add("measured.round_trips", "count", trials, *c.RoundTripsMeasured, nil)
			}
			for _, d := range adviceFigureDefs {
				f := d.f(c)
				if s, ok := f.Saved(); ok {
					add("saved."+d.name, d.unit, 1, s, f.PredictedCI)
				}
				if s, ok := measuredSaving(f); ok {
					add("measured."+d.name, d.unit, trials, s, f.MeasuredCI)
				}
				if f.ErrorPct != nil {
					add("error_pct."+d.name, "%", trials, *f.ErrorPct, nil)
				}
			}
		}
	}
	return out
}
