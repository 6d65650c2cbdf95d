package lab_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// TestSSHDTunnel starts sshd, opens a tunnel with each cipher and sends a
// byte through a channel to a loopback echo server: a channel open is one
// round trip on the SSH connection.
func TestSSHDTunnel(t *testing.T) {
	labtest.Slow(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := lab.StartSSHD(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	echo := lab.EchoOn(t, "127.0.0.1")
	for _, cipher := range plan.SSHCiphers {
		t.Run(cipher, func(t *testing.T) {
			tun, err := netx.DialSSH(ctx, &netx.Dialer{}, s.Config(cipher))
			if err != nil {
				t.Fatal(err)
			}
			defer tun.Close()
			if got := tun.Algorithms().Write.Cipher; got != cipher {
				t.Errorf("negotiated cipher %q, want %q", got, cipher)
			}
			var names []string
			for _, p := range tun.Setup().Phases {
				names = append(names, p.Name)
			}
			if want := []string{netx.PhaseTCP, netx.PhaseSSHKex, netx.PhaseSSHAuth}; !equal(names, want) {
				t.Errorf("setup phases %v, want %v", names, want)
			}
			d := &netx.Dialer{Via: tun}
			for i := range 3 {
				// On a quiet SSH connection the turns are this open's.
				// The fresh connection is quiet; after a channel's close
				// it may not become so (when the client's close crosses
				// the server's, the client's is never answered), and
				// then the open shares that turn: count only when quiet.
				for deadline := time.Now().Add(200 * time.Millisecond); !tun.Quiet() && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
				}
				quiet, before := tun.Quiet(), tun.Turns()
				if i == 0 && !quiet {
					t.Fatalf("a fresh SSH connection has a write in flight")
				}
				c, err := d.Dial(ctx, echo)
				if err != nil {
					t.Fatal(err)
				}
				if n := tun.Turns() - before; quiet && n != 1 {
					t.Errorf("connection %d: the channel open took %d turns on the quiet SSH connection, want 1", i, n)
				}
				c.Mark("echo")
				if _, err := c.Write([]byte{42}); err != nil {
					t.Fatal(err)
				}
				b := make([]byte, 1)
				if _, err := io.ReadFull(c, b); err != nil || b[0] != 42 {
					t.Fatalf("echo: %v %v", b, err)
				}
				c.Close()
				tr := c.Finish()
				if p := tr.Phases[0]; p.Name != netx.PhaseTunnel || p.RoundTrips != 1 {
					t.Errorf("connection %d: opening %s took %d round trips, want tunnel 1", i, p.Name, p.RoundTrips)
				}
				if p, _ := tr.Phase("echo"); p.RoundTrips != 1 {
					t.Errorf("echo took %d round trips, want 1", p.RoundTrips)
				}
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
