package bench_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/wire"
)

// The bounds of TestStormPhasesOnTheWire. eps is how far two clocks of
// one machine (the kernel's capture timestamps, the client's time.Now)
// may disagree about one event; sched is how long a loaded machine may
// keep a client from reading what arrived, or from going on once it has:
// far below forcedHold, the hold every client of the test waits through.
const (
	eps        = time.Millisecond
	sched      = 600 * time.Millisecond
	forcedHold = 2 * time.Second
	phaseHold  = "hold" // bench.PhaseHold
)

// TestStormPhasesOnTheWire runs storms against real servers (the built-in
// HTTPS server, PostgreSQL over TLS 1.3) while capturing them on loopback,
// and checks each client's phases against its connection on the wire:
// each phase ends as its answer arrived, never in the hold (the server's
// memory is read while every client is held, slowed here by forcedHold
// through the Runner's own seam); the TLS handshake ends before the
// client's next flight (its Finished) left; the hold is a phase of its
// own, between the client's last answer and its close; the close is timed
// on every engine, from before the client's first closing bytes until its
// FIN was sent. The bounds are of causes and effects on one clock, with
// slack for a loaded machine.
func TestStormPhasesOnTheWire(t *testing.T) {
	labtest.Slow(t)
	needCapture(t)
	const clients = 100
	tests := []struct {
		name, engine string
		firstOp      bool
		start        func(t *testing.T) lab.Server
	}{
		{"builtin", "builtin", false, func(t *testing.T) lab.Server { srv, _ := startBuiltinPorts(t); return srv }},
		{"builtin first-op", "builtin", true, func(t *testing.T) lab.Server { srv, _ := startBuiltinPorts(t); return srv }},
		{"postgres", "postgres", false, startStormPostgres},
		{"postgres first-op", "postgres", true, startStormPostgres},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := tt.start(t)
			raw := plan.Spec{Experiments: []plan.Experiment{plan.Storm}, Target: "lab:" + tt.engine, TLS: []string{"1.3"},
				Keys: []string{"ecdsa-p256"}, Clients: []int{clients}, FirstOp: tt.firstOp, Trials: 1, Tables: 1, Rows: 100,
				QueryMode: "simple", Timeout: time.Minute}
			if tt.engine == "builtin" {
				raw.Target, raw.QueryMode, raw.Tables, raw.Rows = plan.Builtin, "", 0, 0
			}
			spec, err := plan.New(raw)
			if err != nil {
				t.Fatal(err)
			}
			v := spec.Variants()[0]
			r, st := runnerOn(t, spec, srv)
			rec := &recording{}
			r.NewDriver = rec.driver
			memory := r.ServerMemory
			r.ServerMemory = func() (int64, string, error) {
				if rec.opened.Load() > 0 {
					time.Sleep(forcedHold) // the held clients' memory read, slowed
				}
				return memory()
			}
			ep, err := st.Locate(v)
			if err != nil {
				t.Fatal(err)
			}
			_, p, _ := net.SplitHostPort(ep.Addr)
			port, _ := strconv.Atoi(p)
			ctx := context.Background()
			if err := st.Before(ctx, v); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "storm.pcap")
			live, err := wire.StartLive(ctx, wire.LiveOptions{Interface: "lo", Ports: []int{port}, File: file, SnapLen: 128})
			if err != nil {
				t.Fatal(err)
			}
			tr, err := r.Trial(ctx, plan.Storm, v, clients)
			settle(file)
			cst, serr := live.Stop()
			if err != nil {
				t.Fatal(err)
			}
			if serr != nil {
				t.Fatal(serr)
			}
			if tr.Ops != clients || len(tr.Errors) > 0 {
				t.Fatalf("%d of %d clients back, errors %v", tr.Ops, clients, tr.Errors)
			}
			conns := readConns(t, file, uint16(port))
			var matched int
			var synFirst, synLast time.Time
			missing := map[string]int{}
			for _, s := range rec.sessions() {
				w, ok := conns[s.addr]
				switch {
				case !ok:
					missing["conn"]++
				case w.syn.IsZero():
					missing["SYN"]++
				case w.synAck.IsZero():
					missing["SYN-ACK"]++
				case w.fin.IsZero():
					missing["FIN"]++
				}
				if !ok || w.syn.IsZero() || w.synAck.IsZero() || w.fin.IsZero() {
					continue // a packet the capture dropped
				}
				matched++
				if synFirst.IsZero() || w.syn.Before(synFirst) {
					synFirst = w.syn
				}
				if w.syn.After(synLast) {
					synLast = w.syn
				}
				checkStormConn(t, s.conn.Finish(), w, tt.engine == "builtin" && !tt.firstOp)
				if t.Failed() {
					return // one connection's story is enough
				}
			}
			if matched < clients*8/10 {
				t.Fatalf("the capture shows %d of the %d connections whole (%d packets, %d dropped; missing %v): too few to check", matched, clients, cst.Packets, cst.Dropped, missing)
			}
			s := tr.Storm
			if s.Hold == nil || s.Hold.Count != clients || s.Hold.P50*float64(time.Millisecond) < float64(forcedHold) {
				t.Errorf("storm hold %+v: want every client's, each at least %v", s.Hold, forcedHold)
			}
			for _, name := range []string{netx.PhaseTCP, netx.PhaseTLSHandshake, netx.PhaseClose} {
				if i := slices.IndexFunc(tr.Phases, func(p result.Phase) bool { return p.Name == name }); i < 0 || tr.Phases[i].Latency.Count != clients {
					t.Errorf("phase %s missing or not of every client: %+v", name, tr.Phases)
				}
			}
			if slices.ContainsFunc(tr.Phases, func(p result.Phase) bool { return p.Name == phaseHold }) {
				t.Errorf("the hold is among the phases: %+v", tr.Phases)
			}
			if s.DialSpread <= 0 || s.DialSpread > s.AllConnected {
				t.Errorf("dial spread %v: want above 0, at most all connected (%v)", s.DialSpread, s.AllConnected)
			}
			t.Logf("%d connections checked on the wire (%d packets, %d dropped); dial spread %v, SYN spread %v, all connected %v, hold p50 %.1f ms",
				matched, cst.Packets, cst.Dropped, s.DialSpread, synLast.Sub(synFirst), s.AllConnected, s.Hold.P50)
		})
	}
}

// checkStormConn checks one client's trace x against its connection on
// the wire w, where the client's close is its first packet after the
// server's last bytes before its FIN (the server may answer a close after
// the FIN). direct: TLS from the first byte with nothing after the
// handshake (the built-in server's storm without --first-op), whose
// handshake's end is bounded by the client's next flight.
func checkStormConn(t *testing.T, x netx.Trace, w *wireConn, direct bool) {
	t.Helper()
	names := make([]string, len(x.Phases))
	for i, p := range x.Phases {
		names[i] = p.Name
	}
	hi := slices.Index(names, phaseHold)
	ci := slices.Index(names, netx.PhaseClose)
	if hi < 0 || ci != hi+1 || ci != len(names)-1 {
		t.Errorf("%v: phases %v: want the hold, then the close, last", w.client, names)
	}
	end := func(p netx.Phase) time.Time { return p.Start.Add(p.Duration) }
	// The client's steps: the phases before the hold (before the close,
	// or all, where it has neither).
	steps := x.Phases
	closeAt := x.End
	switch {
	case hi >= 0:
		steps, closeAt = x.Phases[:hi], x.Phases[hi].Start.Add(x.Phases[hi].Duration)
	case ci >= 0:
		steps, closeAt = x.Phases[:ci], x.Phases[ci].Start
	}
	closing := w.clientAt(closeAt.Add(-eps)) // the client's first packet of its close
	last := w.serverBefore(closing)          // the last answer before it
	// (The tcp phase's end is the dial's start and the kernel's round
	// trip, not a time the client read: a client descheduled before its
	// connect(2) ends it before the SYN-ACK.)
	if tcp := x.Phases[0]; tcp.Start.After(w.syn.Add(eps)) {
		t.Errorf("%v: tcp from %v, the wire's SYN at %v: want the dial before the SYN", w.client, tcp.Start, w.syn)
	}
	for _, p := range steps {
		if end(p).After(last.Add(sched)) {
			t.Errorf("%v: %s ends %v after the last answer on the wire (%v): it holds the hold", w.client, p.Name, end(p).Sub(last), last)
		}
	}
	if i := slices.Index(names, netx.PhaseTLSHandshake); direct && i >= 0 {
		hs := x.Phases[i]
		finished := w.clientAt(w.firstServer.Add(time.Nanosecond)) // the client's flight after the server's: its Finished
		// It starts where tcp ended (see above): its end is the bound.
		if end(hs).After(finished.Add(eps)) {
			t.Errorf("%v: tls-handshake %v, ends %v after the client's Finished left (the wire's SYN-ACK → client Finished %v)",
				w.client, hs.Duration, end(hs).Sub(finished), finished.Sub(w.synAck))
		}
	}
	if hi < 0 || ci < 0 {
		return
	}
	hold, cl := x.Phases[hi], x.Phases[ci]
	if hold.Duration < forcedHold || hold.Start.Before(last.Add(-sched)) {
		t.Errorf("%v: hold %v from %v, the last answer at %v: want at least %v, from the last answer", w.client, hold.Duration, hold.Start, last, forcedHold)
	}
	if quiet := w.clientAt(hold.Start.Add(sched)); quiet.Before(cl.Start.Add(-eps)) {
		t.Errorf("%v: the client sent at %v, in its hold (%v to %v)", w.client, quiet, hold.Start, cl.Start)
	}
	// Go closes a socket that another goroutine reads (pgx's background
	// reader) when that reader lets go of it: its FIN may leave after
	// Close returned.
	if end(cl).After(w.fin.Add(sched)) {
		t.Errorf("%v: close from %v to %v, on the wire from %v to the FIN at %v: want it to end as the FIN left, not with the other clients' closes",
			w.client, cl.Start, end(cl), closing, w.fin)
	}
}

// settle waits until the capture file stops growing (at most 5 s): the
// last FINs leave as the trial ends, and a capture stopped at once may
// not have read them from the kernel yet.
func settle(file string) {
	var size int64 = -1
	for range 50 {
		time.Sleep(100 * time.Millisecond)
		fi, err := os.Stat(file)
		if err != nil || fi.Size() == size {
			return
		}
		size = fi.Size()
	}
}

// needCapture fails (CI) or skips t where this process cannot capture
// on loopback.
func needCapture(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("capturing on loopback needs root or CAP_NET_RAW")
		}
		t.Skip("capturing on loopback needs root or CAP_NET_RAW")
	}
}

// wireConn is one connection as the capture shows it, times on the
// kernel's clock.
type wireConn struct {
	client      netip.AddrPort
	syn, synAck time.Time
	firstServer time.Time   // the server's first bytes
	clientData  []time.Time // segments with the client's bytes, its FIN or RST
	serverData  []time.Time // segments with the server's bytes
	fin         time.Time   // the client's FIN (or RST)
}

// clientAt is the client's first segment with bytes, a FIN or RST at or
// after at; its FIN if none.
func (w *wireConn) clientAt(at time.Time) time.Time {
	for _, c := range w.clientData {
		if !c.Before(at) {
			return c
		}
	}
	return w.fin
}

// serverBefore is the arrival of the server's last bytes before at.
func (w *wireConn) serverBefore(at time.Time) time.Time {
	last := w.synAck
	for _, s := range w.serverData {
		if s.Before(at) {
			last = s
		}
	}
	return last
}

// readConns reads a capture's connections to port, by client address.
func readConns(t *testing.T, file string, port uint16) map[netip.AddrPort]*wireConn {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	conns := map[netip.AddrPort]*wireConn{}
	for {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pkt := gopacket.NewPacket(data, r.LinkType(), gopacket.DecodeOptions{Lazy: true, NoCopy: true})
		ip, ok := pkt.NetworkLayer().(*layers.IPv4)
		tcp, ok2 := pkt.TransportLayer().(*layers.TCP)
		if !ok || !ok2 {
			continue
		}
		src, _ := netip.AddrFromSlice(ip.SrcIP)
		dst, _ := netip.AddrFromSlice(ip.DstIP)
		bytes := int(ip.Length) - int(ip.IHL)*4 - int(tcp.DataOffset)*4
		fromClient := uint16(tcp.DstPort) == port
		client := netip.AddrPortFrom(dst, uint16(tcp.DstPort))
		if fromClient {
			client = netip.AddrPortFrom(src, uint16(tcp.SrcPort))
		}
		w := conns[client]
		if w == nil {
			w = &wireConn{client: client}
			conns[client] = w
		}
		at := ci.Timestamp
		switch {
		case fromClient && tcp.SYN && !tcp.ACK:
			if w.syn.IsZero() {
				w.syn = at
			}
		case !fromClient && tcp.SYN && tcp.ACK:
			if w.synAck.IsZero() {
				w.synAck = at
			}
		case fromClient:
			if bytes > 0 || tcp.FIN || tcp.RST {
				w.clientData = append(w.clientData, at)
			}
			if (tcp.FIN || tcp.RST) && w.fin.IsZero() {
				w.fin = at
			}
		case bytes > 0:
			if w.firstServer.IsZero() {
				w.firstServer = at
			}
			w.serverData = append(w.serverData, at)
		}
	}
	return conns
}

// recording is a Runner's driver that keeps every session it opened, with
// its client address, to read their traces after the trial.
type recording struct {
	mu     sync.Mutex
	opened atomic.Int64
	held   []recorded
}

type recorded struct {
	addr netip.AddrPort
	conn *netx.Conn
}

func (rec *recording) driver(scheme string, cfg driver.Config) (driver.Driver, error) {
	d, err := driver.New(scheme, cfg)
	if err != nil {
		return nil, err
	}
	return recordingDriver{d, rec}, nil
}

func (rec *recording) sessions() []recorded {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.held)
}

type recordingDriver struct {
	driver.Driver
	rec *recording
}

func (d recordingDriver) Open(ctx context.Context) (driver.Session, error) {
	s, err := d.Driver.Open(ctx)
	if err != nil {
		return s, err
	}
	c := s.Conn()
	addr := c.LocalAddr().(*net.TCPAddr).AddrPort()
	d.rec.mu.Lock()
	d.rec.held = append(d.rec.held, recorded{netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port()), c})
	d.rec.mu.Unlock()
	d.rec.opened.Add(1)
	return s, nil
}

// startStormPostgres starts a lab PostgreSQL that takes a storm of the
// test's size.
func startStormPostgres(t *testing.T) lab.Server {
	return labtest.Start(t, "postgres", lab.Options{Keys: []string{"ecdsa-p256"}, Connections: 150})
}
