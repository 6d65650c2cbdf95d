package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// template is the packets of the first connection of a real capture
// (curl, TLS 1.2), with the client's port.
func template(t *testing.T) (pkts [][]byte, times []time.Duration) {
	t.Helper()
	f, err := os.Open("testdata/curl-12.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var t0 time.Time
	var client uint16
	for {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		src, dst := binary.BigEndian.Uint16(data[34:]), binary.BigEndian.Uint16(data[36:])
		if client == 0 {
			client, t0 = src, ci.Timestamp
		}
		if src != client && dst != client {
			continue
		}
		pkts = append(pkts, data)
		times = append(times, ci.Timestamp.Sub(t0))
	}
	return pkts, times
}

// manyConns writes a capture of n copies of the template connection, 50
// open at a time and 500 a second, each from its own client address, as
// a pipe: the capture is made as it is read, never held whole.
func manyConns(t *testing.T, n int) io.Reader {
	pkts, times := template(t)
	pr, pw := io.Pipe()
	go func() {
		w := pcapgo.NewWriterNanos(pw)
		if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
			pw.CloseWithError(err)
			return
		}
		base := time.Unix(1700000000, 0)
		buf := make([]byte, 0, 65536)
		const open = 50
		for round := 0; round*open < n; round++ {
			start := base.Add(time.Duration(round) * 100 * time.Millisecond)
			for j := range pkts {
				for c := range min(open, n-round*open) {
					i := round*open + c
					buf = append(buf[:0], pkts[j]...)
					// The client is 127.x.y.z: the client's address, at 26 as
					// source or 30 as destination.
					ip := 26
					if binary.BigEndian.Uint16(buf[36:]) != 18444 {
						ip = 30
					}
					buf[ip+1], buf[ip+2], buf[ip+3] = byte(i>>16), byte(i>>8), byte(i)
					ci := gopacket.CaptureInfo{Timestamp: start.Add(times[j] + time.Duration(c)*time.Microsecond), CaptureLength: len(buf), Length: len(buf)}
					if err := w.WritePacket(ci, buf); err != nil {
						pw.CloseWithError(err)
						return
					}
				}
			}
		}
		pw.Close()
	}()
	t.Cleanup(func() { pr.CloseWithError(errors.New("test over")) })
	return pr
}

// peakHeap decodes r and returns the largest live heap seen (after a
// forced GC, every 4 MiB read) and the capture.
func peakHeap(t *testing.T, r io.Reader, opt Options) (uint64, *Capture) {
	t.Helper()
	m := &meter{r: r}
	runtime.GC()
	c, err := Decode(context.Background(), m, opt)
	if err != nil {
		t.Fatal(err)
	}
	return m.peak, c
}

// meter reads through, measuring the live heap every 4 MiB.
type meter struct {
	r       io.Reader
	n, peak uint64
}

func (m *meter) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	if m.n += uint64(n); m.n >= 4<<20 {
		m.n = 0
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		m.peak = max(m.peak, ms.HeapAlloc)
	}
	return n, err
}

// TestDecodeBoundedMemory decodes a generated capture of 2,000 and of
// 20,000 connections: the live heap while decoding does not grow with the
// capture's length (the old decoder kept every segment until the end).
func TestDecodeBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 20,000 connections")
	}
	small, cs := peakHeap(t, manyConns(t, 2000), Options{})
	large, cl := peakHeap(t, manyConns(t, 20000), Options{})
	t.Logf("peak live heap: %d KiB for 2,000 connections, %d KiB for 20,000", small>>10, large>>10)
	if cs.Info.Conns != 2000 || cl.Info.Conns != 20000 || len(cl.Info.Unseen) != 0 {
		t.Fatalf("decoded %d and %d connections, unseen %v", cs.Info.Conns, cl.Info.Conns, cl.Info.Unseen)
	}
	if large > 2*small+4<<20 || large > 64<<20 {
		t.Errorf("the live heap grew with the capture: %d KiB for 2,000 connections, %d KiB for 20,000", small>>10, large>>10)
	}
	checkSums(t, cl)
}

// TestDecodeCap: past MaxOpen connections open at once, the decoder
// follows no more, and says so.
func TestDecodeCap(t *testing.T) {
	c, err := Decode(context.Background(), manyConns(t, 100), Options{MaxOpen: 20})
	if err != nil {
		t.Fatal(err)
	}
	// 50 open at a time, 20 followed: 30 of each 50 are not.
	if c.Info.Conns != 40 || c.Info.Unseen["untracked"] != 60 || c.Info.OpenCap != 20 {
		t.Errorf("%d connections, unseen %v, cap %d", c.Info.Conns, c.Info.Unseen, c.Info.OpenCap)
	}
	if notes := strings.Join(c.Result().Notes, "\n"); !strings.Contains(notes, "60 connections were not followed: more than 20 were open at once") {
		t.Errorf("the notes do not say the cap was reached: %s", notes)
	}
}

// TestDecodeCancel: cancelling the context stops a decode promptly, with
// context.Canceled.
func TestDecodeCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	n := 0
	go func() {
		_, err := Decode(ctx, manyConns(t, 1_000_000), Options{Conn: func(*Conn) {
			if n++; n == 1000 {
				cancel()
			}
		}})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%v, want context.Canceled", err)
		}
		if n > 5000 {
			t.Errorf("%d connections decoded after the cancel at 1,000", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the decode went on 30 s after its context was cancelled")
	}
}

// TestDecodeDamaged: a record that claims 2 GB is a damaged file, named
// with its offset, not a capture of 0 packets or a cut one, and nothing
// reads 2 GB; likewise in pcapng.
func TestDecodeDamaged(t *testing.T) {
	raw, err := os.ReadFile("testdata/pg-tls.pcap")
	if err != nil {
		t.Fatal(err)
	}
	last := lastRecord(t, raw)
	bad := bytes.Clone(raw)
	binary.LittleEndian.PutUint32(bad[last+8:], 2<<30)
	binary.LittleEndian.PutUint32(bad[last+12:], 2<<30)
	first := bytes.Clone(raw)
	binary.LittleEndian.PutUint32(first[24+8:], 2<<30)

	var ng bytes.Buffer
	w, err := pcapgo.NewNgWriter(&ng, layers.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	pkts, _ := template(t)
	for _, p := range pkts[:3] {
		w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(1, 0), CaptureLength: len(p), Length: len(p)}, p)
	}
	w.Flush()
	ngBad := ng.Bytes()
	// The last Enhanced Packet Block's captured length (at 20 in it).
	epb := bytes.LastIndex(ngBad, []byte{6, 0, 0, 0})
	binary.LittleEndian.PutUint32(ngBad[epb+20:], 2<<30)

	tests := []struct {
		name    string
		b       []byte
		packets int64
		want    string
	}{
		{"last record", bad, 69, "damaged capture at byte " + strconv.Itoa(last) + ", after 69 packets: a record claims 2147483648 bytes, more than any capture keeps (262144)"},
		{"first record", first, 0, "damaged capture at byte 24, after 0 packets: a record claims 2147483648 bytes"},
		{"pcapng", ngBad, 2, "damaged capture at byte "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			_, err := decode(tt.b, Options{})
			var de *DamagedError
			if !errors.As(err, &de) || de.Packets != tt.packets || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v, want a one-line DamagedError after %d packets saying %q", err, tt.packets, tt.want)
			}
			runtime.ReadMemStats(&ms)
			if alloc := ms.TotalAlloc - before; alloc > 64<<20 {
				t.Errorf("%d MiB allocated reading a damaged record", alloc>>20)
			}
		})
	}
}

// synthConn writes a TCP connection's segments into a pcap, each after
// the time given from the one before, with sequence numbers that follow.
type synthConn struct {
	w              *pcapgo.Writer
	now            time.Time
	client, server netip.AddrPort
	cseq, sseq     uint32
}

func newSynthConn(w io.Writer) (*synthConn, error) {
	pw := pcapgo.NewWriterNanos(w)
	if err := pw.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		return nil, err
	}
	return &synthConn{w: pw, now: time.Unix(1700000000, 0), client: netip.MustParseAddrPort("10.0.0.1:40000"),
		server: netip.MustParseAddrPort("10.0.0.2:7000"), cseq: 1000, sseq: 5000}, nil
}

func (c *synthConn) send(fromClient bool, flags string, n int, after time.Duration) error {
	c.now = c.now.Add(after)
	src, dst, seq, ack := c.client, c.server, c.cseq, c.sseq
	if !fromClient {
		src, dst, seq, ack = c.server, c.client, c.sseq, c.cseq
	}
	data := packet(src, dst, seq, ack, flags, n)
	adv := uint32(n)
	if strings.ContainsAny(flags, "SF") {
		adv++
	}
	if fromClient {
		c.cseq += adv
	} else {
		c.sseq += adv
	}
	return c.w.WritePacket(gopacket.CaptureInfo{Timestamp: c.now, CaptureLength: len(data), Length: len(data)}, data)
}

// longConn writes one plain connection that makes rounds request and
// answer exchanges, as a pipe.
func longConn(rounds int) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		c, err := newSynthConn(pw)
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		send := c.send
		steps := []func() error{
			func() error { return send(true, "S", 0, 0) },
			func() error { return send(false, "SA", 0, 20*time.Microsecond) },
			func() error { return send(true, "A", 0, 10*time.Microsecond) },
		}
		for _, s := range steps {
			if err := s(); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		for range rounds {
			// 30 µs of the client's, 50 of the server's.
			if err := send(true, "PA", 100, 30*time.Microsecond); err != nil {
				pw.CloseWithError(err)
				return
			}
			if err := send(false, "PA", 200, 50*time.Microsecond); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		send(true, "FA", 0, 30*time.Microsecond)
		send(false, "FA", 0, 10*time.Microsecond)
		pw.Close()
	}()
	return pr
}

// packet is an Ethernet frame of a TCP segment carrying n bytes.
func packet(src, dst netip.AddrPort, seq, ack uint32, flags string, n int) []byte {
	tcp := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()), Seq: seq, Ack: ack, Window: 512,
		SYN: strings.Contains(flags, "S"), ACK: strings.Contains(flags, "A"), FIN: strings.Contains(flags, "F"), PSH: strings.Contains(flags, "P")}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
	tcp.SetNetworkLayerForChecksum(ip)
	eth := &layers.Ethernet{SrcMAC: make([]byte, 6), DstMAC: make([]byte, 6), EthernetType: layers.EthernetTypeIPv4}
	buf := gopacket.NewSerializeBuffer()
	gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, tcp, gopacket.Payload(make([]byte, n)))
	return buf.Bytes()
}

// TestLongConnection: a connection of many exchanges is tallied past its
// first segments (its tail) with the same figures as one kept whole, in
// memory that does not grow with its length.
func TestLongConnection(t *testing.T) {
	for _, rounds := range []int{100, 20000, 200000} {
		if testing.Short() && rounds > 20000 {
			continue // seconds of decoding: make test's
		}
		var conns []*Conn
		peak, c := peakHeap(t, longConn(rounds), Options{Conn: func(c *Conn) { conns = append(conns, c) }})
		if len(conns) != 1 {
			t.Fatalf("%d rounds: %d connections, unseen %v", rounds, len(conns), c.Info.Unseen)
		}
		conn := conns[0]
		var names []string
		var rts []int
		for _, p := range conn.Trace.Phases {
			names, rts = append(names, p.Name), append(rts, p.RoundTrips)
		}
		data, _ := conn.Trace.Phase(PhaseData)
		// data: from the SYN-ACK to the FIN, rounds × 80 µs and 40 µs
		// (the ACK and the FIN).
		want := time.Duration(rounds)*80*time.Microsecond + 40*time.Microsecond
		if strings.Join(names, " ") != "tcp data close" || rts[1] != rounds || data.Duration != want ||
			conn.Trace.Sent != int64(100*rounds) || conn.Trace.Received != int64(200*rounds) {
			t.Errorf("%d rounds: phases %v round trips %v, data %v (want %v), bytes %d/%d", rounds, names, rts, data.Duration, want, conn.Trace.Sent, conn.Trace.Received)
		}
		// The capture sits a third of the way from the client: the
		// SYN-ACK's 20 µs and the ACK's 10 make a round trip of 30 µs, 20
		// of it in each wait for the server and 10 in each of the client's
		// turns.
		split := conn.Split[1]
		if conn.RTT != 30*time.Microsecond || !near(conn.ClientSide, 2.0/3) {
			t.Errorf("%d rounds: RTT %v, client side %.3f; want 30µs, 0.667", rounds, conn.RTT, conn.ClientSide)
		}
		if wantServer := float64(rounds) * 0.030; !near(split.Server, wantServer) || !near(split.Network, float64(rounds)*0.030) || !near(split.Client, float64(rounds)*0.020+0.040) {
			t.Errorf("%d rounds: split %+v, want client %.3f server %.3f network %.3f", rounds, split, float64(rounds)*0.020+0.040, wantServer, float64(rounds)*0.030)
		}
		t.Logf("%d rounds: peak live heap %d KiB", rounds, peak>>10)
		if peak > 32<<20 {
			t.Errorf("%d rounds: peak live heap %d KiB", rounds, peak>>10)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

// TestServerSideRTT: a capture made on the server sees the SYN-ACK leave
// at once and the client's ACK a round trip later; the connection's RTT
// is the SYN to that ACK (Wireshark's iRTT), and each round trip's
// network time lies in the client's turns, not in the server's waits.
func TestServerSideRTT(t *testing.T) {
	const rtt = 44 * time.Millisecond
	conn := synthDecode(t, func(send func(bool, string, int, time.Duration)) {
		send(true, "S", 0, 0)
		send(false, "SA", 0, 10*time.Microsecond) // the server answers at once
		send(true, "A", 0, rtt)                   // its ACK is back a round trip later
		for range 3 {
			send(true, "PA", 100, 30*time.Microsecond)
			send(false, "PA", 200, 50*time.Microsecond) // the server's 50 µs
			send(true, "A", 0, rtt)                     // ...and what came back a round trip later
		}
		send(true, "FA", 0, 0)
		send(false, "FA", 0, 10*time.Microsecond)
	})
	if want := rtt + 10*time.Microsecond; conn.RTT != want || conn.ClientSide > 0.001 {
		t.Errorf("RTT %v, client side %.4f; want %v, about 0 (a capture on the server)", conn.RTT, conn.ClientSide, want)
	}
	for _, sp := range conn.Split {
		if sp.Phase != PhaseData {
			continue
		}
		// Three exchanges: the network's 3 round trips, none of them in
		// the server's waits (at most its 3 × 50 µs). The client's turns
		// keep the handshake's last leg (the SYN-ACK out, the ACK back),
		// which a capture on the server sees after the tcp phase.
		if sp.Server > 0.150 || sp.Network < 3*44 || sp.Network > 3*44.1 || sp.Client > 44.2 {
			t.Errorf("data split %+v: want server at most 0.150 ms, network 3 round trips (%d ms), client at most one", sp, 3*44)
		}
	}
}

// TestServerSideServerFirst: on a capture made on the server, a server that
// speaks first (MySQL's greeting) sends once the client's ACK arrives, a
// round trip after its SYN-ACK; that round trip is the network's, not the
// server's time before its greeting.
func TestServerSideServerFirst(t *testing.T) {
	const rtt = 44 * time.Millisecond
	conn := synthDecode(t, func(send func(bool, string, int, time.Duration)) {
		send(true, "S", 0, 0)
		send(false, "SA", 0, 10*time.Microsecond)
		send(true, "A", 0, rtt)
		send(false, "PA", 120, 50*time.Microsecond) // the greeting, 50 µs after the ACK
		send(true, "PA", 100, rtt)                  // the client's answer, a round trip later
		send(false, "PA", 200, 50*time.Microsecond)
		send(true, "FA", 0, rtt)
		send(false, "FA", 0, 10*time.Microsecond)
	})
	var server, network float64
	for _, sp := range conn.Split {
		server += sp.Server
		network += sp.Network
	}
	if server > 0.150 || network < 2*44 {
		t.Errorf("split %+v: want the server's time at most its 2 × 50 µs (0.150 ms), the network at least 2 round trips (88 ms)", conn.Split)
	}
}

// synthDecode decodes one synthetic connection that script sends.
func synthDecode(t *testing.T, script func(send func(fromClient bool, flags string, n int, after time.Duration))) *Conn {
	t.Helper()
	var buf bytes.Buffer
	c, err := newSynthConn(&buf)
	if err != nil {
		t.Fatal(err)
	}
	script(func(fromClient bool, flags string, n int, after time.Duration) {
		if err := c.send(fromClient, flags, n, after); err != nil {
			t.Fatal(err)
		}
	})
	var conns []*Conn
	if _, err := Decode(context.Background(), &buf, Options{Conn: func(c *Conn) { conns = append(conns, c) }}); err != nil {
		t.Fatal(err)
	}
	if len(conns) != 1 {
		t.Fatalf("%d connections", len(conns))
	}
	return conns[0]
}

// A client's pipelined bytes, which a capture on the server sees arrive
// just after the answer to the bytes before them, make no turn of their
// own: the client sent them before that answer reached it, a round trip
// away, and waits for both answers in one round trip, as it counts.
func TestServerSidePipelined(t *testing.T) {
	const rtt = 44 * time.Millisecond
	conn := synthDecode(t, func(send func(bool, string, int, time.Duration)) {
		send(true, "S", 0, 0)
		send(false, "SA", 0, 10*time.Microsecond)
		send(true, "A", 0, rtt)
		send(true, "PA", 80, 20*time.Microsecond) // a request
		send(false, "PA", 150, 50*time.Microsecond)
		send(true, "PA", 50, 20*time.Microsecond) // pipelined, sent with the first
		send(false, "PA", 100, 30*time.Microsecond)
		send(true, "PA", 14, rtt) // the next request, after both answers
		send(false, "PA", 5000, 80*time.Microsecond)
		send(true, "FA", 0, rtt)
		send(false, "FA", 0, 10*time.Microsecond)
	})
	trips := 0
	for _, p := range conn.Trace.Phases {
		trips += p.RoundTrips
	}
	if trips != 3 {
		t.Errorf("phases %+v: %d round trips, want 3 (TCP, the pipelined requests, the next)", conn.Trace.Phases, trips)
	}
}
