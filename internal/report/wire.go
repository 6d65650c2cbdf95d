package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report/chart"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// Connections decoded from a packet capture (the wire experiment): one
// trial per variant, a group of connections that negotiated alike, each
// trial's figures means over its connections, not over trials. Their
// cells are the index's (experiment wire); they get tables of their own
// instead of the throughput table: where the packets came from (the
// header), the connections per variant, their phases, each phase's time
// split by whose turn it was, and what the ClientHello offered.

// isWire reports whether r was decoded from a capture.
func isWire(r *result.Result) bool {
	return r.Capture != nil || slices.ContainsFunc(r.Trials, func(t result.Trial) bool { return t.Experiment == plan.Wire })
}

// wireTrials are the trials of a variant's connections, in concurrency
// order (a capture has one).
func (ix *index) wireTrials(name string) []result.Trial {
	var out []result.Trial
	for _, c := range ix.conc[plan.Wire] {
		out = append(out, ix.trials[cellKey{plan.Wire, name, c}]...)
	}
	return out
}

// wireConns sums the connections of ts.
func wireConns(ts []result.Trial) (conns, resumed int64) {
	for _, t := range ts {
		conns, resumed = conns+t.Conns, resumed+t.Resumed
	}
	return conns, resumed
}

// wireOf is the first of ts's Wire, nil if none has one.
func wireOf(ts []result.Trial) *result.Wire {
	for _, t := range ts {
		if t.Wire != nil {
			return t.Wire
		}
	}
	return nil
}

// captureFields are the header's lines about a capture: where the packets
// came from, the command run during a live capture and what could not be
// seen.
func captureFields(c *result.Capture) []Field {
	src := c.Source
	var facts []string
	facts = append(facts, plural(int(c.Packets), "packet"), plural(int(c.Conns), "connection"))
	if len(c.Ports) > 0 {
		ports := make([]string, len(c.Ports))
		for i, p := range c.Ports {
			ports[i] = fmt.Sprint(p)
		}
		word := "port "
		if len(ports) > 1 {
			word = "ports "
		}
		facts = append(facts, "on "+word+strings.Join(ports, ","))
	}
	if c.SnapLen > 0 {
		facts = append(facts, fmt.Sprintf("snap length %d", c.SnapLen))
	}
	if c.CutAt > 0 {
		facts = append(facts, fmt.Sprintf("cut short at byte %d", c.CutAt))
	}
	if c.OpenCap > 0 {
		facts = append(facts, fmt.Sprintf("at most %d connections followed at once", c.OpenCap))
	}
	out := []Field{{"from", src + ": " + strings.Join(facts, ", ")}}
	if len(c.Command) > 0 {
		out = append(out, Field{"ran", strings.Join(c.Command, " ")})
	}
	if u := unseenWords(c.Unseen); u != "" {
		out = append(out, Field{"unseen", u})
	}
	return out
}

// unseenOrder is the order unseen kinds are said in, and their words.
var unseenOrder = []struct{ kind, one, many string }{
	{"began-before-capture", "connection began before the capture", "connections began before the capture"},
	{"ended-after-capture", "connection was still open when it ended", "connections were still open when it ended"},
	{"lost", "gap in a stream (bytes not captured)", "gaps in streams (bytes not captured)"},
	{"reordered", "packet out of order", "packets out of order"},
	{"truncated", "packet cut by the snap length", "packets cut by the snap length"},
	{"undecodable", "stream whose protocol could not be read", "streams whose protocol could not be read"},
	{"untracked", "connection not followed (too many open at once)", "connections not followed (too many open at once)"},
	{"cut-short", "packet cut short where the file ends", "packets cut short where the file ends"},
	{"not-tcp", "packet not TCP", "packets not TCP"},
	{"other-ports", "packet on other ports", "packets on other ports"},
}

// unseenWords says the counts of what a capture could not show, in
// unseenOrder, then any other kind by name: "2 connections began before
// the capture, 3 packets cut by the snap length".
func unseenWords(u map[string]int64) string {
	var parts []string
	for _, k := range unseenOrder {
		if n := u[k.kind]; n > 0 {
			w := k.many
			if n == 1 {
				w = k.one
			}
			parts = append(parts, fmt.Sprintf("%d %s", n, w))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(u)) {
		if u[k] > 0 && !slices.ContainsFunc(unseenOrder, func(o struct{ kind, one, many string }) bool { return o.kind == k }) {
			parts = append(parts, fmt.Sprintf("%d %s", u[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

// wireTables writes the connections of each variant, their phases, each
// phase's split and what their ClientHello offered.
func (ix *index) wireTables(b *body) {
	names := slices.DeleteFunc(slices.Clone(ix.variants), func(n string) bool { return len(ix.wireTrials(n)) == 0 })
	if len(names) == 0 {
		return
	}
	ix.wireConnTable(b, names)
	ix.wirePhases(b, names)
	ix.wireSplit(b, names)
	ix.wireOffered(b, names)
}

// wireConnTable writes each variant's connections: how many, to what,
// how long, and what the handshakes showed.
func (ix *index) wireConnTable(b *body, names []string) {
	t := Table{
		Title: "wire: connections by variant (connections that negotiated alike), from the capture",
		Left:  3,
		Header: []string{"variant", "protocol", "server", "conns", "ms mean", "p50", "p99", "max",
			"resumed", "HRR", "tickets offered", "cert chain B", "flights/conn"},
	}
	var all int64
	for _, n := range names {
		c, _ := wireConns(ix.wireTrials(n))
		all += c
	}
	for _, n := range names {
		ts := ix.wireTrials(n)
		conns, resumed := wireConns(ts)
		w := wireOf(ts)
		proto, server := "-", "-"
		hrr, tickets, chain, flights := textCell("-"), textCell("-"), textCell("-"), textCell("-")
		tls := slices.ContainsFunc(ts, func(t result.Trial) bool { return t.Negotiated != nil })
		if w != nil {
			proto, server = w.Protocol, w.Server
			if tls {
				hrr, tickets = countCell(int64(w.HelloRetries), "connections"), countCell(int64(w.TicketsOffered), "ClientHellos")
			}
			if w.CertChainBytes > 0 {
				chain = countCell(int64(w.CertChainBytes), "bytes")
			}
			if w.Flights > 0 {
				flights = numCell(w.Flights, rate, "flights/conn")
			}
		}
		res := textCell("-")
		if tls {
			res = shareCell(resumed, conns)
		}
		lat := wireHist(ts)
		connsCell := countCell(conns, "connections")
		if len(names) > 1 {
			connsCell = connsCell.shown(connsCell.Text + " (" + percent(conns, all) + ")")
		}
		ms := func(v float64) Cell { return numCell(v, millis, "ms") }
		t.addCells(textCell(n), textCell(proto), textCell(server), connsCell, ms(lat.Mean), ms(lat.P50), ms(lat.P99), ms(lat.Max),
			res, hrr, tickets, chain, flights)
	}
	t.Foot = []string{
		"ms: each connection from its first SYN to its last packet; HRR: connections the server sent a HelloRetryRequest; tickets offered: ClientHellos carrying a session ticket or PSK",
		"cert chain B: the server's certificate chain (TLS 1.2; TLS 1.3 encrypts it); flights/conn: encrypted flights after the handshake, counted and timed, their content hidden",
	}
	b.table(t)
}

// wireHist is the latency of a variant's connections: its trial's, or,
// were there several, the one with the most connections.
func wireHist(ts []result.Trial) result.Hist {
	h := result.Hist{Mean: math.NaN(), P50: math.NaN(), P99: math.NaN(), Max: math.NaN()}
	var most int64 = -1
	for _, t := range ts {
		if t.Latency.Count > most && t.Latency.Count > 0 {
			h, most = t.Latency, t.Latency.Count
		}
	}
	return h
}

// wirePhases writes each variant's phases with their round trips.
func (ix *index) wirePhases(b *body, names []string) {
	var phases []string
	for _, n := range names {
		for _, t := range ix.wireTrials(n) {
			phases = mergeOrder(phases, t.Phases)
		}
	}
	if len(phases) == 0 {
		return
	}
	var past []string
	t := Table{
		Title:  "wire: phases, ms, mean over each variant's connections [round trips: client turns, as tlsbench counts them]",
		Left:   1,
		Header: append(append([]string{"variant"}, phases...), "total"),
	}
	for _, n := range names {
		ts := withLatency(ix.wireTrials(n))
		if len(ts) == 0 {
			continue
		}
		row := []Cell{textCell(n)}
		for _, p := range phases {
			row = append(row, phaseCell(ts, p))
		}
		t.addCells(append(row, numCell(wireHist(ts).Mean, millis, "ms"))...)
		if slices.ContainsFunc(ts, func(t result.Trial) bool { return result.WirePhasesPast(t) > 0 }) {
			past = append(past, n)
		}
	}
	if len(past) > 0 {
		// A result written before each phase was a mean over all of a
		// variant's connections (direct TLS and SSLRequest in one variant).
		t.Foot = append(t.Foot, fmt.Sprintf("the phases of %s add up past the total: each is a mean over the connections that had it; decode the capture again with this tlsbench", strings.Join(past, ", ")))
	}
	b.table(t)
}

// wireSplit writes each phase's time by whose turn it was, and the whole
// connection's.
func (ix *index) wireSplit(b *body, names []string) {
	t := Table{
		Title:  "wire: where each phase's time went, ms per connection (mean): the client's turns, the server's, the network's, at the capture point",
		Left:   2,
		Header: []string{"variant", "phase", "client", "server", "network", "client %"},
	}
	for _, n := range names {
		w := wireOf(ix.wireTrials(n))
		if w == nil || len(w.Split) == 0 {
			continue
		}
		label := n
		add := func(phase string, s result.PhaseSplit) {
			ms := func(v float64) Cell { return numCell(v, millis, "ms") }
			t.addCells(textCell(label), textCell(phase), ms(s.Client), ms(s.Server), ms(s.Network), clientShare(s))
			label = ""
		}
		for _, s := range w.Split {
			add(s.Phase, s)
		}
		if len(w.Split) > 1 {
			add("connection", splitTotal(w.Split))
		}
	}
	if len(t.Rows) == 0 {
		return
	}
	t.Foot = []string{
		"client: from the server's last packet to the client's next (its think time: crypto, protocol); server: from the client's packet to the server's answer, less one network round trip; network: the TCP handshake's round trip, once per client turn",
	}
	b.table(t)
}

// splitTotal adds up a connection's phase splits.
func splitTotal(ss []result.PhaseSplit) result.PhaseSplit {
	var s result.PhaseSplit
	for _, p := range ss {
		s.Client, s.Server, s.Network = s.Client+p.Client, s.Server+p.Server, s.Network+p.Network
	}
	return s
}

// clientShare is the client's part of a split, in percent.
func clientShare(s result.PhaseSplit) Cell {
	all := s.Client + s.Server + s.Network
	if all <= 0 {
		return textCell("-")
	}
	v := 100 * s.Client / all
	return Cell{Text: fmt.Sprintf("%.0f%%", v), Unit: "%", Value: v, StdDev: math.NaN(), CI: math.NaN()}
}

// wireNetwork is the network's part of the setup of ts's connections
// (every phase but close), ms; 0 without a split.
func wireNetwork(ts []result.Trial) float64 {
	var ms float64
	if w := wireOf(ts); w != nil {
		for _, s := range w.Split {
			if s.Phase != "close" {
				ms += s.Network
			}
		}
	}
	return ms
}

// splitOf is the split of one phase, false if the capture has none.
func splitOf(w *result.Wire, phase string) (result.PhaseSplit, bool) {
	if w == nil {
		return result.PhaseSplit{}, false
	}
	for _, s := range w.Split {
		if s.Phase == phase {
			return s, true
		}
	}
	return result.PhaseSplit{}, false
}

// wireOffered writes what each TLS variant's ClientHello offered.
func (ix *index) wireOffered(b *body, names []string) {
	t := Table{
		Title:  "wire: what the ClientHello offered (each variant's first connection)",
		Left:   7,
		Header: []string{"variant", "versions", "suites", "groups", "key shares", "SNI", "ALPN", "hello B"},
	}
	for _, n := range names {
		w := wireOf(ix.wireTrials(n))
		if w == nil || w.Offered == nil {
			continue
		}
		o := w.Offered
		var shares []string
		for _, k := range o.KeyShares {
			shares = append(shares, fmt.Sprintf("%s %d B", groupWords(k.Group), k.Bytes))
		}
		var groups []string
		for _, g := range o.Groups {
			groups = append(groups, groupWords(g))
		}
		t.addCells(textCell(n), textCell(orDash(strings.Join(o.Versions, ", "))), textCell(suitesWords(o.Suites)), textCell(orDash(strings.Join(groups, ", "))),
			textCell(orDash(strings.Join(shares, ", "))), textCell(orDash(o.SNI)), textCell(orDash(strings.Join(o.ALPN, ", "))), countCell(int64(o.HelloBytes), "bytes"))
	}
	if len(t.Rows) == 0 {
		return
	}
	t.Foot = []string{"suites: how many, the client's first three in its order of preference; hello B: the ClientHello record, header included"}
	b.table(t)
}

// suitesWords is "31: TLS_AES_256_GCM_SHA384, ... +28".
func suitesWords(ss []string) string {
	if len(ss) == 0 {
		return "-"
	}
	head := ss[:min(3, len(ss))]
	s := fmt.Sprintf("%d: %s", len(ss), strings.Join(head, ", "))
	if len(ss) > len(head) {
		s += fmt.Sprintf(" +%d", len(ss)-len(head))
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// wireChart stacks each variant's connection by whose turn its time was:
// the client's, the server's and the network's, summed over its phases.
func (b *figurer) wireChart() {
	ix := b.ix
	parts := []struct {
		name string
		of   func(result.PhaseSplit) float64
	}{
		{"client", func(s result.PhaseSplit) float64 { return s.Client }},
		{"server", func(s result.PhaseSplit) float64 { return s.Server }},
		{"network", func(s result.PhaseSplit) float64 { return s.Network }},
	}
	var colors chart.PhaseColors
	var bars []chart.Bar
	for _, n := range ix.variants {
		w := wireOf(ix.wireTrials(n))
		if w == nil || len(w.Split) == 0 {
			continue
		}
		s := splitTotal(w.Split)
		br := chart.Bar{Label: n}
		for _, p := range parts {
			br.Segments = append(br.Segments, chart.Segment{Value: p.of(s), Color: colors.Of(p.name)})
			br.Value += p.of(s)
		}
		if !finite(br.Value) {
			continue
		}
		br.Note = num(br.Value, millis) + " ms"
		bars = append(bars, br)
	}
	if len(bars) == 0 {
		return
	}
	var key []chart.Swatch
	for _, p := range parts {
		key = append(key, chart.Swatch{Name: p.name, Color: colors.Of(p.name)})
	}
	b.add(chart.Figure{
		ID:      "wire-split",
		Title:   "wire: whose turn a connection's time was",
		Caption: "Each bar is one variant's connection as the capture saw it, its phases summed: the client's turns (its think time), the server's (answer time less the network's round trip) and the network's (one round trip per client turn).",
		Kind:    chart.Bars,
		X:       chart.Axis{Label: "ms per connection (mean over the variant's connections)", Min: chart.At(0)},
		Bars:    bars,
		Key:     key,
	})
}

// wireFigures compares two captures variant by variant: the connection's
// mean time, each phase's and the round trips per connection. Each side
// is one trial (its figures means over its connections), so the changes
// carry no interval.
func wireFigures(a, b *index, variants []string) []Figure {
	var phases []string
	for _, ix := range []*index{a, b} {
		for _, n := range variants {
			for _, t := range ix.wireTrials(n) {
				phases = mergeOrder(phases, t.Phases)
			}
		}
	}
	type figure struct {
		title string
		value func(result.Trial) (float64, bool)
	}
	figs := []figure{{"connection, ms (mean over each variant's connections)", func(t result.Trial) (float64, bool) {
		return t.Latency.Mean, t.Latency.Count > 0
	}}}
	for _, p := range phases {
		figs = append(figs, figure{p + ", ms", func(t result.Trial) (float64, bool) {
			ms := phaseMean([]result.Trial{t}, p)
			return ms, !math.IsNaN(ms)
		}})
	}
	figs = append(figs, figure{"round trips per connection", func(t result.Trial) (float64, bool) {
		rt := 0.0
		for _, p := range t.Phases {
			rt += p.RoundTrips.Mean
		}
		return rt, len(t.Phases) > 0
	}})
	var out []Figure
	for _, fg := range figs {
		f := Figure{Experiment: plan.Wire, Title: fg.title, precision: millis}
		for _, n := range variants {
			xa, xb := values(a.wireTrials(n), fg.value), values(b.wireTrials(n), fg.value)
			if len(xa) == 0 || len(xb) == 0 {
				continue
			}
			f.Rows = append(f.Rows, Row{Variant: n, Concurrency: 1, Old: stats.Summarize(xa), New: stats.Summarize(xb), Delta: stats.Welch(xa, xb)})
		}
		if len(f.Rows) > 0 {
			out = append(out, f)
		}
	}
	return out
}
