package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// TopicClientCert is what a client certificate (mutual TLS) adds.
const TopicClientCert Topic = "client-cert"

// ClientCertCost is what presenting a client certificate of key type Key
// adds to a new connection, against the same variant without one (Pairs,
// off twin to certificate): Handshakes are the TLS handshake's round trips
// with the certificate, by TLS version; MS the mean extra time per
// connection, ClientCPU and ServerCPU the mean extra CPU per connection, ms (the client signs its CertificateVerify,
// the server verifies the certificate and that signature); NaN where
// unknown.
type ClientCertCost struct {
	Key                  string
	Pairs                []Contrast
	Handshakes           []VersionRT
	RoundTrips           float64 // the largest change of the setup's round trips
	MS                   float64
	ClientCPU, ServerCPU float64
}

// VersionRT is the round trips of a TLS version's handshake.
type VersionRT struct {
	TLS        string
	RoundTrips float64
}

func (ClientCertCost) isFact() {}

// clientCerts: each client certificate key measured against its off twins.
func (r *rules) clientCerts() {
	ix := r.ix
	spec := ix.r.Spec.ClientCerts
	if !slices.Contains(spec, plan.ClientCertOff) {
		return
	}
	c, ok := ix.lowest(plan.Connect)
	if !ok {
		return
	}
	for _, key := range spec {
		if key == plan.ClientCertOff {
			continue
		}
		ps := ix.pairs(func(p plan.Variant) bool { return p.ClientCert == plan.ClientCertOff && !p.Resume },
			func(p *plan.Variant) { p.ClientCert = key })
		if len(ps) == 0 {
			continue
		}
		f := ClientCertCost{Key: key, Pairs: ps, RoundTrips: ps[0].RoundTrips}
		var ccpu, scpu, ms []float64
		for _, p := range ps {
			if !math.IsNaN(p.MS) {
				ms = append(ms, p.MS)
			}
			// NaN (unknown) stays NaN: max keeps it.
			f.RoundTrips = max(f.RoundTrips, p.RoundTrips)
			if !math.IsNaN(p.ClientCPU) {
				ccpu = append(ccpu, p.ClientCPU)
			}
			if !math.IsNaN(p.ServerCPU) {
				scpu = append(scpu, p.ServerCPU)
			}
			v := ix.info[p.To].TLS
			if rt := handshakeRT(ix.trials[cellKey{plan.Connect, p.To, c}]); !math.IsNaN(rt) &&
				!slices.ContainsFunc(f.Handshakes, func(h VersionRT) bool { return h.TLS == v }) {
				f.Handshakes = append(f.Handshakes, VersionRT{TLS: v, RoundTrips: roundRT(rt)})
			}
		}
		f.RoundTrips = roundRT(f.RoundTrips)
		f.MS, f.ClientCPU, f.ServerCPU = meanOrNaN(ms), meanOrNaN(ccpu), meanOrNaN(scpu)
		r.add(KindFinding, TopicClientCert, f)
	}
}

// handshakeRT is the mean round trips of the tls-handshake phase.
func handshakeRT(ts []result.Trial) float64 {
	var rts []float64
	for _, t := range ts {
		for _, p := range t.Phases {
			if p.Name == "tls-handshake" && p.Latency.Count > 0 {
				rts = append(rts, p.RoundTrips.Mean)
			}
		}
	}
	if len(rts) == 0 {
		return math.NaN()
	}
	return stats.Summarize(rts).Mean
}

func meanOrNaN(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return stats.Summarize(xs).Mean
}

// clientCertWords says a ClientCertCost in one sentence.
func (ix *index) clientCertWords(f ClientCertCost) string {
	var b strings.Builder
	fmt.Fprintf(&b, "A client certificate (%s, mutual TLS) against none: %s", f.Key, ix.effects(f.Pairs, "client-cert"))
	var parts []string
	switch rt := f.RoundTrips; {
	case math.IsNaN(rt):
	case rt < 0.5:
		parts = append(parts, "it added no round trip")
	default:
		parts = append(parts, "it added "+pluralFloat(rt, "round trip"))
	}
	// The time is the certificate's only where the rate says so too.
	if !math.IsNaN(f.MS) && slices.ContainsFunc(f.Pairs, Contrast.Measurable) {
		parts = append(parts, signed(f.MS, millis)+" ms per connection on average")
	}
	if len(f.Handshakes) > 0 {
		var hs []string
		for _, h := range f.Handshakes {
			hs = append(hs, fmt.Sprintf("TLS %s %g", h.TLS, h.RoundTrips))
		}
		parts = append(parts, "handshake round trips with it: "+strings.Join(hs, ", "))
	}
	if !math.IsNaN(f.ClientCPU) {
		parts = append(parts, "client CPU "+signed(f.ClientCPU, millis)+" ms per connection (signing its CertificateVerify)")
	}
	if !math.IsNaN(f.ServerCPU) {
		parts = append(parts, "server CPU "+signed(f.ServerCPU, millis)+" ms (verifying the certificate and the signature)")
	}
	if len(parts) > 0 {
		b.WriteString("; " + strings.Join(parts, "; "))
	}
	b.WriteString(".")
	return b.String()
}
