package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// TopicNegotiation is how a PostgreSQL client starts TLS.
const TopicNegotiation Topic = "negotiation"

// DirectTLS is what PostgreSQL's direct TLS (sslnegotiation=direct) did
// against an SSLRequest first, on the same variants otherwise (Pairs):
// RoundTrips the change of a new connection's round trips (-1 when it
// saves the SSLRequest's), MS the mean change of its time, ServerCPU the
// mean change of the server's CPU per connection, ms (NaN unknown).
type DirectTLS struct {
	Pairs         []Contrast
	RoundTrips    float64
	MS, ServerCPU float64
}

func (DirectTLS) isFact() {}

// worthRTTs are the round trips the seed measured over (44 and 170 ms):
// what a saved round trip is worth there.
var worthRTTs = []float64{44, 170}

// negotiation: direct TLS against an SSLRequest first.
func (r *rules) negotiation() {
	ix := r.ix
	ps := ix.pairs(func(p plan.Variant) bool { return !p.Plain() && p.Tunnel == "" && p.Negotiation == "" },
		func(p *plan.Variant) { p.Negotiation = plan.NegotiationDirect })
	if len(ps) == 0 {
		return
	}
	f := DirectTLS{Pairs: ps, RoundTrips: math.NaN()}
	var ms, scpu []float64
	for _, p := range ps {
		if !math.IsNaN(p.MS) {
			ms = append(ms, p.MS)
		}
		if !math.IsNaN(p.ServerCPU) {
			scpu = append(scpu, p.ServerCPU)
		}
		if !math.IsNaN(p.RoundTrips) && (math.IsNaN(f.RoundTrips) || p.RoundTrips < f.RoundTrips) {
			f.RoundTrips = p.RoundTrips
		}
	}
	f.MS, f.ServerCPU = meanOrNaN(ms), meanOrNaN(scpu)
	r.add(KindFinding, TopicNegotiation, f)
}

// directWords says a DirectTLS in one sentence.
func (ix *index) directWords(f DirectTLS) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Direct TLS (sslnegotiation=direct, PostgreSQL 17+) against an SSLRequest first: %s", ix.effects(f.Pairs, "direct"))
	var parts []string
	if rt := f.RoundTrips; !math.IsNaN(rt) && rt <= -0.5 {
		saved := -roundRT(rt)
		var worth []string
		for _, rtt := range worthRTTs {
			worth = append(worth, fmt.Sprintf("%g ms at a %g ms RTT", saved*rtt, rtt))
		}
		parts = append(parts, fmt.Sprintf("it saved %s per new connection, worth %s", pluralFloat(saved, "round trip"), strings.Join(worth, " and ")))
	} else if !math.IsNaN(rt) {
		parts = append(parts, "it saved no round trip")
	}
	if !math.IsNaN(f.MS) {
		parts = append(parts, fmt.Sprintf("%+.3f ms per connection here", f.MS))
	}
	if !math.IsNaN(f.ServerCPU) {
		parts = append(parts, fmt.Sprintf("server CPU %+.3f ms per connection", f.ServerCPU))
	}
	if len(parts) > 0 {
		b.WriteString("; " + strings.Join(parts, "; "))
	}
	b.WriteString(".")
	return b.String()
}
