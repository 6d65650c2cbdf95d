package drivertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// PhaseTimes reports the median time of each phase of a connect operation
// (Open, one Do, Close), and of the whole, for each of variants (e's
// default case, with the variant's Auth if set) from rounds×b.N operations
// each, interleaved, with the server's default key: in ms, as metrics
// "ms-AUTH-tlsTLS-PHASE", and logged. Figures, not invariants: the
// round-trip checks hold those.
func PhaseTimes(b *testing.B, e Engine, rounds int, variants []plan.Variant) {
	e.useKey(b, e.Keys[0])
	drivers := make([]driver.Driver, len(variants))
	for i, v := range variants {
		c := e.Cases[0]
		if v.Auth != "" {
			c.Auth = v.Auth
		}
		drivers[i] = e.driver(b, e.config(b, v, c))
	}
	type times struct {
		order []string
		of    map[string][]time.Duration
	}
	all := make([]times, len(variants))
	for i := range all {
		all[i].of = map[string][]time.Duration{}
	}
	add := func(t *times, name string, d time.Duration) {
		if t.of[name] == nil {
			t.order = append(t.order, name)
		}
		t.of[name] = append(t.of[name], d)
	}
	for range rounds * b.N {
		for i, d := range drivers {
			tr, _, _ := e.connectOnce(b, d)
			for _, p := range tr.Phases {
				add(&all[i], p.Name, p.Duration)
			}
			add(&all[i], "total", tr.Total())
		}
	}
	for i, v := range variants {
		var parts []string
		for _, name := range all[i].order {
			m := Median(all[i].of[name])
			parts = append(parts, fmt.Sprintf("%s %v", name, m.Round(time.Microsecond)))
			b.ReportMetric(float64(m.Microseconds())/1000, fmt.Sprintf("ms-%s-tls%s-%s", v.Auth, v.TLS, name))
		}
		b.Logf("%-21s tls %-3s %s: %s", v.Auth, v.TLS, e.Keys[0], strings.Join(parts, ", "))
	}
}
