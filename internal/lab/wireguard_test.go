package lab

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestWireGuard builds the tunnel, talks through it from the client's
// namespace to a listener on the server's tunnel address, and checks that
// Stop leaves no namespace or link behind.
func TestWireGuard(t *testing.T) {
	if err := CheckWireGuard(); err != nil {
		needInstalled(t, err)
	}
	w, err := StartWireGuard(context.Background(), NewWireGuardNumber())
	needInstalled(t, err)
	defer w.Stop()
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
	out, err := exec.Command("ip", "netns", "exec", ns, "bash", "-c", script).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ping" {
		t.Fatalf("through the tunnel: %q, %v", out, err)
	}
	if got := <-from; got != w.ClientAddr() {
		t.Errorf("the server saw %s, want the client's tunnel address %s", got, w.ClientAddr())
	}
	// The server's address is not reachable from the namespace but
	// through the tunnel: the namespace has no route to loopback's.
	if out, err := exec.Command("ip", "netns", "exec", ns, "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/"+port).CombinedOutput(); err == nil {
		t.Errorf("the namespace reached the root namespace's loopback: %s", out)
	}
	if len(w.Setup()) != 3 {
		t.Errorf("setup %+v", w.Setup())
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.Netns()); err == nil {
		t.Errorf("namespace %s left behind", w.Netns())
	}
	if _, err := net.InterfaceByName(w.veth); err == nil {
		t.Errorf("link %s left behind", w.veth)
	}
	if _, err := net.InterfaceByName(w.dev); err == nil {
		t.Errorf("device %s left behind", w.dev)
	}
}
