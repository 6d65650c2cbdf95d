package lab

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	// veth is the root end of the veth pair, peer the namespace's; dev
	// the server's device, cdev the client's.
	veth, peer, dev, cdev string
	// ports are the UDP ports the server's and the client's ends listen
	// on, picked by the kernel.
	ports   [2]string
	server  *process // wireguard-go in the root namespace
	client  *process // wireguard-go in the namespace
	setup   []result.SetupPhase
	version string

	stopOnce sync.Once
	stopErr  error
}

// wgNetnsFile and wgVethFile name the namespace and the root end of the
// veth pair in a WireGuard lab dir, for the sweep: it removes both at once
// (a namespace can outlive its name, and its veth pair with it, while the
// kernel holds it, e.g. for the sockets a killed run made there).
const (
	wgNetnsFile = "netns"
	wgVethFile  = "veth"
)

// wgNames are the names of tunnel n's namespace (of process pid) and
// links: the veth pair's root end and its peer, the server's device and
// the client's.
func wgNames(pid, n int) (netns, veth, peer, sdev, cdev string) {
	return fmt.Sprintf("tlsbench-wg-%d-%d", pid, n), fmt.Sprintf("tbwgv%d", n), fmt.Sprintf("tbwgp%d", n),
		fmt.Sprintf("tbwgs%d", n), fmt.Sprintf("tbwgc%d", n)
}

// wgNumbers is how many tunnels (numbers, subnets 10.213.N.0/24) there are.
const wgNumbers = 250

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
// that tunnels of processes running at once start apart.
func NewWireGuardNumber() int {
	wgRuns.Lock()
	defer wgRuns.Unlock()
	wgRuns.next++
	return (os.Getpid()*7 + wgRuns.next) % wgNumbers
}

// StartWireGuard builds the namespace, the veth pair and the two
// wireguard-go ends of a tunnel, timing each step once. The tunnel takes
// the first number from n whose veth pair is free (another run's, or a
// leftover, holds the others), and UDP ports the kernel picks, so that
// tunnels of runs at once never collide.
func StartWireGuard(ctx context.Context, n int) (_ *WireGuard, err error) {
	if err := CheckWireGuard(); err != nil {
		return nil, err
	}
	dir, err := makeLabDir("tlsbench-wg-")
	if err != nil {
		return nil, err
	}
	w := &WireGuard{dir: dir, version: wireguardGoVersion()}
	defer func() {
		if err != nil {
			w.Stop()
		}
	}()
	var k wgKeys
	for _, st := range []struct {
		name string
		do   func() error
	}{
		{"netns+veth", func() error { return w.makeLinks(ctx, n) }},
		{"wireguard-go", func() error { return w.startDevices(ctx, &k) }},
		{"wg set+addresses", func() error { return w.configure(ctx, k) }},
	} {
		start := time.Now()
		if err := st.do(); err != nil {
			return nil, fmt.Errorf("%s: %w", st.name, err)
		}
		w.setup = append(w.setup, result.SetupPhase{Name: st.name, Duration: time.Since(start)})
	}
	return w, nil
}

// makeLinks makes the namespace and the veth pair of the first free
// tunnel number from n, and addresses the pair.
func (w *WireGuard) makeLinks(ctx context.Context, n int) error {
	pid := os.Getpid()
	for try := 0; ; try++ {
		w.n = (n + try) % wgNumbers
		w.netns, w.veth, w.peer, w.dev, w.cdev = wgNames(pid, w.n)
		// The namespace is named for the sweep before it is made, the
		// veth pair after: its name may be another run's.
		if err := os.WriteFile(filepath.Join(w.dir, wgNetnsFile), []byte(w.netns), 0o600); err != nil {
			return err
		}
		if _, err := w.run(ctx, "ip", "netns", "add", w.netns); err != nil {
			return err
		}
		// Both ends at once, the peer made in the namespace: no moment
		// with both in the root namespace, where the sweep would miss
		// them.
		out, err := w.run(ctx, "ip", "link", "add", w.veth, "type", "veth", "peer", "name", w.peer, "netns", w.netns)
		if err == nil {
			break
		}
		w.run(ctx, "ip", "netns", "del", w.netns)
		if !strings.Contains(out, "File exists") || try == wgNumbers-1 {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(w.dir, wgVethFile), []byte(w.veth), 0o600); err != nil {
		return err
	}
	outerS, outerC := w.outer()
	for _, c := range [][]string{
		{"ip", "addr", "add", outerS + "/30", "dev", w.veth},
		{"ip", "link", "set", w.veth, "up"},
		{"ip", "-n", w.netns, "addr", "add", outerC + "/30", "dev", w.peer},
		{"ip", "-n", w.netns, "link", "set", w.peer, "up"},
		{"ip", "-n", w.netns, "link", "set", "lo", "up"},
	} {
		if _, err := w.run(ctx, c...); err != nil {
			return err
		}
	}
	return nil
}

// outer are the veth pair's addresses: the root end's, the namespace's.
func (w *WireGuard) outer() (string, string) {
	return fmt.Sprintf("10.214.%d.1", w.n), fmt.Sprintf("10.214.%d.2", w.n)
}

// wgKeys are the two ends' public keys; the private ones are files.
type wgKeys struct{ server, client string }

// startDevices makes the key pairs and starts wireguard-go at both ends.
func (w *WireGuard) startDevices(ctx context.Context, k *wgKeys) error {
	// Curve25519, as wg genkey makes them.
	sPriv, sPub, err := wgKeyPair()
	if err != nil {
		return err
	}
	cPriv, cPub, err := wgKeyPair()
	if err != nil {
		return err
	}
	*k = wgKeys{server: sPub, client: cPub}
	for name, key := range map[string]string{"server.key": sPriv, "client.key": cPriv} {
		if err := os.WriteFile(filepath.Join(w.dir, name), []byte(key+"\n"), 0o600); err != nil {
			return err
		}
	}
	// A killed run's wireguard-go leaves its socket behind: waitDevice
	// would take it for the new one's. The names are this tunnel's own.
	for _, dev := range []string{w.dev, w.cdev} {
		if err := os.Remove(filepath.Join(wgSocketDir, dev+".sock")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if w.server, err = w.startDevice("wireguard-go (server side)", []string{"wireguard-go", "-f", w.dev}, "server.log"); err != nil {
		return err
	}
	if w.client, err = w.startDevice("wireguard-go (client side)", w.inNs("wireguard-go", "-f", w.cdev), "client.log"); err != nil {
		return err
	}
	for _, d := range []struct {
		dev string
		ns  bool
	}{{w.dev, false}, {w.cdev, true}} {
		if err := w.waitDevice(ctx, d.dev, d.ns); err != nil {
			return err
		}
	}
	return nil
}

// configure gives both ends their keys, peers and addresses. Listen ports
// are 0, for the kernel to pick free ones (a fixed 51820 in the root
// namespace is taken by a second run's tunnel), and each end is then told
// the other's.
func (w *WireGuard) configure(ctx context.Context, k wgKeys) error {
	srvAddr, cliAddr := WireGuardNet(w.n)
	outerS, outerC := w.outer()
	if _, err := w.run(ctx, "wg", "set", w.dev, "private-key", filepath.Join(w.dir, "server.key"), "listen-port", "0",
		"peer", k.client, "allowed-ips", cliAddr+"/32"); err != nil {
		return err
	}
	sPort, err := w.run(ctx, "wg", "show", w.dev, "listen-port")
	if err != nil {
		return err
	}
	if _, err := w.run(ctx, w.inNs("wg", "set", w.cdev, "private-key", filepath.Join(w.dir, "client.key"), "listen-port", "0",
		"peer", k.server, "allowed-ips", srvAddr+"/32", "endpoint", net.JoinHostPort(outerS, sPort))...); err != nil {
		return err
	}
	cPort, err := w.run(ctx, w.inNs("wg", "show", w.cdev, "listen-port")...)
	if err != nil {
		return err
	}
	w.ports = [2]string{sPort, cPort}
	for _, c := range [][]string{
		{"wg", "set", w.dev, "peer", k.client, "endpoint", net.JoinHostPort(outerC, cPort)},
		{"ip", "addr", "add", srvAddr + "/24", "dev", w.dev},
		{"ip", "link", "set", w.dev, "up"},
		{"ip", "-n", w.netns, "addr", "add", cliAddr + "/24", "dev", w.cdev},
		{"ip", "-n", w.netns, "link", "set", w.cdev, "up"},
	} {
		if _, err := w.run(ctx, c...); err != nil {
			return err
		}
	}
	return nil
}

// inNs is argv run in the client's namespace.
func (w *WireGuard) inNs(argv ...string) []string {
	return append([]string{"ip", "netns", "exec", w.netns}, argv...)
}

// run runs a setup command, returning its output (trimmed), or an error
// with it.
func (w *WireGuard) run(ctx context.Context, argv ...string) (string, error) {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	o := strings.TrimSpace(string(out))
	if err != nil {
		return o, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, o)
	}
	return o, nil
}

func (w *WireGuard) startDevice(name string, argv []string, log string) (*process, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = w.dir
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LOG_LEVEL=error"}
	return startProcess(name, cmd, filepath.Join(w.dir, log))
}

// wgSocketDir is where wireguard-go opens each device's UAPI socket, which
// wg talks to (the same file system inside the namespace).
const wgSocketDir = "/var/run/wireguard"

// waitDevice waits for wireguard-go to have made its device and then its
// UAPI socket: wg set before the socket exists falls back to the kernel's
// WireGuard, which these machines lack ("Protocol not supported"), and on
// a loaded machine the socket comes a moment after the link.
func (w *WireGuard) waitDevice(ctx context.Context, dev string, inNs bool) error {
	p := w.server
	args := []string{"link", "show", dev}
	if inNs {
		p, args = w.client, append([]string{"-n", w.netns}, args...)
	}
	return p.waitReady(ctx, func() error {
		if err := exec.Command("ip", args...).Run(); err != nil {
			return err
		}
		_, err := os.Stat(filepath.Join(wgSocketDir, dev+".sock"))
		return err
	})
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

// Stop stops both ends and removes the veth pair, the namespace and the
// directory with the keys; safe to call more than once.
func (w *WireGuard) Stop() error {
	w.stopOnce.Do(func() {
		var errs []error
		for _, p := range []*process{w.client, w.server} {
			if p != nil {
				errs = append(errs, p.stop(0))
			}
		}
		errs = append(errs, removeWireGuard(w.dir), os.RemoveAll(w.dir))
		w.stopErr = errors.Join(errs...)
	})
	return w.stopErr
}

// removeWireGuard deletes the veth pair and the network namespace a lab
// dir names (a VPN's, or a delay link's namespace), those of them it
// names that exist. The veth pair goes first, and at once: deleting one
// end deletes both, whereas a namespace whose name is deleted lives on,
// its veth pair with it, while the kernel still holds it (for the
// sockets a killed run made there).
func removeWireGuard(dir string) error {
	var errs []error
	for _, f := range []struct {
		file     string
		prefixes []string
		sys      string
	}{
		{wgVethFile, []string{"tbwgv"}, "/sys/class/net"},
		{wgNetnsFile, []string{"tlsbench-wg-", "tlsbench-dl-"}, "/run/netns"}, // a delay link's too
	} {
		raw, err := os.ReadFile(filepath.Join(dir, f.file))
		if err != nil {
			continue // none of its own
		}
		name := strings.TrimSpace(string(raw))
		ours := slices.ContainsFunc(f.prefixes, func(p string) bool { return strings.HasPrefix(name, p) })
		if !ours || strings.ContainsAny(name, "/ ") {
			errs = append(errs, fmt.Errorf("lab dir %s names %s %q, not one of tlsbench's", dir, f.file, name))
			continue
		}
		if _, err := os.Stat(filepath.Join(f.sys, name)); err != nil {
			continue
		}
		del := []string{"ip", "link", "del", name}
		if f.file == wgNetnsFile {
			del = []string{"ip", "netns", "del", name}
		}
		if out, err := exec.Command(del[0], del[1:]...).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v: %s", strings.Join(del, " "), err, strings.TrimSpace(string(out))))
		}
	}
	return errors.Join(errs...)
}

// Info describes the tunnel for the result.
func (w *WireGuard) Info() result.Server {
	return result.Server{Software: "wireguard-go", Version: w.version,
		Endpoints: map[string]string{"": net.JoinHostPort(w.ServerAddr(), "0")},
		Settings: map[string]string{"netns": w.netns, "server": w.ServerAddr(), "client": w.ClientAddr(), "mtu": "1420 (wireguard-go's default)",
			"udp_ports": w.ports[0] + " (server), " + w.ports[1] + " (client)"}}
}

// Prefix is the tunnel's subnet, for Options.Tunnel.
func (w *WireGuard) Prefix() netip.Prefix {
	return netip.MustParsePrefix(w.ServerAddr() + "/24").Masked()
}
