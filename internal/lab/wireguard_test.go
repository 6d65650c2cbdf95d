package lab

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestWireGuard builds the tunnel, talks through it from the client's
// namespace to a listener on the server's tunnel address, and checks that
// Stop leaves no namespace or link behind.
func TestWireGuard(t *testing.T) {
	slow(t)
	if err := CheckWireGuard(); err != nil {
		needInstalled(t, err)
	}
	w, err := StartWireGuard(context.Background(), NewWireGuardNumber())
	needInstalled(t, err)
	defer w.Stop()
	throughTunnel(t, w)
	// The server's address is not reachable from the namespace but
	// through the tunnel: the namespace has no route to loopback's.
	ns := strings.TrimPrefix(w.Netns(), "/run/netns/")
	if out, err := exec.Command("ip", "netns", "exec", ns, "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/22").CombinedOutput(); err == nil {
		t.Errorf("the namespace reached the root namespace's loopback: %s", out)
	}
	if len(w.Setup()) != 3 {
		t.Errorf("setup %+v", w.Setup())
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	wireGuardGone(t, w)
}

// TestWireGuardConcurrent builds two tunnels at once, as two runs with
// --via wireguard do: both come up, on UDP ports of their own, and each
// carries its own connections.
func TestWireGuardConcurrent(t *testing.T) {
	slow(t)
	if err := CheckWireGuard(); err != nil {
		needInstalled(t, err)
	}
	var wg sync.WaitGroup
	tunnels := make([]*WireGuard, 2)
	errs := make([]error, 2)
	for i := range tunnels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tunnels[i], errs[i] = StartWireGuard(context.Background(), NewWireGuardNumber())
		}()
	}
	wg.Wait()
	for i, w := range tunnels {
		if w != nil {
			defer w.Stop()
		}
		if errs[i] != nil {
			t.Fatalf("tunnel %d: %v", i+1, errs[i])
		}
	}
	a, b := tunnels[0], tunnels[1]
	if a.ports[0] == b.ports[0] || a.ServerAddr() == b.ServerAddr() || a.netns == b.netns {
		t.Errorf("the tunnels share a port or a name: %+v, %+v", a.Info().Settings, b.Info().Settings)
	}
	for _, w := range tunnels {
		throughTunnel(t, w)
	}
	for _, w := range tunnels {
		if err := w.Stop(); err != nil {
			t.Error(err)
		}
		wireGuardGone(t, w)
	}
}

// TestWireGuardTakesFreeNumber: a tunnel whose number a leftover veth pair
// holds takes the next one.
func TestWireGuardTakesFreeNumber(t *testing.T) {
	slow(t)
	if err := CheckWireGuard(); err != nil {
		needInstalled(t, err)
	}
	n := NewWireGuardNumber()
	_, veth, peer, _, _ := wgNames(os.Getpid(), n)
	if out, err := exec.Command("ip", "link", "add", veth, "type", "veth", "peer", "name", peer).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	defer exec.Command("ip", "link", "del", veth).Run()
	w, err := StartWireGuard(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if w.n != (n+1)%wgNumbers {
		t.Errorf("tunnel %d, want %d", w.n, (n+1)%wgNumbers)
	}
	throughTunnel(t, w)
	w.Stop()
	if _, err := net.InterfaceByName(veth); err != nil {
		t.Errorf("Stop removed the veth pair it did not make: %v", err)
	}
}

// TestSweepWireGuard: the namespace and the veth pair of a tunnel whose
// run was killed are both gone after one sweep, though the namespace
// outlives its name (held here by a process in it that is no server of
// the lab, as the kernel holds it for a killed run's sockets).
func TestSweepWireGuard(t *testing.T) {
	slow(t)
	if err := CheckWireGuard(); err != nil {
		needInstalled(t, err)
	}
	dead := deadOwner(t)
	dir := labDirOf(t, "tlsbench-wg-", dead)
	netns, veth, peer, _, _ := wgNames(dead.pid, NewWireGuardNumber())
	// As makeLinks leaves them.
	mustWrite(t, filepath.Join(dir, wgNetnsFile), netns)
	for _, c := range [][]string{
		{"ip", "netns", "add", netns},
		{"ip", "link", "add", veth, "type", "veth", "peer", "name", peer, "netns", netns},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	mustWrite(t, filepath.Join(dir, wgVethFile), veth)
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", veth).Run()
		exec.Command("ip", "netns", "del", netns).Run()
	})
	holder := exec.Command("ip", "netns", "exec", netns, "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })

	me, err := self()
	if err != nil {
		t.Fatal(err)
	}
	if r := sweep(labTempDir(), me); r.dirs < 1 || len(r.errs) > 0 {
		t.Fatalf("sweep: %+v", r)
	}
	if exists(dir) {
		t.Errorf("lab dir %s left", dir)
	}
	if exists(filepath.Join("/run/netns", netns)) {
		t.Errorf("namespace %s left", netns)
	}
	if _, err := net.InterfaceByName(veth); err == nil {
		t.Errorf("veth %s left", veth)
	}
}

// throughTunnel talks to a listener on the server's tunnel address from
// the client's namespace, and checks the server sees the client's tunnel
// address.
func throughTunnel(t *testing.T, w *WireGuard) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(w.ServerAddr(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	from := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		from <- c.RemoteAddr().(*net.TCPAddr).IP.String()
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Write([]byte(line))
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	script := "exec 3<>/dev/tcp/" + w.ServerAddr() + "/" + port + "; echo ping >&3; read -r l <&3; echo $l"
	ns := strings.TrimPrefix(w.Netns(), "/run/netns/")
	out, err := exec.Command("ip", "netns", "exec", ns, "timeout", "20", "bash", "-c", script).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ping" {
		t.Fatalf("through tunnel %s: %q, %v", w.ServerAddr(), out, err)
	}
	if got := <-from; got != w.ClientAddr() {
		t.Errorf("the server saw %s, want the client's tunnel address %s", got, w.ClientAddr())
	}
}

// wireGuardGone checks that a stopped tunnel left no namespace or link.
func wireGuardGone(t *testing.T, w *WireGuard) {
	t.Helper()
	if _, err := os.Stat(w.Netns()); err == nil {
		t.Errorf("namespace %s left behind", w.Netns())
	}
	for _, l := range []string{w.veth, w.dev} {
		if _, err := net.InterfaceByName(l); err == nil {
			t.Errorf("link %s left behind", l)
		}
	}
}
