package lab

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/curve25519"

	"github.com/tlsbench/tlsbench/internal/result"
)

// WireGuard is a VPN between the root network namespace (the server's side)
// and a namespace of its own (the client's side), joined by a veth pair:
// wireguard-go at both ends (user space: these machines have no WireGuard
// kernel module), the UDP between them over the veth pair. A client whose
// sockets are made in the namespace (see Netns) reaches the server's
// tunnel address only through the tunnel.
//
// The server stays in the root namespace and listens on the tunnel address
// too (Options.Tunnel), so the lab's own connections to it are unchanged;
// the client's side is the namespace, entered only to make sockets.
type WireGuard struct {
	dir   string
	netns string // namespace name
	n     int    // the run's number: names and subnets
	// veth is the root end of the veth pair; dev the server's device.
	veth, dev string
	server    *process // wireguard-go in the root namespace
	client    *process // wireguard-go in the namespace
	setup     []result.SetupPhase
	version   string

	stopOnce sync.Once
	stopErr  error
}

// wgNetnsFile names the namespace in a WireGuard lab dir, for the sweep.
const wgNetnsFile = "netns"

// CheckWireGuard says, in one line, what this machine lacks for a
// WireGuard path: root, network namespaces, /dev/net/tun, wireguard-go,
// wg or ip.
func CheckWireGuard() error {
	if os.Geteuid() != 0 {
		return errors.New("--via wireguard needs root: it makes a network namespace, a veth pair and tun devices")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("--via wireguard needs /dev/net/tun for wireguard-go (%v): load the tun module or give the container the device", err)
	}
	for _, tool := range []struct{ exe, pkg string }{{"ip", "iproute2"}, {"wireguard-go", "wireguard-go"}, {"wg", "wireguard-tools"}} {
		if _, err := exec.LookPath(tool.exe); err != nil {
			return fmt.Errorf("--via wireguard needs %s: apt-get install %s, or run scripts/install.sh: %w", tool.exe, tool.pkg, ErrNotInstalled)
		}
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		return errors.New("--via wireguard needs network namespaces, which this kernel does not offer")
	}
	return nil
}

// WireGuardNet is the tunnel's addressing for run n: the server's tunnel
// address (in the root namespace) and the client's.
func WireGuardNet(n int) (server, client string) {
	return fmt.Sprintf("10.213.%d.2", n), fmt.Sprintf("10.213.%d.1", n)
}

// wgRuns numbers the WireGuard tunnels of this process.
var wgRuns struct {
	sync.Mutex
	next int
}

// NewWireGuardNumber picks the number of a new tunnel: from the pid, so
// that tunnels of processes running at once differ.
func NewWireGuardNumber() int {
	wgRuns.Lock()
	defer wgRuns.Unlock()
	wgRuns.next++
	return (os.Getpid()*7 + wgRuns.next) % 250
}

// StartWireGuard builds the namespace, the veth pair and the two
// wireguard-go ends of tunnel n, timing each step once.
func StartWireGuard(ctx context.Context, n int) (_ *WireGuard, err error) {
	if err := CheckWireGuard(); err != nil {
		return nil, err
	}
	dir, err := makeLabDir("tlsbench-wg-")
	if err != nil {
		return nil, err
	}
	w := &WireGuard{dir: dir, n: n, netns: fmt.Sprintf("tlsbench-wg-%d-%d", os.Getpid(), n),
		veth: fmt.Sprintf("tbwgv%d", n), dev: fmt.Sprintf("tbwgs%d", n)}
	defer func() {
		if err != nil {
			w.Stop()
		}
	}()
	w.version = wireguardGoVersion()
	if err := os.WriteFile(filepath.Join(dir, wgNetnsFile), []byte(w.netns), 0o600); err != nil {
		return nil, err
	}
	peer, cdev := fmt.Sprintf("tbwgp%d", n), fmt.Sprintf("tbwgc%d", n)
	srvAddr, cliAddr := WireGuardNet(n)
	outerS, outerC := fmt.Sprintf("10.214.%d.1", n), fmt.Sprintf("10.214.%d.2", n)
	step := func(name string, cmds ...[]string) error {
		start := time.Now()
		for _, c := range cmds {
			if out, err := exec.CommandContext(ctx, c[0], c[1:]...).CombinedOutput(); err != nil {
				return fmt.Errorf("%s: %s: %v: %s", name, strings.Join(c, " "), err, strings.TrimSpace(string(out)))
			}
		}
		w.setup = append(w.setup, result.SetupPhase{Name: name, Duration: time.Since(start)})
		return nil
	}
	inNs := func(c ...string) []string { return append([]string{"ip", "netns", "exec", w.netns}, c...) }
	err = step("netns+veth",
		[]string{"ip", "netns", "add", w.netns},
		[]string{"ip", "link", "add", w.veth, "type", "veth", "peer", "name", peer},
		[]string{"ip", "link", "set", peer, "netns", w.netns},
		[]string{"ip", "addr", "add", outerS + "/30", "dev", w.veth},
		[]string{"ip", "link", "set", w.veth, "up"},
		[]string{"ip", "-n", w.netns, "addr", "add", outerC + "/30", "dev", peer},
		[]string{"ip", "-n", w.netns, "link", "set", peer, "up"},
		[]string{"ip", "-n", w.netns, "link", "set", "lo", "up"})
	if err != nil {
		return nil, err
	}
	// Keys: Curve25519, as wg genkey makes them.
	sPriv, sPub, err := wgKeyPair()
	if err != nil {
		return nil, err
	}
	cPriv, cPub, err := wgKeyPair()
	if err != nil {
		return nil, err
	}
	for name, key := range map[string]string{"server.key": sPriv, "client.key": cPriv} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(key+"\n"), 0o600); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	if w.server, err = w.startDevice("wireguard-go (server side)", []string{"wireguard-go", "-f", w.dev}, "server.log"); err != nil {
		return nil, err
	}
	if w.client, err = w.startDevice("wireguard-go (client side)", inNs("wireguard-go", "-f", cdev), "client.log"); err != nil {
		return nil, err
	}
	for _, d := range []struct {
		dev string
		ns  bool
	}{{w.dev, false}, {cdev, true}} {
		if err := w.waitDevice(ctx, d.dev, d.ns); err != nil {
			return nil, err
		}
	}
	w.setup = append(w.setup, result.SetupPhase{Name: "wireguard-go", Duration: time.Since(start)})
	const sPort, cPort = "51820", "51821"
	err = step("wg set+addresses",
		[]string{"wg", "set", w.dev, "private-key", filepath.Join(dir, "server.key"), "listen-port", sPort,
			"peer", cPub, "allowed-ips", cliAddr + "/32", "endpoint", outerC + ":" + cPort},
		[]string{"ip", "addr", "add", srvAddr + "/24", "dev", w.dev},
		[]string{"ip", "link", "set", w.dev, "up"},
		inNs("wg", "set", cdev, "private-key", filepath.Join(dir, "client.key"), "listen-port", cPort,
			"peer", sPub, "allowed-ips", srvAddr+"/32", "endpoint", outerS+":"+sPort),
		[]string{"ip", "-n", w.netns, "addr", "add", cliAddr + "/24", "dev", cdev},
		[]string{"ip", "-n", w.netns, "link", "set", cdev, "up"})
	if err != nil {
		return nil, err
	}
	return w, nil
}

func (w *WireGuard) startDevice(name string, argv []string, log string) (*process, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = w.dir
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LOG_LEVEL=error"}
	return startProcess(name, cmd, filepath.Join(w.dir, log))
}

// waitDevice waits for wireguard-go to have made its device.
func (w *WireGuard) waitDevice(ctx context.Context, dev string, inNs bool) error {
	p := w.server
	args := []string{"link", "show", dev}
	if inNs {
		p, args = w.client, append([]string{"-n", w.netns}, args...)
	}
	return p.waitReady(ctx, func() error { return exec.Command("ip", args...).Run() })
}

// wgKeyPair makes a WireGuard key pair, base64 as wg writes them.
func wgKeyPair() (priv, pub string, err error) {
	var k [32]byte
	rand.Read(k[:])
	k[0] &= 248
	k[31] = k[31]&127 | 64
	p, err := curve25519.X25519(k[:], curve25519.Basepoint)
	if err != nil {
		return "", "", err
	}
	return base64.StdEncoding.EncodeToString(k[:]), base64.StdEncoding.EncodeToString(p), nil
}

func wireguardGoVersion() string {
	out, _ := exec.Command("wireguard-go", "--version").CombinedOutput()
	f := strings.Fields(string(out))
	for i, s := range f {
		if strings.HasPrefix(s, "v0.") || strings.HasPrefix(s, "0.") {
			return strings.TrimPrefix(f[i], "v")
		}
	}
	return "unknown"
}

// Netns is the client side's namespace, as a path for netx.Dialer.Netns.
func (w *WireGuard) Netns() string { return filepath.Join("/run/netns", w.netns) }

// ServerAddr is the server's tunnel address.
func (w *WireGuard) ServerAddr() string { s, _ := WireGuardNet(w.n); return s }

// ClientAddr is the client's tunnel address, which the server sees.
func (w *WireGuard) ClientAddr() string { _, c := WireGuardNet(w.n); return c }

// Setup is how long each step of building the tunnel took, once.
func (w *WireGuard) Setup() []result.SetupPhase { return w.setup }

// Version is wireguard-go's version.
func (w *WireGuard) Version() string { return w.version }

// ServerCPU is the server side's wireguard-go; ClientCPU the client's.
func (w *WireGuard) ServerCPU() (time.Duration, error) { return w.server.cpu() }
func (w *WireGuard) ClientCPU() (time.Duration, error) { return w.client.cpu() }

// Alive reports why an end is gone, if one is.
func (w *WireGuard) Alive() error {
	if err := w.server.alive(); err != nil {
		return err
	}
	return w.client.alive()
}

// Stop stops both ends and removes the namespace (and with it the veth
// pair) and the directory with the keys; safe to call more than once.
func (w *WireGuard) Stop() error {
	w.stopOnce.Do(func() {
		var errs []error
		for _, p := range []*process{w.client, w.server} {
			if p != nil {
				errs = append(errs, p.stop(0))
			}
		}
		errs = append(errs, removeNetns(w.dir), os.RemoveAll(w.dir))
		// The root end goes with the namespace's; if the namespace was
		// never made, it may be left.
		if _, err := net.InterfaceByName(w.veth); err == nil {
			errs = append(errs, exec.Command("ip", "link", "del", w.veth).Run())
		}
		w.stopErr = errors.Join(errs...)
	})
	return w.stopErr
}

// removeNetns deletes the network namespace a lab dir names, if it does
// and it exists.
func removeNetns(dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, wgNetnsFile))
	if err != nil {
		return nil // no namespace of its own
	}
	name := strings.TrimSpace(string(raw))
	if !strings.HasPrefix(name, "tlsbench-wg-") || strings.ContainsAny(name, "/ ") {
		return fmt.Errorf("lab dir %s names namespace %q, not one of tlsbench's", dir, name)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", name)); err != nil {
		return nil
	}
	if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns del %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Info describes the tunnel for the result.
func (w *WireGuard) Info() result.Server {
	return result.Server{Software: "wireguard-go", Version: w.version,
		Endpoints: map[string]string{"": net.JoinHostPort(w.ServerAddr(), "0")},
		Settings:  map[string]string{"netns": w.netns, "server": w.ServerAddr(), "client": w.ClientAddr(), "mtu": "1420 (wireguard-go's default)"}}
}

// Prefix is the tunnel's subnet, for Options.Tunnel.
func (w *WireGuard) Prefix() netip.Prefix {
	return netip.MustParsePrefix(w.ServerAddr() + "/24").Masked()
}
