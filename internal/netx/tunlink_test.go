package netx

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// packetPair is a stand-in for a TUN device: a SOCK_SEQPACKET socket pair,
// which keeps each write one packet. dev is the forwarder's end, peer the
// test's (the kernel's side of a device).
func packetPair(t *testing.T) (dev, peer *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	dev, peer = os.NewFile(uintptr(fds[0]), "dev"), os.NewFile(uintptr(fds[1]), "peer")
	t.Cleanup(func() { peer.Close() })
	return dev, peer
}

// TestForwarder: each way delivers every packet RTT/2 after it was read,
// whole and in order, a new RTT holds for the packets after it, and a full
// queue drops what comes next and counts it.
func TestForwarder(t *testing.T) {
	a, pa := packetPair(t)
	b, pb := packetPair(t)
	const rtt = 20 * time.Millisecond
	f, err := Forward(a, b, rtt)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	send := func(to *os.File, msgs ...string) time.Time {
		at := time.Now()
		for _, m := range msgs {
			if _, err := to.Write([]byte(m)); err != nil {
				t.Fatal(err)
			}
		}
		return at
	}
	recv := func(from *os.File, n int) ([]string, time.Time) {
		var out []string
		buf := make([]byte, 1<<16)
		for range n {
			k, err := from.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(buf[:k]))
		}
		return out, time.Now()
	}
	for _, tt := range []struct {
		name     string
		from, to *os.File
	}{{"a to b", pa, pb}, {"b to a", pb, pa}} {
		sent := send(tt.from, "one", "two", strings.Repeat("x", 1500))
		got, at := recv(tt.to, 3)
		if got[0] != "one" || got[1] != "two" || len(got[2]) != 1500 {
			t.Errorf("%s: got %q", tt.name, got[:2])
		}
		if d := at.Sub(sent); d < rtt/2 || d > rtt/2+200*time.Millisecond {
			t.Errorf("%s: delivered after %v, want RTT/2 (%v)", tt.name, d, rtt/2)
		}
	}
	f.SetRTT(0)
	sent := send(pa, "now")
	if _, at := recv(pb, 1); at.Sub(sent) > 100*time.Millisecond {
		t.Errorf("at RTT 0 delivered after %v", at.Sub(sent))
	}
	// A packet read before a shorter RTT is not overtaken.
	f.SetRTT(400 * time.Millisecond)
	send(pa, "first")
	time.Sleep(20 * time.Millisecond)
	f.SetRTT(0)
	send(pa, "second")
	if got, _ := recv(pb, 2); got[0] != "first" || got[1] != "second" {
		t.Errorf("order after SetRTT: %q", got)
	}
	// Full: due in 5 s, so all stay queued.
	f.SetRTT(10 * time.Second)
	msgs := make([]string, ForwardQueue+100)
	for i := range msgs {
		msgs[i] = strconv.Itoa(i)
	}
	send(pa, msgs...)
	deadline := time.Now().Add(30 * time.Second)
	for f.Stats()[0].Dropped < 100 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st := f.Stats()
	if st[0].Dropped != 100 || st[0].Forwarded != 3+1+2 || st[1].Forwarded != 3 || st[0].Err != "" {
		t.Errorf("stats %+v, want 100 dropped, 6 and 3 forwarded", st)
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}
}

// TestServeForward: the forwarder's process answers each line, refuses
// what it cannot do, and stops at the end of its input.
func TestServeForward(t *testing.T) {
	a, _ := packetPair(t)
	b, _ := packetPair(t)
	in, w := io.Pipe()
	var out bytes.Buffer // read once ServeForward has returned
	done := make(chan error, 1)
	go func() { done <- ServeForward(context.Background(), a, b, in, &out) }()
	for _, line := range []string{"rtt 44000000", "rtt -1", "rtt 44ms", "netem", "stats"} {
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || lines[0] != "ok" || !strings.HasPrefix(lines[1], "error rtt \"-1\"") ||
		!strings.HasPrefix(lines[2], "error rtt \"44ms\"") || !strings.HasPrefix(lines[3], "error unknown command \"netem\"") {
		t.Fatalf("answers %q", lines)
	}
	var st [2]WayStats
	if err := json.NewDecoder(bufio.NewReader(strings.NewReader(lines[4]))).Decode(&st); err != nil {
		t.Errorf("stats %q: %v", lines[4], err)
	}
}
