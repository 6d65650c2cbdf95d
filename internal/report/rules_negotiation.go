package report

import (
	"fmt"
	"math"
	"slices"
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
			// Round trips times a set RTT: exact, not a measured figure
			// to round to three digits.
			worth = append(worth, fmt.Sprintf("%g ms at a %g ms RTT", saved*rtt, rtt))
		}
		parts = append(parts, fmt.Sprintf("it saved %s per new connection, worth %s", pluralFloat(saved, "round trip"), strings.Join(worth, " and ")))
	} else if !math.IsNaN(rt) {
		parts = append(parts, "it saved no round trip")
	}
	if !math.IsNaN(f.MS) && slices.ContainsFunc(f.Pairs, Contrast.Measurable) {
		parts = append(parts, signed(f.MS, millis)+" ms per connection here")
	}
	if !math.IsNaN(f.ServerCPU) {
		parts = append(parts, "server CPU "+signed(f.ServerCPU, millis)+" ms per connection")
	}
	if len(parts) > 0 {
		b.WriteString("; " + strings.Join(parts, "; "))
	}
	b.WriteString(".")
	return b.String()
}

// ServerTLSCost is what TLS costs each lab server a run compares
// (--lab postgres:15,postgres:18), on the same TLS variant otherwise:
// the server's extra CPU per new connection over its own plain variant.
type ServerTLSCost struct {
	Servers []ServerCost
}

// ServerCost is one server's: Lab names it, Software its version and TLS
// library; Variant and Plain the pair compared; ServerCPU and MS the
// extra server CPU and time per connection, ms.
type ServerCost struct {
	Lab, Software, Variant, Plain string
	ServerCPU, MS                 float64
}

func (ServerTLSCost) isFact() {}

// serverTLS: the same TLS variant on each lab server against its plain.
func (r *rules) serverTLS() {
	ix := r.ix
	if len(ix.r.Target.Servers) < 2 {
		return
	}
	c, ok := ix.lowest(plan.Connect)
	if !ok {
		return
	}
	// The TLS variant to compare: the first full TLS one on the first
	// server with a twin on every other.
	var f ServerTLSCost
	for _, n := range ix.fullTLS(plan.Connect) {
		info := ix.info[n]
		if info.RTT != 0 || info.Tunnel != "" || info.Server != ix.r.Target.Servers[0].Lab {
			continue
		}
		f = ServerTLSCost{}
		for _, srv := range ix.r.Target.Servers {
			twin := n
			if srv.Lab != info.Server {
				twin = ix.sibling(n, func(v *plan.Variant) { v.Server = srv.Lab })
			}
			if twin == "" {
				break
			}
			plain := ix.plainOf(twin)
			if plain == "" || !ix.has(plan.Connect, c, twin, plain) {
				break
			}
			x := ix.contrast(plan.Connect, plain, twin, c)
			sw := strings.TrimSpace(srv.Software + " " + srv.Version)
			if lib := srv.Settings["tls_library"]; lib != "" {
				sw += " with " + lib
			}
			f.Servers = append(f.Servers, ServerCost{Lab: srv.Lab, Software: sw, Variant: twin, Plain: plain, ServerCPU: x.ServerCPU, MS: x.MS})
		}
		if len(f.Servers) == len(ix.r.Target.Servers) {
			r.add(KindFinding, TopicNegotiation, f)
			return
		}
	}
}

// serverTLSWords says a ServerTLSCost in one sentence.
func serverTLSWords(f ServerTLSCost) string {
	var parts []string
	for _, s := range f.Servers {
		p := fmt.Sprintf("%s (%s) %s of server CPU", s.Lab, s.Software, msWords(s.ServerCPU))
		if !math.IsNaN(s.MS) {
			p += fmt.Sprintf(" and %s", msWords(s.MS))
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("TLS (%s against plain) costs each server per new connection: %s. The servers differ in version and TLS library at once: the figures compare the two builds, not the libraries alone.",
		strings.TrimPrefix(f.Servers[0].Variant, f.Servers[0].Lab+" "), strings.Join(parts, "; "))
}
