package lab

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"golang.org/x/sys/unix"

	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/wire"
)

// TestDelayLinkAccuracy checks what the kernel's TCP sees through the link:
// a connect takes one RTT, TCP_INFO's rtt is the RTT, N exchanges take N
// RTTs, and a capture on the server's side of the link shows the TCP
// handshake's round trip; nothing is dropped, and Stop leaves no
// namespace or device behind. The bounds are those a loaded 2-core
// machine meets: the RTT is a floor, the slack generous above it, but the
// capture's handshake within max(0.3 ms, 3%) (a median of 10).
func TestDelayLinkAccuracy(t *testing.T) {
	slow(t)
	needLink(t)
	for _, rtt := range []time.Duration{10 * time.Millisecond, 44 * time.Millisecond} {
		t.Run(rtt.String(), func(t *testing.T) {
			l := startLink(t, rtt)
			addr := EchoOn(t, l.ServerAddr())

			start := time.Now()
			c := dialThrough(t, l, addr)
			connect := time.Since(start)
			if connect < rtt || connect > rtt+100*time.Millisecond {
				t.Errorf("connect took %v through a %v link", connect, rtt)
			}
			const n = 20
			exchanges := pingPong(t, c, n)
			if exchanges < n*rtt || exchanges > n*rtt+n*10*time.Millisecond {
				t.Errorf("%d exchanges took %v, want about %v", n, exchanges, n*rtt)
			}
			krtt := kernelRTT(t, c)
			if krtt < rtt*9/10 || krtt > rtt+20*time.Millisecond {
				t.Errorf("TCP_INFO rtt %v, want about %v", krtt, rtt)
			}
			c.Close()

			_, port, _ := net.SplitHostPort(addr)
			hs := captureHandshakes(t, l, port, 10, func() {
				for range 10 {
					dialThrough(t, l, addr).Close()
				}
			})
			t.Logf("rtt %v: connect %v, %d exchanges %v, TCP_INFO's rtt %v, the capture's handshakes %v", rtt, connect, n, exchanges, krtt, hs)
			if m := median(hs); absDur(m-rtt) > max(300*time.Microsecond, rtt*3/100) {
				t.Errorf("the capture's handshake round trips (median %v of %v) are not within max(0.3 ms, 3%%) of %v", m, hs, rtt)
			}
			for i, w := range stats(t, l) {
				if w.Dropped != 0 || w.Failed != 0 || w.Err != "" {
					t.Errorf("way %d: %+v", i, w)
				}
			}
			stopLink(t, l)
		})
	}
}

// TestDelayLinkSetRTT: a new RTT holds for the packets sent after it, and
// RTT 0 leaves only the forwarding's own latency.
func TestDelayLinkSetRTT(t *testing.T) {
	slow(t)
	needLink(t)
	l := startLink(t, 0)
	addr := EchoOn(t, l.ServerAddr())
	c := dialThrough(t, l, addr)
	defer c.Close()
	if took := pingPong(t, c, 10); took > 10*20*time.Millisecond {
		t.Errorf("10 exchanges at RTT 0 took %v", took)
	}
	if err := l.SetRTT(context.Background(), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if l.RTT() != 20*time.Millisecond {
		t.Errorf("RTT %v after SetRTT(20ms)", l.RTT())
	}
	if took := pingPong(t, c, 10); took < 200*time.Millisecond || took > 400*time.Millisecond {
		t.Errorf("10 exchanges at RTT 20ms took %v", took)
	}
	stopLink(t, l)
}

// TestDelayLinkPgbench is the example of DelayLink.Start: pgbench, a
// program of its own, opens a connection per transaction (-C) to the lab's
// PostgreSQL through the link while a live capture of tlsbench wire's
// records the server's side of the link; every connection's TCP handshake
// took the link's RTT (the median within max(0.3 ms, 3%)).
func TestDelayLinkPgbench(t *testing.T) {
	slow(t)
	needLink(t)
	exe, err := exec.LookPath("pgbench")
	if err != nil {
		needInstalled(t, fmt.Errorf("pgbench: %w", ErrNotInstalled))
	}
	const rtt = 10 * time.Millisecond
	l := startLink(t, rtt)
	srv := startT(t, "postgres", Options{Tunnel: l.Prefix()})
	raw, err := srv.URL("", false)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal("the lab's URL does not parse")
	}
	pw, _ := u.User.Password()
	script := filepath.Join(t.TempDir(), "select1.sql")
	if err := os.WriteFile(script, []byte("SELECT 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 10
	hs := captureHandshakes(t, l, u.Port(), n, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, exe, "-C", "-n", "-t", strconv.Itoa(n), "-f", script,
			fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable", l.ServerAddr(), u.Port(), u.User.Username(), u.Path[1:]))
		cmd.Env = append(os.Environ(), "PGPASSWORD="+pw) // never on the command line
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := l.Start(cmd); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("pgbench: %v: %s", err, out)
		}
	})
	t.Logf("pgbench's handshakes on the wire: %v", hs)
	if m := median(hs); absDur(m-rtt) > max(300*time.Microsecond, rtt*3/100) {
		t.Errorf("pgbench's handshakes on the wire (median %v of %v) are not within max(0.3 ms, 3%%) of %v", m, hs, rtt)
	}
	stopLink(t, l)
}

// TestDelayLinkCrash: a run killed with its link up leaves no TUN device
// (they close with its forwarder, which dies with it), and the next sweep
// removes the namespace it left.
func TestDelayLinkCrash(t *testing.T) {
	if exe := os.Getenv(crashChild); exe != "" {
		l, err := StartDelayLink(context.Background(), NewWireGuardNumber(), DelayLinkOptions{RTT: time.Millisecond, Exe: exe})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(l.Netns(), l.Device())
		time.Sleep(time.Minute) // until killed
		os.Exit(1)
	}
	slow(t)
	needLink(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestDelayLinkCrash$", "-test.v=false", "-test.short") // short: no TestMain build
	cmd.Env = append(os.Environ(), crashChild+"="+tlsbenchExe)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var netns, dev string
	if _, err := fmt.Fscan(bufio.NewReader(out), &netns, &dev); err != nil || netns == "error" {
		t.Fatalf("the child's link: %q %q %v", netns, dev, err)
	}
	if _, err := net.InterfaceByName(dev); err != nil {
		t.Fatalf("the child's device %s: %v", dev, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	// Its forwarder, which holds the devices, dies with it (a parent-death
	// signal), a moment later.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, err := net.InterfaceByName(dev); err != nil {
			break
		}
	}
	if _, err := net.InterfaceByName(dev); err == nil {
		t.Errorf("device %s outlived its process", dev)
	}
	if _, err := os.Stat(netns); err != nil {
		t.Fatalf("the killed run's namespace %s is not there to sweep: %v", netns, err)
	}
	if _, err := SweepStale(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(netns); err == nil {
		exec.Command("ip", "netns", "del", filepath.Base(netns)).Run()
		t.Errorf("namespace %s left after the sweep", netns)
	}
}

// crashChild marks the process TestDelayLinkCrash kills.
const crashChild = "TLSBENCH_TEST_DELAYLINK_CHILD"

// BenchmarkDelayLinkAccuracy prints what the link adds: at RTT 0, the
// forwarding's own latency per one-byte exchange over loopback's (µs,
// median of 200) and the packets per second it forwards one way (UDP
// datagrams of 64 bytes for a second, with those it dropped); at 1, 10 and
// 44 ms, the median exchange and the capture's median TCP handshake, in
// ms. make bench (say the machine's load beside the figures).
func BenchmarkDelayLinkAccuracy(b *testing.B) {
	if err := CheckDelayLink(); err != nil {
		b.Skip(err)
	}
	b.Run("0", func(b *testing.B) {
		l := startLink(b, 0)
		direct := EchoOn(b, "127.0.0.1")
		linked := EchoOn(b, l.ServerAddr())
		for range b.N {
			var dl, dd []time.Duration
			c1 := dialThrough(b, l, linked)
			var d net.Dialer
			c2, err := d.Dial("tcp", direct)
			if err != nil {
				b.Fatal(err)
			}
			for range 200 {
				dl = append(dl, pingPong(b, c1, 1))
				dd = append(dd, pingPong(b, c2, 1))
			}
			c1.Close()
			c2.Close()
			b.ReportMetric(float64((median(dl) - median(dd)).Microseconds()), "µs-added")
			b.ReportMetric(float64(median(dl).Microseconds()), "µs-exchange-link")
			sent, got, dropped := flood(b, l, time.Second)
			b.ReportMetric(float64(got), "pkts/s-received")
			b.ReportMetric(float64(sent), "pkts/s-sent")
			b.ReportMetric(float64(dropped), "pkts-dropped")
		}
		stopLink(b, l)
	})
	for _, rtt := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 44 * time.Millisecond} {
		b.Run(rtt.String(), func(b *testing.B) {
			l := startLink(b, rtt)
			addr := EchoOn(b, l.ServerAddr())
			_, port, _ := net.SplitHostPort(addr)
			for range b.N {
				c := dialThrough(b, l, addr)
				var ex []time.Duration
				for range 20 {
					ex = append(ex, pingPong(b, c, 1))
				}
				c.Close()
				hs := captureHandshakes(b, l, port, 10, func() {
					for range 10 {
						dialThrough(b, l, addr).Close()
					}
				})
				ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
				b.ReportMetric(ms(median(ex)), "ms-exchange")
				b.ReportMetric(ms(median(hs)), "ms-handshake-wire")
			}
			stopLink(b, l)
		})
	}
}

// startLink starts a link at rtt, stopped when tb ends.
func startLink(tb testing.TB, rtt time.Duration) *DelayLink {
	tb.Helper()
	l, err := StartDelayLink(context.Background(), NewWireGuardNumber(), DelayLinkOptions{RTT: rtt, Exe: tlsbenchExe})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Stop() })
	if got := l.RTT(); got != rtt {
		tb.Errorf("RTT %v, want %v", got, rtt)
	}
	return l
}

// stopLink stops l and checks that it left no namespace or device.
func stopLink(tb testing.TB, l *DelayLink) {
	tb.Helper()
	if err := l.Stop(); err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(l.Netns()); err == nil {
		tb.Errorf("namespace %s left behind", l.Netns())
	}
	if _, err := net.InterfaceByName(l.Device()); err == nil {
		tb.Errorf("device %s left behind", l.Device())
	}
}

// EchoOn listens on host (any port), echoing every connection's bytes
// back, until tb ends; it returns the address. Exported for lab_test's
// tests (sshd, haproxy).
func EchoOn(tb testing.TB, host string) string {
	tb.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// dialThrough connects to addr from the link's client namespace, with the
// kernel's own timing.
func dialThrough(tb testing.TB, l *DelayLink, addr string) *net.TCPConn {
	tb.Helper()
	var c net.Conn
	err := netx.InNetns(l.Netns(), func() (err error) {
		d := net.Dialer{Timeout: 10 * time.Second}
		c, err = d.Dial("tcp", addr)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return c.(*net.TCPConn)
}

// pingPong exchanges n one-byte lines with an echo on c, one after the
// other, and says how long they took.
func pingPong(tb testing.TB, c net.Conn, n int) time.Duration {
	tb.Helper()
	c.SetDeadline(time.Now().Add(time.Minute))
	var b [1]byte
	start := time.Now()
	for range n {
		if _, err := c.Write([]byte{'\n'}); err != nil {
			tb.Fatal(err)
		}
		if _, err := c.Read(b[:]); err != nil {
			tb.Fatal(err)
		}
	}
	return time.Since(start)
}

// kernelRTT is TCP_INFO's smoothed rtt of c.
func kernelRTT(tb testing.TB, c *net.TCPConn) time.Duration {
	tb.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		tb.Fatal(err)
	}
	var rtt time.Duration
	var ierr error
	rc.Control(func(fd uintptr) {
		var info *unix.TCPInfo
		if info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); ierr == nil {
			rtt = time.Duration(info.Rtt) * time.Microsecond
		}
	})
	if ierr != nil {
		tb.Fatal(ierr)
	}
	return rtt
}

// captureHandshakes captures the server's side of the link (its TUN
// device) on port while do runs, as tlsbench wire --capture does, and
// returns each TCP handshake's round trip as the capture shows it: from
// the server's SYN-ACK to the client's ACK, which is the client's SYN to
// SYN-ACK shifted by half a round trip. It wants at least n of them.
func captureHandshakes(tb testing.TB, l *DelayLink, port string, n int, do func()) []time.Duration {
	tb.Helper()
	p, _ := strconv.Atoi(port)
	file := filepath.Join(tb.TempDir(), "link.pcap")
	live, err := wire.StartLive(context.Background(), wire.LiveOptions{Interface: l.Device(), Ports: []int{p}, File: file})
	if err != nil {
		tb.Fatal(err)
	}
	do()
	st, err := live.Stop()
	if err != nil {
		tb.Fatal(err)
	}
	if st.Dropped > 0 {
		tb.Logf("the capture dropped %d packets", st.Dropped)
	}
	hs, err := handshakes(file, l.ServerAddr())
	if err != nil {
		tb.Fatal(err)
	}
	if len(hs) < n {
		tb.Fatalf("the capture shows %d TCP handshakes, want %d", len(hs), n)
	}
	return hs
}

// handshakes reads a capture of bare IP packets (a TUN device's) and
// returns, per connection to server, the time from its SYN-ACK to the
// client's first ACK.
func handshakes(file, server string) ([]time.Duration, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		return nil, err
	}
	srv := net.ParseIP(server)
	synAck := map[string]time.Time{} // by the client's port
	var out []time.Duration
	for {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break // the end, or a last packet cut short
		}
		if err != nil {
			return out, err
		}
		pkt := gopacket.NewPacket(data, r.LinkType(), gopacket.NoCopy)
		ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		tcp, _ := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if ip == nil || tcp == nil {
			continue
		}
		switch {
		case ip.SrcIP.Equal(srv) && tcp.SYN && tcp.ACK:
			synAck[strconv.Itoa(int(tcp.DstPort))] = ci.Timestamp
		case ip.DstIP.Equal(srv) && tcp.ACK && !tcp.SYN:
			k := strconv.Itoa(int(tcp.SrcPort))
			if at, ok := synAck[k]; ok {
				out = append(out, ci.Timestamp.Sub(at))
				delete(synAck, k)
			}
		}
	}
	return out, nil
}

// flood sends 64-byte UDP datagrams from the link's namespace to a socket
// on the server's side for d, as fast as one sender can, and says how
// many it sent and the server received per second, and how many the
// forwarder dropped.
func flood(tb testing.TB, l *DelayLink, d time.Duration) (sent, got, dropped int64) {
	tb.Helper()
	pc, err := net.ListenPacket("udp", net.JoinHostPort(l.ServerAddr(), "0"))
	if err != nil {
		tb.Fatal(err)
	}
	defer pc.Close()
	pc.(*net.UDPConn).SetReadBuffer(8 << 20)
	before := stats(tb, l)[1].Dropped
	done := make(chan int64)
	go func() {
		var n int64
		buf := make([]byte, 2048)
		for {
			pc.SetReadDeadline(time.Now().Add(time.Second))
			if _, _, err := pc.ReadFrom(buf); err != nil {
				done <- n
				return
			}
			n++
		}
	}()
	var c net.Conn
	if err := netx.InNetns(l.Netns(), func() (err error) {
		c, err = net.Dial("udp", pc.LocalAddr().String())
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	msg := make([]byte, 64)
	for end := time.Now().Add(d); time.Now().Before(end); {
		if _, err := c.Write(msg); err == nil {
			sent++
		}
	}
	got = <-done
	secs := d.Seconds()
	return int64(float64(sent) / secs), int64(float64(got) / secs), stats(tb, l)[1].Dropped - before
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// needLink skips t where the machine cannot build a delay link (not
// root, no /dev/net/tun), but in CI.
func needLink(t *testing.T) {
	t.Helper()
	if err := CheckDelayLink(); err != nil && os.Getenv("CI") == "" {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
}

// stats is l's forwarder's counts.
func stats(tb testing.TB, l *DelayLink) [2]netx.WayStats {
	tb.Helper()
	st, err := l.Stats(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return st
}
