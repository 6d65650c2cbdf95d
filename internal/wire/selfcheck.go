package wire

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/netx"
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
// the run's in res.WireChecks, with a note on the capture.
func (w *SelfCheck) Finish(res *result.Result) error {
	st, err := w.live.Stop()
	if err != nil {
		return err
	}
	var traces []netx.Trace
	collect := func(c *Conn) { traces = append(traces, c.Trace) }
	// The run is over: decoding its own capture (bounded by the run) is
	// part of saving it, which a Ctrl-C that ended the run does not stop.
	if _, err := ReadFile(context.Background(), w.file, Options{Ports: w.ports, Conn: collect}); err != nil {
		return fmt.Errorf("decoding the run's capture: %w", err)
	}
	checks, notes := Checks(res.Trials, traces)
	res.WireChecks = checks
	res.Notes = append(res.Notes, fmt.Sprintf("--wire: the run's connections were captured on loopback with %s (%d packets, %d dropped by the kernel); each trial's are those the capture shows starting within its time", st.Method, st.Packets, st.Dropped))
	res.Notes = append(res.Notes, notes...)
	return nil
}

// Remove stops the capture and deletes its file.
func (w *SelfCheck) Remove() {
	w.live.Stop()
	os.Remove(w.file)
}

// Checks sets, per variant and phase, tlsbench's mean phase time and
// round trips over its connect trials beside the wire's over the
// connections the capture shows starting within those trials' times, and
// notes each variant whose connection counts differ.
func Checks(trials []result.Trial, conns []netx.Trace) ([]result.WireCheck, []string) {
	type sums struct {
		n        int64
		ms, trip float64
	}
	type variant struct {
		phases     []string // tlsbench's order, then the wire's own
		tool, wire map[string]*sums
		opened     int64 // connections tlsbench opened
		seen       int64 // connections the capture matched
	}
	var order []string
	vs := map[string]*variant{}
	add := func(v *variant, m map[string]*sums, phase string, n int64, ms, trips float64) {
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
	}
	for _, t := range trials {
		if t.Experiment != plan.Connect {
			continue
		}
		v := vs[t.Variant]
		if v == nil {
			v = &variant{tool: map[string]*sums{}, wire: map[string]*sums{}}
			vs[t.Variant] = v
			order = append(order, t.Variant)
		}
		v.opened += t.Conns
		for _, p := range t.Phases {
			n := p.Latency.Count
			add(v, v.tool, p.Name, n, p.Latency.Mean*float64(n), p.RoundTrips.Mean*float64(n))
		}
		end := t.Start.Add(t.Elapsed)
		for _, c := range conns {
			if c.Start.Before(t.Start) || c.Start.After(end) {
				continue
			}
			v.seen++
			for _, p := range c.Phases {
				add(v, v.wire, p.Name, 1, float64(p.Duration)/float64(time.Millisecond), float64(p.RoundTrips))
			}
		}
	}
	var checks []result.WireCheck
	var notes []string
	for _, id := range order {
		v := vs[id]
		if folded := foldEncrypted(v.phases, v.tool, v.wire); len(folded) > 0 {
			// After the handshake the wire sees encrypted flights only: set
			// tlsbench's phases there, summed, beside them.
			sum := &sums{n: 1}
			for _, name := range folded {
				s := v.tool[name]
				sum.ms += s.ms / float64(s.n)
				sum.trip += s.trip / float64(s.n)
			}
			v.tool[PhaseEncrypted] = sum
			v.phases = slices.DeleteFunc(v.phases, func(p string) bool { return slices.Contains(folded, p) })
			notes = append(notes, fmt.Sprintf("--wire: %s: the wire cannot see inside the encrypted flights after the handshake; tlsbench's %s are summed beside them as %s", id, strings.Join(folded, ", "), PhaseEncrypted))
		}
		if v.seen != v.opened {
			notes = append(notes, fmt.Sprintf("--wire: %s opened %d connections in its trials, the capture shows %d starting within them", id, v.opened, v.seen))
		}
		for _, phase := range v.phases {
			wc := result.WireCheck{Variant: id, Phase: phase}
			if s := v.tool[phase]; s != nil && s.n > 0 {
				wc.Tool, wc.ToolRoundTrips = s.ms/float64(s.n), s.trip/float64(s.n)
			}
			if s := v.wire[phase]; s != nil && s.n > 0 {
				wc.Conns, wc.Wire, wc.WireRoundTrips = s.n, s.ms/float64(s.n), s.trip/float64(s.n)
			}
			checks = append(checks, wc)
		}
	}
	return checks, notes
}

// foldEncrypted names tlsbench's phases that the wire saw only as its
// encrypted phase: those it timed and the wire did not, when the wire
// has an encrypted phase and tlsbench none.
func foldEncrypted[S any](phases []string, tool, wired map[string]*S) []string {
	if wired[PhaseEncrypted] == nil || tool[PhaseEncrypted] != nil {
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
