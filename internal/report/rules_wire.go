package report

import (
	"fmt"
	"math"

	"github.com/tlsbench/tlsbench/internal/result"
)

// The findings of a capture (the wire experiment): what it could not see,
// how many connections resumed, HelloRetryRequests and what they cost,
// and whose turn each handshake's and connection's time was.

// TopicWire is the findings on connections decoded from a capture.
const TopicWire Topic = "wire"

// WireHidden: encryption hid what Conns TLS connections carried after
// their handshakes; Flights is their mean encrypted flights per
// connection.
type WireHidden struct {
	Conns   int64
	Flights float64
}

// WireUnseen: what the capture could not show, in words (unseenWords).
type WireUnseen struct{ Unseen string }

// WireResumed: of the capture's TLS connections, Resumed resumed a
// session; Offered of the Full handshakes offered a ticket or PSK the
// server did not take. Where a resumed and a full variant spoke the same
// version to the same server, ResumedMS and FullMS are their connections'
// mean times (NaN otherwise).
type WireResumed struct {
	Resumed, TLS, Full, Offered int64
	ResumedVariant, FullVariant string
	ResumedMS, FullMS           float64
}

// WireHelloRetry: Retries of the Conns connections of Variant got a
// HelloRetryRequest; the client's first key share was First, the server
// chose Chosen. Every is set when they are every TLS 1.3 connection of the
// capture. The handshake took RoundTrips in HandshakeMS, so the extra
// round trip cost about HandshakeMS / RoundTrips.
type WireHelloRetry struct {
	Variant                 string
	Retries, Conns          int64
	Every                   bool
	First, Chosen           string
	RoundTrips, HandshakeMS float64
}

// WireTurns is whose turn the time of Variant's Conns connections was:
// its TLS handshake's (Handshake, when it has one) and the whole
// connection's (Conn), ms per connection as the capture saw them.
type WireTurns struct {
	Variant      string
	Conns        int64
	Handshake    *result.PhaseSplit
	Conn         result.PhaseSplit
	RoundTripsHS float64
}

func (WireHidden) isFact()     {}
func (WireUnseen) isFact()     {}
func (WireResumed) isFact()    {}
func (WireHelloRetry) isFact() {}
func (WireTurns) isFact()      {}

// wire: the findings of a capture.
func (r *rules) wire() {
	ix := r.ix
	if !isWire(ix.r) {
		return
	}
	if c := ix.r.Capture; c != nil {
		if u := unseenWords(c.Unseen); u != "" {
			r.add(KindCaveat, TopicWire, WireUnseen{Unseen: u})
		}
	}
	var hidden WireHidden
	var flights float64
	res := WireResumed{ResumedMS: math.NaN(), FullMS: math.NaN()}
	var tls13 int64
	for _, n := range ix.variants {
		ts := ix.wireTrials(n)
		conns, resumed := wireConns(ts)
		w := wireOf(ts)
		neg := negotiatedOf(ts)
		if neg == nil {
			continue
		}
		res.TLS += conns
		res.Resumed += resumed
		if w != nil && resumed < conns {
			res.Full += conns - resumed
			res.Offered += min(w.TicketsOffered, conns-resumed)
		}
		if neg.Version == "TLS 1.3" {
			tls13 += conns
		}
		if w != nil && w.Flights > 0 {
			hidden.Conns += conns
			flights += w.Flights * float64(conns)
		}
	}
	if hidden.Conns > 0 {
		hidden.Flights = flights / float64(hidden.Conns)
		r.add(KindCaveat, TopicWire, hidden)
	}
	if res.TLS > 0 {
		res.ResumedVariant, res.FullVariant, res.ResumedMS, res.FullMS = ix.wireResumePair()
		r.add(KindFinding, TopicWire, res)
	}
	for _, n := range ix.variants {
		ts := ix.wireTrials(n)
		w, neg := wireOf(ts), negotiatedOf(ts)
		if w == nil || neg == nil || w.HelloRetries == 0 {
			continue
		}
		conns, _ := wireConns(ts)
		f := WireHelloRetry{Variant: n, Retries: w.HelloRetries, Conns: conns, Chosen: neg.Group,
			Every: w.HelloRetries == tls13, RoundTrips: math.NaN(), HandshakeMS: phaseMean(ts, "tls-handshake")}
		if w.Offered != nil && len(w.Offered.KeyShares) > 0 {
			f.First = w.Offered.KeyShares[0].Group
		}
		if p, ok := phaseOf(ts, "tls-handshake"); ok {
			f.RoundTrips = p.RoundTrips.Mean
		}
		r.add(KindFinding, TopicHelloRetry, f)
		r.add(KindRecommendation, TopicHelloRetry, HelloRetry{Variants: []string{n}, Groups: []string{neg.Group}})
	}
	for _, n := range ix.variants {
		ts := ix.wireTrials(n)
		w := wireOf(ts)
		if w == nil || len(w.Split) == 0 {
			continue
		}
		conns, _ := wireConns(ts)
		f := WireTurns{Variant: n, Conns: conns, Conn: splitTotal(w.Split), RoundTripsHS: math.NaN()}
		if s, ok := splitOf(w, "tls-handshake"); ok {
			f.Handshake = &s
			if p, ok := phaseOf(ts, "tls-handshake"); ok {
				f.RoundTripsHS = p.RoundTrips.Mean
			}
		}
		r.add(KindFinding, TopicWire, f)
	}
}

// wireResumePair is a resumed variant and a full one of the same version
// and server, with their connections' mean times; "" and NaN if the
// capture has no such pair.
func (ix *index) wireResumePair() (resumed, full string, resumedMS, fullMS float64) {
	type side struct {
		name, version, server string
		ms                    float64
	}
	var rs, fs []side
	for _, n := range ix.variants {
		ts := ix.wireTrials(n)
		conns, res := wireConns(ts)
		w, neg := wireOf(ts), negotiatedOf(ts)
		if w == nil || neg == nil || conns == 0 {
			continue
		}
		s := side{n, neg.Version, w.Server, wireHist(ts).Mean}
		switch res {
		case conns:
			rs = append(rs, s)
		case 0:
			fs = append(fs, s)
		}
	}
	for _, a := range rs {
		for _, b := range fs {
			if a.version == b.version && a.server == b.server {
				return a.name, b.name, a.ms, b.ms
			}
		}
	}
	return "", "", math.NaN(), math.NaN()
}

// negotiatedOf is the first of ts's Negotiated, nil without TLS.
func negotiatedOf(ts []result.Trial) *result.Negotiated {
	for _, t := range ts {
		if t.Negotiated != nil {
			return t.Negotiated
		}
	}
	return nil
}

// phaseOf is the first of ts's phases named name.
func phaseOf(ts []result.Trial, name string) (result.Phase, bool) {
	for _, t := range ts {
		for _, p := range t.Phases {
			if p.Name == name && p.Latency.Count > 0 {
				return p, true
			}
		}
	}
	return result.Phase{}, false
}

// wireWords says the facts of a capture.
func wireWords(f Fact) string {
	switch f := f.(type) {
	case WireUnseen:
		return fmt.Sprintf("The capture did not show everything: %s; what those would have shown is not in the figures.", f.Unseen)
	case WireHidden:
		return fmt.Sprintf("Encryption hid what %s carried after the handshake: their %s encrypted flights per connection were counted and timed as flights, not read, so phases after the handshake are placed by their turns, not by their content.",
			connsWords(f.Conns, "TLS connection"), num(f.Flights, rate))
	case WireResumed:
		return resumedWords(f)
	case WireHelloRetry:
		return hrrWords(f)
	case WireTurns:
		return turnsWords(f)
	}
	panic(fmt.Sprintf("report: no wording for %T", f))
}

func connsWords(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("the %d %ss", n, word)
}

func resumedWords(f WireResumed) string {
	if f.Resumed == 0 {
		s := fmt.Sprintf("None of the %d TLS connections in the capture resumed a session", f.TLS)
		if f.Offered == 0 {
			return s + ", and no ClientHello offered a session ticket or PSK: this client does not try, so every connection paid a full handshake."
		}
		return s + fmt.Sprintf(", though %d of them offered a session ticket or PSK: the server did not take them.", f.Offered)
	}
	s := fmt.Sprintf("%.0f%% of the TLS connections in the capture resumed a session (%d of %d)", 100*float64(f.Resumed)/float64(f.TLS), f.Resumed, f.TLS)
	if f.Offered > 0 {
		s += fmt.Sprintf("; %d of the %d full handshakes had offered a ticket or PSK the server did not take", f.Offered, f.Full)
	}
	if !math.IsNaN(f.ResumedMS) && !math.IsNaN(f.FullMS) {
		s += fmt.Sprintf("; a resumed connection (%s) took %s against %s for a full one (%s)", f.ResumedVariant, msWords(f.ResumedMS), msWords(f.FullMS), f.FullVariant)
	}
	return s + "."
}

func hrrWords(f WireHelloRetry) string {
	who := fmt.Sprintf("%d of the %d connections of %s", f.Retries, f.Conns, f.Variant)
	switch {
	case f.Every:
		who = "Every TLS 1.3 connection in the capture"
		if f.Conns > 1 {
			who = fmt.Sprintf("Every TLS 1.3 connection in the capture (%d)", f.Conns)
		}
	case f.Retries == f.Conns:
		who = fmt.Sprintf("Every connection of %s (%d)", f.Variant, f.Conns)
	}
	why := ""
	if f.First != "" && f.Chosen != "" && groupWords(f.First) != groupWords(f.Chosen) {
		why = fmt.Sprintf(": the client offers %s first (its key share), the server takes %s", groupWords(f.First), groupWords(f.Chosen))
	} else if f.Chosen != "" {
		why = fmt.Sprintf(": the server asked for %s", groupWords(f.Chosen))
	}
	cost := ": one extra round trip"
	if !math.IsNaN(f.RoundTrips) && f.RoundTrips >= 1 && !math.IsNaN(f.HandshakeMS) {
		cost += fmt.Sprintf(", about %s here (the handshake's %s over its %s)", msWords(f.HandshakeMS/f.RoundTrips), msWords(f.HandshakeMS), pluralFloat(roundRT(f.RoundTrips), "round trip"))
	}
	return fmt.Sprintf("%s paid a HelloRetryRequest%s%s.", capFirst(who), why, cost)
}

func turnsWords(f WireTurns) string {
	c := f.Conn
	all := c.Client + c.Server + c.Network
	whole := fmt.Sprintf("the client's turns took %s, the server's %s and the network %s", msWords(c.Client), msWords(c.Server), msWords(c.Network))
	most := ""
	switch {
	case all <= 0:
	case c.Client > all/2:
		most = ": the client is where most of it goes"
	case c.Server > all/2:
		most = ": the server is where most of it goes"
	case c.Network > all/2:
		most = ": the network is where most of it goes"
	}
	of := fmt.Sprintf("%s (%s)", f.Variant, plural(int(f.Conns), "connection"))
	if h := f.Handshake; h != nil {
		rt := ""
		if !math.IsNaN(f.RoundTripsHS) {
			rt = fmt.Sprintf(" over %s", pluralFloat(roundRT(f.RoundTripsHS), "round trip"))
		}
		return fmt.Sprintf("Per TLS handshake of %s, the server took %s, the client %s and the network %s%s, as the capture saw them; over the whole connection (%s), %s%s.",
			of, msWords(h.Server), msWords(h.Client), msWords(h.Network), rt, msWords(all), whole, most)
	}
	return fmt.Sprintf("Per connection of %s, %s on average, %s%s.", of, msWords(all), whole, most)
}
