package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/tlsbench/tlsbench/internal/result"
)

var update = flag.Bool("update", false, "rewrite the golden summaries")

// readAll decodes a capture file and the connections in it, in the order
// they ended.
func readAll(t *testing.T, path string, opt Options) (*Capture, []*Conn) {
	t.Helper()
	var conns []*Conn
	opt.Conn = func(c *Conn) { conns = append(conns, c) }
	c, err := ReadFile(context.Background(), path, opt)
	if err != nil {
		t.Fatal(err)
	}
	return c, conns
}

// decode decodes a capture in memory.
func decode(b []byte, opt Options) (*Capture, error) {
	return Decode(context.Background(), bytes.NewReader(b), opt)
}

// checkSums fails t if a variant's phases are not means over all its
// connections or add up past its total (pg18-mixed.pcap did both when
// direct TLS and SSLRequest were one variant).
func checkSums(t *testing.T, c *Capture) {
	t.Helper()
	for _, tr := range c.Result().Trials {
		if past := result.WirePhasesPast(tr); past > 0 {
			t.Errorf("variant %q: phases add up %.6f ms past the total %.6f ms", tr.Variant, past, tr.Latency.Mean)
		}
		for _, p := range tr.Phases {
			if p.Latency.Count != tr.Conns {
				t.Errorf("variant %q: phase %s over %d connections of %d", tr.Variant, p.Name, p.Latency.Count, tr.Conns)
			}
		}
	}
}

// summary is what a capture decodes to, in words: per connection its
// protocol, phases with round trips, and what TLS negotiated.
func summary(c *Capture, conns []*Conn) string {
	var b strings.Builder
	fmt.Fprintf(&b, "packets %d, connections %d, unseen %v\n", c.Info.Packets, c.Info.Conns, c.Info.Unseen)
	for _, conn := range conns {
		fmt.Fprintf(&b, "%s:", conn.Protocol)
		for _, p := range conn.Trace.Phases {
			fmt.Fprintf(&b, " %s %d", p.Name, p.RoundTrips)
		}
		if n := conn.Negotiated; n != nil {
			fmt.Fprintf(&b, " | %s %s %s", n.Version, n.Suite, n.Group)
			if conn.HelloRetry {
				b.WriteString(" hello-retry")
			}
			if conn.Resumed {
				b.WriteString(" resumed")
			}
			if conn.TicketOffered {
				b.WriteString(" ticket-offered")
			}
			if n.PeerKey != "" {
				fmt.Fprintf(&b, " key %s chain %d", n.PeerKey, conn.CertChainBytes)
			}
			if o := conn.Offered; o != nil {
				fmt.Fprintf(&b, " | offered %v groups %v shares %v hello %d", o.Versions, o.Groups, o.KeyShares, o.HelloBytes)
			}
			fmt.Fprintf(&b, " | flights %d", conn.Flights)
		}
		if conn.Negotiation != "" {
			fmt.Fprintf(&b, " | %s", conn.Negotiation)
		}
		b.WriteString("\n")
	}
	r := c.Result()
	for _, t := range r.Trials {
		fmt.Fprintf(&b, "variant %q: %d connections, %d resumed\n", t.Variant, t.Conns, t.Resumed)
	}
	return b.String()
}

// TestGolden decodes captures of real clients (curl with OpenSSL 3.0,
// pgbench/libpq, the mariadb client) against tlsbench's lab servers,
// made with `tlsbench wire --capture lo --keep-capture`.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.pcap")
	if len(files) == 0 {
		t.Fatal("no captures in testdata")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c, conns := readAll(t, f, Options{})
			checkSums(t, c)
			got := summary(c, conns)
			golden := strings.TrimSuffix(f, ".pcap") + ".golden"
			if *update {
				os.WriteFile(golden, []byte(got), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("decoded:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestCutCaptures: a capture cut short mid-packet yields what came
// before, counted; one that starts after a connection began leaves that
// connection out, counted, and decodes the rest.
func TestCutCaptures(t *testing.T) {
	raw, err := os.ReadFile("testdata/pg-tls.pcap")
	if err != nil {
		t.Fatal(err)
	}
	whole, err := decode(raw, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Cut inside a packet's data, inside its record header, and just after
	// its record header: each says the file was cut, and where.
	for _, cutAt := range []int{len(raw) - 40, lastRecord(t, raw) + 7, lastRecord(t, raw) + 16} {
		cut, err := decode(raw[:cutAt], Options{})
		if err != nil {
			t.Fatal(err)
		}
		if cut.Info.Unseen["cut-short"] != 1 || cut.Info.Packets != whole.Info.Packets-1 || cut.Info.CutAt != int64(lastRecord(t, raw)) {
			t.Errorf("cut at %d: %d packets (whole %d), cut at %d, unseen %v", cutAt, cut.Info.Packets, whole.Info.Packets, cut.Info.CutAt, cut.Info.Unseen)
		}
		if notes := strings.Join(cut.Result().Notes, "\n"); !strings.Contains(notes, fmt.Sprintf("the capture file was cut short: it ends inside a packet at byte %d", lastRecord(t, raw))) {
			t.Errorf("cut at %d: the notes do not say it was cut: %s", cutAt, notes)
		}
	}

	// Drop the first connection's SYN and SYN-ACK (the first two packets).
	r, err := pcapgo.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if err := w.WriteFileHeader(r.Snaplen(), r.LinkType()); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		if i >= 2 {
			w.WritePacket(ci, data)
		}
	}
	mid, err := decode(buf.Bytes(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if mid.Info.Unseen["began-before-capture"] != 1 || mid.Info.Conns != whole.Info.Conns-1 {
		t.Errorf("mid-connection: %d connections (whole %d), unseen %v", mid.Info.Conns, whole.Info.Conns, mid.Info.Unseen)
	}

	if _, err := decode([]byte("this is no capture at all"), Options{}); err != ErrNotCapture {
		t.Errorf("text: %v, want ErrNotCapture", err)
	}
	// A port filter leaves the other ports' packets out, counted.
	other, err := decode(raw, Options{Ports: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if other.Info.Conns != 0 || other.Info.Unseen["other-ports"] != whole.Info.Packets {
		t.Errorf("port 1: %d connections, unseen %v", other.Info.Conns, other.Info.Unseen)
	}
}

// FuzzDecode: any bytes decode or fail cleanly, never panic.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.pcap")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err == nil && len(b) < 16<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decode(b, Options{})
		if err == nil {
			checkSums(t, c)
		}
	})
}

// lastRecord is the offset of a pcap file's last record.
func lastRecord(t *testing.T, raw []byte) int {
	t.Helper()
	off, last := 24, 0
	for off+16 <= len(raw) {
		last = off
		off += 16 + int(binary.LittleEndian.Uint32(raw[off+8:]))
	}
	if off != len(raw) {
		t.Fatalf("not a little-endian pcap file: records end at %d of %d bytes", off, len(raw))
	}
	return last
}

// TestPcapng: the same packets in pcapng decode as in pcap.
func TestPcapng(t *testing.T) {
	raw, err := os.ReadFile("testdata/pg18-mixed.pcap")
	if err != nil {
		t.Fatal(err)
	}
	r, err := pcapgo.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var ng bytes.Buffer
	w, err := pcapgo.NewNgWriter(&ng, r.LinkType())
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		ci.InterfaceIndex = 0
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	var a, b []*Conn
	pc, err := Decode(context.Background(), bytes.NewReader(raw), Options{Conn: func(c *Conn) { a = append(a, c) }})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := Decode(context.Background(), &ng, Options{Conn: func(c *Conn) { b = append(b, c) }})
	if err != nil {
		t.Fatal(err)
	}
	pc.Info.SnapLen, nc.Info.SnapLen = 0, 0
	if got, want := summary(nc, b), summary(pc, a); got != want {
		t.Errorf("pcapng:\n%s\npcap:\n%s", got, want)
	}
}

// TestAnswers: the server's answers after the handshake, by size, as
// tcpdump -r lists the capture's segments: tlsbench's Go client against
// PostgreSQL 18, its SCRAM login (AuthenticationSASL, SASLContinue, then
// AuthenticationOk with the parameters) and five queries.
func TestAnswers(t *testing.T) {
	_, conns := readAll(t, "testdata/pg18-mixed.pcap", Options{})
	var sizes []int
	for _, a := range conns[0].Answers {
		sizes = append(sizes, a.Bytes)
	}
	if want := []int{65, 115, 529, 71, 205, 88, 85, 203}; !slices.Equal(sizes, want) || conns[0].Flights != len(want) {
		t.Errorf("answers %v of %d flights, want %v", sizes, conns[0].Flights, want)
	}
	for i := 1; i < len(conns[0].Answers); i++ {
		if !conns[0].Answers[i].At.After(conns[0].Answers[i-1].At) {
			t.Errorf("answer %d at %v, not after the one before", i, conns[0].Answers[i].At)
		}
	}
}
