package wire

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// SelfCheck is connect --wire under way: the capture of a run's own
// connections, to set the run's phases beside the wire's.
type SelfCheck struct {
	live  *Live
	file  string
	ports []int
}

// StartSelfCheck starts capturing the connections of spec's variants on
// loopback; locate is where a variant connects (host:port), once the site
// is open. It refuses, as a plan.Error, what the capture could not check: a
// server elsewhere (its packets do not cross this machine's loopback), a
// tunnel (the capture would see the tunnel, not the connection) and an
// emulated RTT (added inside tlsbench, where the wire does not see it).
func StartSelfCheck(ctx context.Context, spec plan.Spec, locate func(plan.Variant) (string, error)) (*SelfCheck, error) {
	if !slices.Contains(spec.Experiments, plan.Connect) {
		return nil, plan.Errorf("⟨wire⟩ checks the connect experiment's phases: run it with connect")
	}
	if slices.ContainsFunc(spec.RTT, func(d time.Duration) bool { return d != 0 }) {
		return nil, plan.Errorf("⟨wire⟩: ⟨rtt⟩ delays inside tlsbench, which the wire does not see: leave ⟨rtt⟩ out to check the phases")
	}
	var ports []int
	for _, v := range spec.Variants() {
		if v.Tunnel != "" {
			return nil, plan.Errorf("⟨wire⟩: variant %s goes through a tunnel (⟨via⟩), whose packets are not its connection's: check direct connections", v.ID)
		}
		if v.RTTVia == plan.RTTViaLink {
			return nil, plan.Errorf("⟨wire⟩: variant %s crosses a delay link (⟨rtt_via⟩ link), which a capture on loopback does not see: capture its device with tlsbench wire --capture (docs/measuring.md)", v.ID)
		}
		addr, err := locate(v)
		if err != nil {
			return nil, err
		}
		host, p, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		local, err := localHost(ctx, host)
		if err != nil {
			return nil, err
		}
		if !local {
			return nil, plan.Errorf("⟨wire⟩ captures on this machine's loopback, and the server %s is elsewhere: capture where its traffic passes (tcpdump -w FILE 'tcp port %s') and decode it with tlsbench wire FILE", addr, p)
		}
		port, _ := strconv.Atoi(p)
		if !slices.Contains(ports, port) {
			ports = append(ports, port)
		}
	}
	tmp, err := os.CreateTemp("", "tlsbench-wire-*.pcap")
	if err != nil {
		return nil, err
	}
	tmp.Close()
	// A server on one of this machine's own addresses is reached over
	// loopback too (Linux routes local traffic through lo).
	live, err := StartLive(ctx, LiveOptions{Interface: loopbackInterface(), Ports: ports, File: tmp.Name()})
	if err != nil {
		os.Remove(tmp.Name())
		return nil, err
	}
	return &SelfCheck{live: live, file: tmp.Name(), ports: ports}, nil
}

// localHost says whether host names this machine: a loopback address or
// one of its interfaces'.
func localHost(ctx context.Context, host string) (bool, error) {
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return false, err
	}
	own, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		a = a.Unmap()
		if a.IsLoopback() {
			continue
		}
		if !slices.ContainsFunc(own, func(o net.Addr) bool {
			p, err := netip.ParsePrefix(o.String())
			return err == nil && p.Addr().Unmap() == a
		}) {
			return false, nil
		}
	}
	return len(addrs) > 0, nil
}

// loopbackInterface is the name of the loopback interface (lo on Linux).
func loopbackInterface() string {
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 {
			return i.Name
		}
	}
	return "lo"
}

// Finish stops the capture, decodes it and sets the wire's phases beside
// the run's in res.WireChecks and, for client stacks other than Go's,
// what their connections negotiated in res.WireStacks, with a note on the
// capture. A stack's variant whose connections negotiated other than it
// asks for fails its check: the error names each, after res holds them.
func (w *SelfCheck) Finish(res *result.Result) error {
	st, err := w.live.Stop()
	if err != nil {
		return err
	}
	var conns []*Conn
	collect := func(c *Conn) { conns = append(conns, c) }
	// The run is over: decoding its own capture (bounded by the run) is
	// part of saving it, which a Ctrl-C that ended the run does not stop.
	if _, err := ReadFile(context.Background(), w.file, Options{Ports: w.ports, Conn: collect}); err != nil {
		return fmt.Errorf("decoding the run's capture: %w", err)
	}
	variants := res.Spec.Variants()
	checks, notes := Checks(variants, res.Trials, conns)
	res.WireChecks = checks
	stacks, stackNotes := Stacks(variants, res.Trials, conns)
	res.WireStacks = stacks
	res.Notes = append(res.Notes, fmt.Sprintf("--wire: the run's connections were captured on loopback with %s (%d packets, %d dropped by the kernel); each trial's are those the capture shows starting within its time", st.Method, st.Packets, st.Dropped))
	res.Notes = append(res.Notes, notes...)
	res.Notes = append(res.Notes, stackNotes...)
	var failed []string
	for _, s := range stacks {
		if s.Failed != "" {
			failed = append(failed, s.Variant+": "+s.Failed)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("the capture shows %s", strings.Join(failed, "; "))
	}
	return nil
}

// Remove stops the capture and deletes its file.
func (w *SelfCheck) Remove() {
	w.live.Stop()
	os.Remove(w.file)
}

// stackOf is the client stack of v other than Go's, "" for Go's.
func stackOf(v plan.Variant) string {
	if v.Client == plan.GoClient {
		return ""
	}
	return v.Client
}

// attributed are the connect trials' variants in trial order, each with
// the connections its trials opened (as they count them) and those the
// capture shows within them.
type attributed struct {
	order  []string
	opened map[string]int64
	conns  map[string][]*Conn
}

// attribute gives each connect trial its connections. Go's are those
// starting within the trial's time. A client stack's trial (Ended set)
// has the last of those starting after the trials before it ended and
// before its own program's done, as many as it reported: before them
// come the checks' and its warm-up's, which end before its warm line,
// and its first measured ones may start before tlsbench reads that line,
// the trial's Start.
func attribute(trials []result.Trial, conns []*Conn) attributed {
	a := attributed{opened: map[string]int64{}, conns: map[string][]*Conn{}}
	conns = slices.Clone(conns)
	slices.SortStableFunc(conns, func(x, y *Conn) int { return x.Trace.Start.Compare(y.Trace.Start) })
	var before time.Time // when the trials so far ended
	for _, t := range trials {
		end := t.Ended
		if end.IsZero() {
			end = t.Start.Add(t.Elapsed)
		}
		from := before
		if end.After(before) {
			before = end
		}
		if t.Experiment != plan.Connect {
			continue
		}
		if _, ok := a.opened[t.Variant]; !ok {
			a.order = append(a.order, t.Variant)
		}
		a.opened[t.Variant] += t.Conns
		stack := !t.Ended.IsZero()
		var in []*Conn
		for _, c := range conns {
			st := c.Trace.Start
			if !stack && !st.Before(t.Start) && !st.After(end) || stack && st.After(from) && !st.After(end) {
				in = append(in, c)
			}
		}
		if stack {
			in = in[max(0, len(in)-int(reported(t))):]
		}
		a.conns[t.Variant] = append(a.conns[t.Variant], in...)
	}
	return a
}

// reported is how many connections a client stack's connect trial
// reported: those that succeeded and those that failed, not those its
// program did not run (errors of kind "client: …").
func reported(t result.Trial) int64 {
	n := t.Conns
	for kind, k := range t.Errors {
		if !strings.HasPrefix(kind, "client:") {
			n += k
		}
	}
	return n
}

// Checks sets, per variant and phase, tlsbench's mean phase time and
// round trips over its connect trials beside the wire's over the
// connections the capture shows within those trials (attribute), with the
// wire's split of each phase among client, server and network, and
// notes each variant whose connection counts differ. A client stack
// other than Go's has the wire's phases alone: tlsbench times none.
func Checks(variants []plan.Variant, trials []result.Trial, conns []*Conn) ([]result.WireCheck, []string) {
	type sums struct {
		n                     int64
		ms, trip              float64
		client, server, netwk float64
	}
	type variant struct {
		phases     []string // tlsbench's order, then the wire's own
		tool, wire map[string]*sums
	}
	stacks := map[string]string{}
	for _, v := range variants {
		stacks[v.ID] = stackOf(v)
	}
	a := attribute(trials, conns)
	vs := map[string]*variant{}
	add := func(v *variant, m map[string]*sums, phase string, n int64, ms, trips float64) *sums {
		if !slices.Contains(v.phases, phase) {
			v.phases = append(v.phases, phase)
		}
		s := m[phase]
		if s == nil {
			s = &sums{}
			m[phase] = s
		}
		s.n += n
		s.ms += ms
		s.trip += trips
		return s
	}
	for _, id := range a.order {
		vs[id] = &variant{tool: map[string]*sums{}, wire: map[string]*sums{}}
	}
	for _, t := range trials {
		if t.Experiment != plan.Connect || stacks[t.Variant] != "" {
			continue
		}
		v := vs[t.Variant]
		for _, p := range t.Phases {
			n := p.Latency.Count
			add(v, v.tool, p.Name, n, p.Latency.Mean*float64(n), p.RoundTrips.Mean*float64(n))
		}
	}
	for _, id := range a.order {
		v := vs[id]
		for _, c := range a.conns[id] {
			for _, p := range c.Trace.Phases {
				s := add(v, v.wire, p.Name, 1, float64(p.Duration)/float64(time.Millisecond), float64(p.RoundTrips))
				for _, sp := range c.Split {
					if sp.Phase == p.Name {
						s.client, s.server, s.netwk = s.client+sp.Client, s.server+sp.Server, s.netwk+sp.Network
					}
				}
			}
		}
	}
	var checks []result.WireCheck
	var notes []string
	for _, id := range a.order {
		v := vs[id]
		for _, into := range []string{PhaseEncrypted, PhaseData} {
			folded := fold(into, v.phases, v.tool, v.wire)
			if len(folded) == 0 {
				continue
			}
			// The wire sees encrypted flights only after the handshake, or
			// a plaintext protocol it does not decode: set tlsbench's
			// phases there, summed, beside them.
			sum := &sums{n: 1}
			for _, name := range folded {
				s := v.tool[name]
				sum.ms += s.ms / float64(s.n)
				sum.trip += s.trip / float64(s.n)
			}
			v.tool[into] = sum
			v.phases = slices.DeleteFunc(v.phases, func(p string) bool { return slices.Contains(folded, p) })
			why := "cannot see inside the encrypted flights after the handshake"
			if into == PhaseData {
				why = "does not decode this protocol's plaintext"
			}
			notes = append(notes, fmt.Sprintf("--wire: %s: the wire %s; tlsbench's %s are summed beside them as %s", id, why, strings.Join(folded, ", "), into))
		}
		if seen := int64(len(a.conns[id])); seen != a.opened[id] {
			notes = append(notes, fmt.Sprintf("--wire: %s opened %d connections in its trials, the capture shows %d starting within them", id, a.opened[id], seen))
		}
		for _, phase := range v.phases {
			wc := result.WireCheck{Variant: id, Phase: phase, Client: stacks[id]}
			if s := v.tool[phase]; s != nil && s.n > 0 {
				wc.Tool, wc.ToolRoundTrips = s.ms/float64(s.n), s.trip/float64(s.n)
			}
			if s := v.wire[phase]; s != nil && s.n > 0 {
				n := float64(s.n)
				wc.Conns, wc.Wire, wc.WireRoundTrips = s.n, s.ms/n, s.trip/n
				wc.Split = &result.PhaseSplit{Phase: phase, Client: round3(s.client / n), Server: round3(s.server / n), Network: round3(s.netwk / n)}
			}
			checks = append(checks, wc)
		}
	}
	return checks, notes
}

// Stacks sets out, per variant of a client stack other than Go's, what
// the connections the capture shows within its connect trials negotiated,
// checked against the variant (mismatch), and notes where the stack said
// otherwise (its tls line, Trial.Negotiated).
func Stacks(variants []plan.Variant, trials []result.Trial, conns []*Conn) ([]result.WireNegotiated, []string) {
	byID := map[string]plan.Variant{}
	for _, v := range variants {
		byID[v.ID] = v
	}
	a := attribute(trials, conns)
	var out []result.WireNegotiated
	var notes []string
	for _, id := range a.order {
		v, ok := byID[id]
		if !ok || stackOf(v) == "" {
			continue
		}
		w := result.WireNegotiated{Variant: id, Client: v.Client, Conns: int64(len(a.conns[id]))}
		var reasons []string
		counts := map[string]int64{}
		certs := map[string]bool{}
		for _, c := range a.conns[id] {
			if why := mismatch(v, c); why != "" {
				if counts[why] == 0 {
					reasons = append(reasons, why)
				}
				counts[why]++
			}
			n := c.Negotiated
			if n == nil {
				continue
			}
			w.TLS++
			if w.Negotiated == nil {
				first := *n
				w.Negotiated = &first
			}
			if c.HelloRetry {
				w.HelloRetries++
			}
			if c.Resumed {
				w.Resumed++
			}
			certs[cmp.Or(c.ClientCert, "hidden")] = true
		}
		for _, k := range []string{"sent", "none", "hidden"} {
			if certs[k] {
				w.ClientCert = k // sent over none over hidden: what any connection showed
				break
			}
		}
		var failed []string
		for _, why := range reasons {
			failed = append(failed, fmt.Sprintf("%s on %d of %d connections", why, counts[why], w.Conns))
		}
		w.Failed = strings.Join(failed, "; ")
		out = append(out, w)
		if note := stackSaid(v, trials, w.Negotiated); note != "" {
			notes = append(notes, note)
		}
	}
	return out, notes
}

// mismatch says how a connection differs from what its variant asks for,
// in verifyStack's words (internal/bench); "" when it does not.
func mismatch(v plan.Variant, c *Conn) string {
	n := c.Negotiated
	switch {
	case v.Plain() && n != nil:
		return "the plain variant negotiated " + n.Version
	case v.Plain():
		return ""
	case n == nil:
		return "a TLS variant connected without TLS"
	}
	if want := v.TLS; (want == "1.2" || want == "1.3") && n.Version != "TLS "+want {
		return fmt.Sprintf("asked for TLS %s, negotiated %s", want, n.Version)
	}
	if v.Group != "" {
		if got, _ := plan.GroupName(n.Group); n.Group != "" && got != v.Group {
			return fmt.Sprintf("asked for the %s key-exchange group, negotiated %s", v.Group, n.Group)
		}
		if c.HelloRetry {
			// The stack was to offer the group's key share first.
			return fmt.Sprintf("asked for the %s key-exchange group, the server answered with a HelloRetryRequest", v.Group)
		}
	}
	if cert := v.ClientCert != "" && v.ClientCert != "off"; c.ClientCert != "" && cert != (c.ClientCert == "sent") {
		if cert {
			return "asked for a client certificate, sent none"
		}
		return "sent a client certificate the variant has none of"
	}
	return ""
}

// stackSaid notes where what a stack said it negotiated (its trials'
// Negotiated, from its tls line) disagrees with what the wire shows; ""
// where it agrees or did not say. Suites are compared only in the IANA
// spelling both use for TLS 1.3 (OpenSSL names TLS 1.2's its own way).
func stackSaid(v plan.Variant, trials []result.Trial, wire *result.Negotiated) string {
	var said *result.Negotiated
	for _, t := range trials {
		if t.Variant == v.ID && t.Experiment == plan.Connect && t.Negotiated != nil {
			said = t.Negotiated
			break
		}
	}
	if said == nil {
		return ""
	}
	words := func(n *result.Negotiated) string {
		if n == nil {
			return "no TLS"
		}
		return strings.Join(slices.DeleteFunc([]string{n.Version, n.Suite, n.Group}, func(s string) bool { return s == "" }), " ")
	}
	differ := wire == nil || said.Version != "" && said.Version != wire.Version ||
		said.Group != "" && wire.Group != "" && plan.GroupLabelOf(said.Group) != wire.Group ||
		strings.HasPrefix(said.Suite, "TLS_") && strings.HasPrefix(wire.Suite, "TLS_") && said.Suite != wire.Suite
	if !differ {
		return ""
	}
	return fmt.Sprintf("--wire: %s: client %s said it negotiated %s, the wire shows %s", v.ID, v.Client, words(said), words(wire))
}

// fold names tlsbench's phases that the wire saw only as its phase into
// (encrypted, or data: a plaintext protocol it does not decode): those it
// timed and the wire did not, when the wire has into and tlsbench none.
func fold[S any](into string, phases []string, tool, wired map[string]*S) []string {
	if wired[into] == nil || tool[into] != nil {
		return nil
	}
	var folded []string
	for _, p := range phases {
		if tool[p] != nil && wired[p] == nil {
			folded = append(folded, p)
		}
	}
	return folded
}
