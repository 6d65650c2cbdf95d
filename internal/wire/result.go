package wire

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tally"
)

// groupKey is what sets connections apart into variants.
type groupKey struct {
	protocol, version, suite, group string
	resumed                         bool
	clientCert                      string
	// negotiation: "direct" for PostgreSQL's direct TLS, "" for an
	// SSLRequest first (plan.Variant's spelling): one takes a round trip
	// and a phase the other has not.
	negotiation string
	port        uint16
}

func keyOf(c *Conn) groupKey {
	k := groupKey{protocol: c.Protocol, port: c.Server.Port(), resumed: c.Resumed, clientCert: c.ClientCert, negotiation: c.Negotiation}
	if n := c.Negotiated; n != nil {
		k.version, k.suite, k.group = n.Version, n.Suite, n.Group
	}
	return k
}

// group tallies the connections of one variant as they are decoded.
type group struct {
	traces     *tally.Traces
	start, end time.Time
	wire       result.Wire
	negotiated *result.Negotiated
	resumed    int64
	flights    int
	splits     map[string]*result.PhaseSplit
}

// add tallies a decoded connection in its variant.
func (c *Capture) add(conn *Conn) {
	k := keyOf(conn)
	g := c.groups[k]
	if g == nil {
		g = &group{traces: tally.NewTraces(), start: conn.Trace.Start, end: conn.Trace.End, splits: map[string]*result.PhaseSplit{},
			wire:       result.Wire{Server: conn.Server.String(), Protocol: conn.Protocol, Offered: conn.Offered, CertChainBytes: conn.CertChainBytes},
			negotiated: conn.Negotiated}
		c.groups[k] = g
		c.keys = append(c.keys, k)
	}
	g.traces.Add(conn.Trace)
	g.start, g.end = minTime(g.start, conn.Trace.Start), maxTime(g.end, conn.Trace.End)
	w := &g.wire
	if conn.Resumed {
		g.resumed++
	}
	if conn.HelloRetry {
		w.HelloRetries++
	}
	if conn.TicketOffered {
		w.TicketsOffered++
	}
	if w.CertChainBytes == 0 {
		w.CertChainBytes = conn.CertChainBytes
	}
	g.flights += conn.Flights
	for _, s := range conn.Split {
		p, ok := g.splits[s.Phase]
		if !ok {
			p = &result.PhaseSplit{Phase: s.Phase}
			g.splits[s.Phase] = p
		}
		p.Client += s.Client
		p.Server += s.Server
		p.Network += s.Network
	}
}

// conns counts the connections decoded.
func (c *Capture) conns() int64 {
	var n int64
	for _, g := range c.groups {
		n += g.traces.Conns()
	}
	return n
}

// Result is the capture as a tlsbench result (experiment wire): one trial
// per variant, a variant being the connections that negotiated alike.
func (c *Capture) Result() *result.Result {
	r := result.New()
	info := c.Info
	r.Capture = &info
	r.Spec = plan.Spec{Experiments: []plan.Experiment{plan.Wire}, Target: info.Source, Concurrency: []int{1}, Trials: 1}
	r.Target = result.Target{URL: info.Source, Kind: string(plan.Wire)}
	// Plain first, then by version, as a run lists its variants.
	keys := slices.Clone(c.keys)
	slices.SortStableFunc(keys, func(a, b groupKey) int {
		return strings.Compare(a.version, b.version)
	})
	ids := variantIDs(keys)
	for i, k := range keys {
		v := plan.Variant{ID: ids[i], TLS: "off", Resume: k.resumed, Negotiation: k.negotiation, Baseline: i == 0 && k.version == ""}
		if k.version != "" {
			v.TLS = strings.TrimPrefix(k.version, "TLS ")
		}
		r.Variants = append(r.Variants, v)
		r.Trials = append(r.Trials, c.groups[k].trial(v))
	}
	if len(r.Trials) > 0 {
		r.Started = r.Trials[0].Start
		r.Ended = r.Trials[0].Start
		for _, t := range r.Trials {
			r.Started = minTime(r.Started, t.Start)
			r.Ended = maxTime(r.Ended, t.Start.Add(t.Elapsed))
		}
	}
	r.Notes = append(r.Notes, notes(c)...)
	return r
}

// variantIDs names each group by what sets it apart from the others:
// "plain", "tls1.3 X25519", "+ resumed", the suite, the client
// certificate or the port only where they differ.
func variantIDs(keys []groupKey) []string {
	if len(keys) == 0 {
		return nil
	}
	differs := func(f func(groupKey) string) bool {
		for _, k := range keys[1:] {
			if f(k) != f(keys[0]) {
				return true
			}
		}
		return false
	}
	suite := differs(func(k groupKey) string { return k.version + "|" + k.group + "|" + k.suite })
	port := differs(func(k groupKey) string { return fmt.Sprint(k.port) })
	cert := differs(func(k groupKey) string { return k.clientCert })
	ids := make([]string, len(keys))
	for i, k := range keys {
		var parts []string
		if k.version == "" {
			parts = append(parts, "plain")
			if k.protocol != ProtoPlain {
				parts[0] = "plain " + k.protocol
			}
		} else {
			parts = append(parts, "tls"+strings.TrimPrefix(k.version, "TLS "))
			if k.group != "" {
				parts = append(parts, k.group)
			}
			if suite && sameVersionGroup(keys, k) {
				parts = append(parts, k.suite)
			}
			if k.resumed {
				parts = append(parts, "resumed")
			}
			if cert && k.clientCert == "sent" {
				parts = append(parts, "client-cert")
			}
			if k.negotiation != "" {
				parts = append(parts, k.negotiation) // as a run names it: "tls1.3 X25519 direct"
			}
		}
		if port {
			parts = append(parts, fmt.Sprintf(":%d", k.port))
		}
		ids[i] = strings.Join(parts, " ")
	}
	// Groups that still read alike (a suite among several) are numbered.
	seen := map[string]int{}
	for i, id := range ids {
		seen[id]++
		if seen[id] > 1 {
			ids[i] = fmt.Sprintf("%s #%d", id, seen[id])
		}
	}
	return ids
}

// sameVersionGroup says whether another key has k's version and group but
// another suite, so that the suite is what tells them apart.
func sameVersionGroup(keys []groupKey, k groupKey) bool {
	for _, o := range keys {
		if o.version == k.version && o.group == k.group && o.suite != k.suite {
			return true
		}
	}
	return false
}

// trial is the group's connections as one trial: each figure a mean over
// all of them, so that the phases (and the split) add up to the total.
func (g *group) trial(v plan.Variant) result.Trial {
	t := result.Trial{Experiment: plan.Wire, Variant: v.ID, Concurrency: 1}
	g.traces.Fill(&t)
	t.Resumed, t.Negotiated = g.resumed, g.negotiated
	w := g.wire
	n := float64(t.Conns)
	for _, p := range t.Phases {
		if s, ok := g.splits[p.Name]; ok {
			w.Split = append(w.Split, result.PhaseSplit{Phase: p.Name, Client: round3(s.Client / n), Server: round3(s.Server / n), Network: round3(s.Network / n)})
		}
	}
	if t.Negotiated != nil {
		w.Flights = float64(g.flights) / n
	}
	t.Start, t.Elapsed = g.start, g.end.Sub(g.start)
	t.Wire = &w
	return t
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// notes say what the decoder could not see.
func notes(c *Capture) []string {
	var out []string
	if n := c.Info.Unseen["began-before-capture"]; n > 0 {
		out = append(out, fmt.Sprintf("%d connections began before the capture (no SYN): left out", n))
	}
	if n := c.Info.Unseen["ended-after-capture"]; n > 0 {
		out = append(out, fmt.Sprintf("%d connections were still open when the capture ended (no FIN from the client): left out", n))
	}
	if n := c.Info.Unseen["lost"]; n > 0 {
		out = append(out, fmt.Sprintf("%d connections miss bytes the capture did not see (lost at the capture point): left out", n))
	}
	if c.Info.Unseen["cut-short"] > 0 {
		out = append(out, fmt.Sprintf("the capture file was cut short: it ends inside a packet at byte %d (tcpdump killed, or a copy of a file still being written); the connections still open there are left out", c.Info.CutAt))
	}
	if n := c.Info.Unseen["untracked"]; n > 0 {
		out = append(out, fmt.Sprintf("%d connections were not followed: more than %d were open at once, the decoder's cap", n, c.Info.OpenCap))
	}
	if n := c.Info.Unseen["truncated"]; n > 0 {
		out = append(out, fmt.Sprintf("%d packets were cut by the snap length (%d bytes): their sizes count, their contents are unknown", n, c.Info.SnapLen))
	}
	for _, k := range c.keys {
		if k.version == "TLS 1.3" {
			out = append(out, "after a TLS 1.3 handshake everything is encrypted, including the server's NewSessionTickets: its exchanges are counted and timed as flights (phase "+PhaseEncrypted+"), and the client certificate, if any, cannot be seen")
			break
		}
	}
	return out
}
