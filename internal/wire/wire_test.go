package wire

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

var update = flag.Bool("update", false, "rewrite the golden summaries")

// summary is what a capture decodes to, in words: per connection its
// protocol, phases with round trips, and what TLS negotiated.
func summary(c *Capture) string {
	var b strings.Builder
	fmt.Fprintf(&b, "packets %d, connections %d, unseen %v\n", c.Info.Packets, c.Info.Conns, c.Info.Unseen)
	for _, conn := range c.Conns {
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
			c, err := ReadFile(f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := summary(c)
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
	whole, err := Decode(bytes.NewReader(raw), Options{})
	if err != nil {
		t.Fatal(err)
	}
	cut, err := Decode(bytes.NewReader(raw[:len(raw)-40]), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cut.Info.Unseen["cut-short"] != 1 || cut.Info.Packets != whole.Info.Packets-1 {
		t.Errorf("cut short: %d packets (whole %d), unseen %v", cut.Info.Packets, whole.Info.Packets, cut.Info.Unseen)
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
	mid, err := Decode(&buf, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if mid.Info.Unseen["began-before-capture"] != 1 || len(mid.Conns) != len(whole.Conns)-1 {
		t.Errorf("mid-connection: %d connections (whole %d), unseen %v", len(mid.Conns), len(whole.Conns), mid.Info.Unseen)
	}

	if _, err := Decode(strings.NewReader("this is no capture at all"), Options{}); err != ErrNotCapture {
		t.Errorf("text: %v, want ErrNotCapture", err)
	}
	// A port filter leaves the other ports' packets out, counted.
	other, err := Decode(bytes.NewReader(raw), Options{Ports: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(other.Conns) != 0 || other.Info.Unseen["other-ports"] != whole.Info.Packets {
		t.Errorf("port 1: %d connections, unseen %v", len(other.Conns), other.Info.Unseen)
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
		c, err := Decode(bytes.NewReader(b), Options{})
		if err == nil {
			c.Result()
		}
	})
}
