package wire

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// groupKey is what sets connections apart into variants.
type groupKey struct {
	protocol, version, suite, group string
	resumed                         bool
	clientCert                      string
	port                            uint16
}

func keyOf(c *Conn) groupKey {
	k := groupKey{protocol: c.Protocol, port: c.Server.Port(), resumed: c.Resumed, clientCert: c.ClientCert}
	if n := c.Negotiated; n != nil {
		k.version, k.suite, k.group = n.Version, n.Suite, n.Group
	}
	return k
}

// Result is the capture as a tlsbench result (experiment wire): one trial
// per variant, a variant being the connections that negotiated alike.
func (c *Capture) Result() *result.Result {
	r := result.New()
	info := c.Info
	r.Capture = &info
	r.Spec = plan.Spec{Experiments: []plan.Experiment{plan.Wire}, Target: info.Source, Concurrency: []int{1}, Trials: 1}
	r.Target = result.Target{URL: info.Source, Kind: string(plan.Wire)}
	var keys []groupKey
	groups := map[groupKey][]*Conn{}
	for _, conn := range c.Conns {
		k := keyOf(conn)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], conn)
	}
	// Plain first, then by version, as a run lists its variants.
	slices.SortStableFunc(keys, func(a, b groupKey) int {
		return strings.Compare(a.version, b.version)
	})
	ids := variantIDs(keys)
	for i, k := range keys {
		conns := groups[k]
		v := plan.Variant{ID: ids[i], TLS: "off", Resume: k.resumed, Baseline: i == 0 && k.version == ""}
		if k.version != "" {
			v.TLS = strings.TrimPrefix(k.version, "TLS ")
		}
		r.Variants = append(r.Variants, v)
		r.Trials = append(r.Trials, trialOf(v, conns))
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

func trialOf(v plan.Variant, conns []*Conn) result.Trial {
	t := result.Trial{Experiment: plan.Wire, Variant: v.ID, Concurrency: 1}
	traces := make([]netx.Trace, len(conns))
	for i, c := range conns {
		traces[i] = c.Trace
	}
	// Phases are listed in the order first seen: start with a connection
	// that has them all (a client's first connection may skip the query).
	slices.SortStableFunc(traces, func(a, b netx.Trace) int { return len(b.Phases) - len(a.Phases) })
	bench.TracesTrial(&t, traces)
	start, end := conns[0].Trace.Start, conns[0].Trace.End
	w := &result.Wire{Server: conns[0].Server.String(), Protocol: conns[0].Protocol}
	splits := map[string]*result.PhaseSplit{}
	var order []string
	flights := 0
	for _, c := range conns {
		start, end = minTime(start, c.Trace.Start), maxTime(end, c.Trace.End)
		if c.Resumed {
			t.Resumed++
		}
		if c.HelloRetry {
			w.HelloRetries++
		}
		if c.TicketOffered {
			w.TicketsOffered++
		}
		if w.CertChainBytes == 0 {
			w.CertChainBytes = c.CertChainBytes
		}
		if w.Offered == nil {
			w.Offered = c.Offered
		}
		if t.Negotiated == nil {
			t.Negotiated = c.Negotiated
		}
		flights += c.Flights
		for _, s := range c.Split {
			p, ok := splits[s.Phase]
			if !ok {
				p = &result.PhaseSplit{Phase: s.Phase}
				splits[s.Phase] = p
				order = append(order, s.Phase)
			}
			p.Client += s.Client
			p.Server += s.Server
			p.Network += s.Network
		}
	}
	n := float64(len(conns))
	for _, name := range order {
		p := splits[name]
		w.Split = append(w.Split, result.PhaseSplit{Phase: name, Client: round3(p.Client / n), Server: round3(p.Server / n), Network: round3(p.Network / n)})
	}
	if t.Negotiated != nil {
		w.Flights = float64(flights) / n
	}
	t.Start, t.Elapsed = start, end.Sub(start)
	t.Wire = w
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
	if n := c.Info.Unseen["truncated"]; n > 0 {
		out = append(out, fmt.Sprintf("%d packets were cut by the snap length (%d bytes): their sizes count, their contents are unknown", n, c.Info.SnapLen))
	}
	for _, conn := range c.Conns {
		if conn.Negotiated != nil && conn.Negotiated.Version == "TLS 1.3" {
			out = append(out, "after a TLS 1.3 handshake everything is encrypted, including the server's NewSessionTickets: its exchanges are counted and timed as flights (phase "+PhaseEncrypted+"), and the client certificate, if any, cannot be seen")
			break
		}
	}
	return out
}

// groupLabel spells crypto/tls's "CurveP256" as people do: P-256.
func groupLabel(g string) string {
	if rest, ok := strings.CutPrefix(g, "CurveP"); ok {
		return "P-" + rest
	}
	return g
}
