package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/tlsbench/tlsbench/internal/drivertest"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
)

// need fails (CI) or skips a test whose binary is missing.
func need(t *testing.T, bin string) {
	t.Helper()
	if _, err := exec.LookPath(bin); err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed: run scripts/install.sh", bin)
	}
	t.Skipf("%s is not installed", bin)
}

// redisPort starts a plain lab Redis for t and returns its port and URL
// (with the password).
func redisPort(t *testing.T) (int, string) {
	t.Helper()
	srv := labtest.Start(t, "redis", lab.Options{PlainOnly: true})
	raw, err := srv.URL("", false)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return p, raw
}

// segments reads a pcap file: the TCP segments in it and their count.
func segments(t *testing.T, path string) []*layers.TCP {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []*layers.TCP
	for {
		data, _, err := r.ReadPacketData()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		p := gopacket.NewPacket(data, r.LinkType(), gopacket.Default)
		tcp, _ := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if tcp == nil {
			t.Fatalf("a packet that is no TCP segment: %v", p)
		}
		out = append(out, tcp)
	}
}

// TestLive captures a real client's connections on loopback with each
// method: every connection once (a packet socket sees loopback packets
// twice), from SYN to FIN, and nothing on other ports.
func TestLive(t *testing.T) {
	need(t, "redis-cli")
	need(t, "tcpdump")
	port, raw := redisPort(t)
	const conns = 3
	for _, method := range []string{MethodTcpdump, MethodAFPacket} {
		t.Run(method, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "c.pcap")
			l, err := StartLive(context.Background(), LiveOptions{Interface: "lo", Ports: []int{port}, File: file, Method: method})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Stop()
			for range conns {
				out, err := exec.Command("redis-cli", "--no-auth-warning", "-u", raw, "PING").CombinedOutput()
				if err != nil || strings.TrimSpace(string(out)) != "PONG" {
					t.Fatalf("redis-cli: %v: %s", err, out)
				}
			}
			// Another port's segments (a refused connection) are not kept.
			if c, err := net.Dial("tcp", "127.0.0.1:1"); err == nil {
				c.Close()
			}
			st, err := l.Stop()
			if err != nil {
				t.Fatal(err)
			}
			segs := segments(t, file)
			var syns, fins int
			for _, s := range segs {
				if int(s.SrcPort) != port && int(s.DstPort) != port {
					t.Errorf("a segment %d -> %d, not of port %d", s.SrcPort, s.DstPort, port)
				}
				if s.SYN && !s.ACK {
					syns++
				}
				if s.FIN {
					fins++
				}
			}
			if st.Method != method || st.Packets != int64(len(segs)) || st.Dropped < 0 || st.SnapLen != DefaultSnapLen {
				t.Errorf("stats %+v, the file holds %d packets", st, len(segs))
			}
			// The accounting, not a zero drop count (a loaded machine's
			// kernel may drop): what the file misses is what the kernel
			// said it dropped, and the decode leaves out, counted, the
			// connections that miss packets.
			c, err := ReadFile(context.Background(), file, Options{Ports: []int{port}})
			if err != nil {
				t.Fatal(err)
			}
			left := c.Info.Unseen["lost"] + c.Info.Unseen["began-before-capture"] + c.Info.Unseen["ended-after-capture"]
			switch {
			case st.Dropped == 0 && (syns != conns || fins < conns || c.Info.Conns != conns || left != 0):
				t.Errorf("nothing dropped, and %d SYNs, %d FINs, %d connections decoded (%v unseen) for %d connections", syns, fins, c.Info.Conns, c.Info.Unseen, conns)
			case st.Dropped > 0 && (syns > conns || c.Info.Conns > conns):
				t.Errorf("%d dropped, and %d SYNs, %d connections decoded for %d connections", st.Dropped, syns, c.Info.Conns, conns)
			case st.Dropped > 0:
				t.Logf("the kernel dropped %d packets: %d SYNs, %d connections decoded, unseen %v", st.Dropped, syns, c.Info.Conns, c.Info.Unseen)
			}
		})
	}
}

// TestLiveBeside captures connections on one port while a bulk transfer
// fills loopback on another, as a run beside other work does: the packet
// socket's filter keeps the transfer out in the kernel, and the file holds
// the port's segments alone, as many as counted. The accounting, not a
// zero drop count: with nothing dropped, every connection decodes whole.
func TestLiveBeside(t *testing.T) {
	labtest.Slow(t)
	if os.Geteuid() != 0 {
		t.Skip("a packet socket needs root")
	}
	const conns = 400
	drop := func(c net.Conn) { io.Copy(io.Discard, c) }
	addr, bulk := drivertest.Listen(t, drop), drivertest.Listen(t, drop)
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	file := filepath.Join(t.TempDir(), "c.pcap")
	l, err := StartLive(context.Background(), LiveOptions{Interface: "lo", Ports: []int{port}, File: file, Method: MethodAFPacket})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	stop, flowed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(flowed)
		c, err := net.Dial("tcp", bulk)
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 1<<20)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("hello"))
		c.Close()
	}
	close(stop)
	<-flowed
	st, err := l.Stop()
	if err != nil {
		t.Fatal(err)
	}
	segs := segments(t, file)
	for _, s := range segs {
		if int(s.SrcPort) != port && int(s.DstPort) != port {
			t.Fatalf("a segment %d -> %d, not of port %d", s.SrcPort, s.DstPort, port)
		}
	}
	if st.Packets != int64(len(segs)) {
		t.Errorf("counted %d packets, the file holds %d", st.Packets, len(segs))
	}
	c, err := ReadFile(context.Background(), file, Options{Ports: []int{port}})
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case st.Dropped == 0 && c.Info.Conns != conns:
		t.Errorf("nothing dropped, and %d connections decoded of %d (unseen %v)", c.Info.Conns, conns, c.Info.Unseen)
	case st.Dropped > 0:
		t.Logf("the kernel dropped %d packets: %d connections decoded of %d, unseen %v", st.Dropped, c.Info.Conns, conns, c.Info.Unseen)
	}
}

// TestLiveCancel stops a capture by its context, as Ctrl-C does: the
// file keeps what was captured and the capture process is gone.
func TestLiveCancel(t *testing.T) {
	need(t, "redis-cli")
	need(t, "tcpdump")
	port, raw := redisPort(t)
	for _, method := range []string{MethodTcpdump, MethodAFPacket} {
		t.Run(method, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "c.pcap")
			ctx, cancel := context.WithCancel(context.Background())
			l, err := StartLive(ctx, LiveOptions{Interface: "lo", Ports: []int{port}, File: file, Method: method})
			if err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("redis-cli", "--no-auth-warning", "-u", raw, "PING").CombinedOutput(); err != nil {
				t.Fatalf("redis-cli: %v: %s", err, out)
			}
			time.Sleep(100 * time.Millisecond)
			cancel()
			st, err := l.Stop()
			if err != nil {
				t.Fatal(err)
			}
			if n := len(segments(t, file)); n == 0 || int64(n) != st.Packets {
				t.Errorf("%d packets in the file, %d counted", n, st.Packets)
			}
			if ps := tcpdumps(file); len(ps) > 0 {
				t.Errorf("tcpdump still runs: %v", ps)
			}
		})
	}
}

// tcpdumps lists the processes whose command line mentions file.
func tcpdumps(file string) []string {
	var out []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if strings.Contains(string(b), file) {
			out = append(out, d.Name())
		}
	}
	return out
}

// TestLivePermission runs a capture without CAP_NET_RAW (root with the
// capability dropped from its bounding set, as setpriv does): one error
// that names the right and the fix, with each method.
func TestLivePermission(t *testing.T) {
	if m := os.Getenv("TLSBENCH_LIVE_CHILD"); m != "" {
		_, err := StartLive(context.Background(), LiveOptions{Interface: "lo", Ports: []int{5432}, File: filepath.Join(os.TempDir(), "never.pcap"), Method: m})
		var pe *PermissionError
		fmt.Printf("permission=%v\n%v\n", errors.As(err, &pe), err)
		os.Exit(0)
	}
	need(t, "setpriv")
	need(t, "tcpdump")
	if os.Geteuid() != 0 {
		t.Skip("needs root to drop CAP_NET_RAW from")
	}
	for _, method := range []string{MethodTcpdump, MethodAFPacket} {
		t.Run(method, func(t *testing.T) {
			cmd := exec.Command("setpriv", "--bounding-set=-net_raw,-net_admin", "--inh-caps=-net_raw,-net_admin",
				os.Args[0], "-test.run=^TestLivePermission$")
			cmd.Env = append(os.Environ(), "TLSBENCH_LIVE_CHILD="+method)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != 2 || lines[0] != "permission=true" {
				t.Fatalf("want a PermissionError, got %q", out)
			}
			for _, want := range []string{"capturing on lo needs root or CAP_NET_RAW", "setcap cap_net_raw,cap_net_admin=eip $(which tcpdump)"} {
				if !strings.Contains(lines[1], want) {
					t.Errorf("%q does not say %q", lines[1], want)
				}
			}
		})
	}
}

func TestLiveBadInput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.pcap")
	tests := []struct {
		name string
		o    LiveOptions
		want string
	}{
		{"no interface", LiveOptions{Ports: []int{1}, File: file}, "no interface to capture on"},
		{"unknown interface", LiveOptions{Interface: "nosuch0", Ports: []int{1}, File: file}, `no interface "nosuch0"`},
		{"no port", LiveOptions{Interface: "lo", File: file}, "no TCP port"},
		{"port out of range", LiveOptions{Interface: "lo", Ports: []int{70000}, File: file}, "port 70000 is out of range"},
		{"unknown method", LiveOptions{Interface: "lo", Ports: []int{1}, File: file, Method: "pcap"}, `unknown capture method "pcap"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := StartLive(context.Background(), tt.o)
			if err == nil {
				l.Stop()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%q, want one line saying %q", err, tt.want)
			}
		})
	}
}
