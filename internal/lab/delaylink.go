package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/result"
)

// DelayLink is a network link with a round-trip time, without tc netem
// (these kernels have no sch_netem): a network namespace of its own (the
// client's side) and the root namespace (the server's) joined by two TUN
// devices, one in each, between which a process of tlsbench's forwards the
// IP packets, each way RTT/2 late (netx.ServeForward). Unlike the dialer's emulation,
// the kernel's TCP sees the RTT, its handshake included: a capture on
// either device shows it, TCP_INFO reports it, and any program started in
// the namespace (Start) pays it.
//
// As with WireGuard, the server stays in the root namespace and listens on
// the link's server address too (Options.Tunnel); the namespace reaches
// that address only through the link (its one route, the link's subnet).
type DelayLink struct {
	dir   string
	netns string // namespace name
	n     int    // the link's number: names and subnet
	// dev is the root side's TUN device, cdev the namespace's.
	dev, cdev string
	setup     []result.SetupPhase
	// fwd is the forwarder, `tlsbench forward` (netx.ServeForward), told
	// what to do on its stdin (ctl) and answering on its stdout (replies).
	fwd struct {
		sync.Mutex
		proc    *process
		ctl     *os.File
		replies *os.File
		r       *bufio.Reader
		rtt     time.Duration
	}

	stopOnce sync.Once
	stopErr  error
}

// dlNames are the names of link n's namespace (of process pid) and its
// devices: the root side's and the namespace's.
func dlNames(pid, n int) (netns, dev, cdev string) {
	return fmt.Sprintf("tlsbench-dl-%d-%d", pid, n), fmt.Sprintf("tbdls%d", n), fmt.Sprintf("tbdlc%d", n)
}

// DelayLinkMTU is the devices' MTU: Ethernet's, as a real link's.
const DelayLinkMTU = 1500

// CheckDelayLink says, in one line, what this machine lacks for a delay
// link: root, network namespaces, /dev/net/tun or ip.
func CheckDelayLink() error {
	if os.Geteuid() != 0 {
		return errors.New("a delay link (--rtt-via link) needs root: it makes a network namespace and TUN devices")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("a delay link (--rtt-via link) needs /dev/net/tun (%v): load the tun module or give the container the device", err)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("a delay link (--rtt-via link) needs ip: apt-get install iproute2, or run scripts/install.sh: %w", ErrNotInstalled)
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		return errors.New("a delay link (--rtt-via link) needs network namespaces, which this kernel does not offer")
	}
	return nil
}

// DelayLinkNet is link n's addressing: the server's address (the root
// side's device) and the client's (the namespace's), in 10.215.N.0/24.
func DelayLinkNet(n int) (server, client string) {
	return fmt.Sprintf("10.215.%d.2", n), fmt.Sprintf("10.215.%d.1", n)
}

// DelayLinkOptions configure a delay link.
type DelayLinkOptions struct {
	RTT time.Duration
	// Exe is the tlsbench binary whose forward command forwards the
	// packets; "" means this one (os.Executable).
	Exe string
}

// StartDelayLink builds a link, timing each step once. It takes the first
// number from n (see NewWireGuardNumber: links and tunnels are numbered
// alike) whose root-side device name is free, so that links of runs at
// once never collide.
func StartDelayLink(ctx context.Context, n int, o DelayLinkOptions) (_ *DelayLink, err error) {
	if err := CheckDelayLink(); err != nil {
		return nil, err
	}
	exe := o.Exe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("delay link: finding this program: %w", err)
		}
	}
	dir, err := makeLabDir("tlsbench-dl-")
	if err != nil {
		return nil, err
	}
	l := &DelayLink{dir: dir}
	defer func() {
		if err != nil {
			l.Stop()
		}
	}()
	var devs [2]*os.File
	defer func() {
		// The forwarder has its own copies: the devices live as long as
		// it does.
		for _, f := range devs {
			if f != nil {
				f.Close()
			}
		}
	}()
	for _, st := range []struct {
		name string
		do   func() error
	}{
		{"netns+tun", func() error { return l.makeDevices(ctx, n, &devs) }},
		{"addresses", func() error { return l.configure(ctx) }},
		{"forwarder", func() error { return l.startForwarder(ctx, exe, devs, o.RTT) }},
	} {
		start := time.Now()
		if err := st.do(); err != nil {
			return nil, fmt.Errorf("%s: %w", st.name, err)
		}
		l.setup = append(l.setup, result.SetupPhase{Name: st.name, Duration: time.Since(start)})
	}
	return l, nil
}

// startForwarder starts `exe forward` with the two devices (fds 3 and 4)
// and sets its RTT, which it answers once it forwards.
func (l *DelayLink) startForwarder(ctx context.Context, exe string, devs [2]*os.File, rtt time.Duration) error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return err
	}
	cmd := exec.Command(exe, "forward")
	cmd.Dir = l.dir
	cmd.Stdin, cmd.Stdout = inR, outW
	cmd.ExtraFiles = devs[:]
	p, err := startProcess("the delay link's forwarder", cmd, filepath.Join(l.dir, "forward.log"))
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return err
	}
	l.fwd.proc, l.fwd.ctl, l.fwd.replies, l.fwd.r = p, inW, outR, bufio.NewReader(outR)
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	return l.SetRTT(ctx, rtt)
}

// control sends the forwarder one line and returns its answer.
func (l *DelayLink) control(ctx context.Context, line string) (string, error) {
	l.fwd.Lock()
	defer l.fwd.Unlock()
	if l.fwd.proc == nil {
		return "", errors.New("the delay link's forwarder is not running")
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(readyTimeout)
	}
	l.fwd.replies.SetReadDeadline(dl)
	stop := context.AfterFunc(ctx, func() { l.fwd.replies.SetReadDeadline(time.Now()) })
	defer stop()
	_, err := io.WriteString(l.fwd.ctl, line+"\n")
	var reply string
	if err == nil {
		reply, err = l.fwd.r.ReadString('\n')
	}
	if err != nil {
		if gone := l.fwd.proc.alive(); gone != nil {
			return "", gone
		}
		return "", fmt.Errorf("the delay link's forwarder did not answer %q: %w", line, err)
	}
	reply = strings.TrimSpace(reply)
	if msg, ok := strings.CutPrefix(reply, "error "); ok {
		return "", fmt.Errorf("the delay link's forwarder: %s", msg)
	}
	return reply, nil
}

// makeDevices makes the namespace and the two TUN devices of the first
// free number from n.
func (l *DelayLink) makeDevices(ctx context.Context, n int, devs *[2]*os.File) error {
	pid := os.Getpid()
	for try := 0; ; try++ {
		l.n = (n + try) % wgNumbers
		l.netns, l.dev, l.cdev = dlNames(pid, l.n)
		// Named for the sweep before it is made.
		if err := os.WriteFile(filepath.Join(l.dir, wgNetnsFile), []byte(l.netns), 0o600); err != nil {
			return err
		}
		if _, err := runIP(ctx, "netns", "add", l.netns); err != nil {
			return err
		}
		root, err := netx.OpenTUN("", l.dev)
		if err == nil {
			devs[0] = root
			break
		}
		runIP(ctx, "netns", "del", l.netns)
		// Another run's link (EBUSY), or a device of another kind
		// (EINVAL), has the name.
		if !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.EINVAL) || try == wgNumbers-1 {
			return err
		}
	}
	c, err := netx.OpenTUN(l.Netns(), l.cdev)
	if err != nil {
		return err
	}
	devs[1] = c
	return nil
}

// configure addresses both devices in the link's subnet (its route, in
// the namespace the only one besides loopback's) and brings them up.
func (l *DelayLink) configure(ctx context.Context) error {
	srv, cli := DelayLinkNet(l.n)
	mtu := strconv.Itoa(DelayLinkMTU)
	for _, c := range [][]string{
		{"addr", "add", srv + "/24", "dev", l.dev},
		{"link", "set", l.dev, "mtu", mtu, "up"},
		{"-n", l.netns, "addr", "add", cli + "/24", "dev", l.cdev},
		{"-n", l.netns, "link", "set", l.cdev, "mtu", mtu, "up"},
		{"-n", l.netns, "link", "set", "lo", "up"},
	} {
		if _, err := runIP(ctx, c...); err != nil {
			return err
		}
	}
	return nil
}

// runIP runs ip with args, a setup step (never one per packet).
func runIP(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	o := strings.TrimSpace(string(out))
	if err != nil {
		return o, fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, o)
	}
	return o, nil
}

// SetRTT sets the link's round-trip time for the packets sent from now on.
func (l *DelayLink) SetRTT(ctx context.Context, rtt time.Duration) error {
	if _, err := l.control(ctx, "rtt "+strconv.FormatInt(int64(rtt), 10)); err != nil {
		return err
	}
	l.fwd.Lock()
	l.fwd.rtt = rtt
	l.fwd.Unlock()
	return nil
}

// RTT is the round-trip time the link adds.
func (l *DelayLink) RTT() time.Duration {
	l.fwd.Lock()
	defer l.fwd.Unlock()
	return l.fwd.rtt
}

// Stats is what the forwarder did so far: [0] from the server's side to
// the client's, [1] from the client's to the server's.
func (l *DelayLink) Stats(ctx context.Context) ([2]netx.WayStats, error) {
	var st [2]netx.WayStats
	reply, err := l.control(ctx, "stats")
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal([]byte(reply), &st); err != nil {
		return st, fmt.Errorf("the delay link's forwarder answered %q to stats", reply)
	}
	return st, nil
}

// CPU is the forwarder's CPU time so far: the link's, neither the
// client's nor the server's.
func (l *DelayLink) CPU() (time.Duration, error) { return l.fwd.proc.cpu() }

// Alive reports why the forwarder is gone, if it is.
func (l *DelayLink) Alive() error { return l.fwd.proc.alive() }

// Netns is the client side's namespace, as a path for netx.Dialer.Netns.
func (l *DelayLink) Netns() string { return filepath.Join("/run/netns", l.netns) }

// Device is the root side's TUN device, to capture on (tlsbench wire
// --capture DEVICE): the server's view of every packet of the link.
func (l *DelayLink) Device() string { return l.dev }

// ServerAddr is the server's address on the link.
func (l *DelayLink) ServerAddr() string { s, _ := DelayLinkNet(l.n); return s }

// ClientAddr is the client's address on the link, which the server sees.
func (l *DelayLink) ClientAddr() string { _, c := DelayLinkNet(l.n); return c }

// Prefix is the link's subnet, for Options.Tunnel: a lab server listens
// on ServerAddr and lets clients in from the subnet.
func (l *DelayLink) Prefix() netip.Prefix {
	return netip.MustParsePrefix(l.ServerAddr() + "/24").Masked()
}

// Setup is how long each step of building the link took, once.
func (l *DelayLink) Setup() []result.SetupPhase { return l.setup }

// Start starts cmd in the client's namespace, where every connection it
// makes to ServerAddr crosses the link: how a program other than
// tlsbench (pgbench, curl, a client stack) pays the link's RTT, TCP
// handshake included. Give it the server's address on the link: a lab
// server started with Options.Tunnel set to Prefix listens there, and its
// certificates name that address too. The caller waits for cmd as usual:
//
//	cmd := exec.CommandContext(ctx, "pgbench", "-C", "-n", "-t", "50",
//		"host="+link.ServerAddr()+" port=5432 dbname=app user=app")
//	cmd.Env = append(os.Environ(), "PGPASSWORD="+pw) // never on the command line
//	if err := link.Start(cmd); err != nil { ... }
//	err := cmd.Wait()
func (l *DelayLink) Start(cmd *exec.Cmd) error { return netx.StartInNetns(l.Netns(), cmd) }

// Note says, for a result, how the link makes its RTT.
func (l *DelayLink) Note() string {
	return "rtt through a delay link (--rtt-via link): the connections are made in a network namespace of tlsbench's joined to the server's by two TUN devices (" +
		l.cdev + ", " + l.dev + "), between which a process of tlsbench's (tlsbench forward, a thread per direction at real-time priority where allowed) forwards the IP packets, each way RTT/2 after it read them (in order, up to " +
		strconv.Itoa(netx.ForwardQueue) + " packets queued each way, no loss below that, no bandwidth limit): the kernel's TCP sees the RTT, its handshake included; the forwarding's own latency adds to it (tens of microseconds each way), and its CPU is neither the client's nor the server's"
}

// Stop stops the forwarder (which removes both devices) and removes the
// namespace and the link's dir; safe to call more than once.
func (l *DelayLink) Stop() error {
	l.stopOnce.Do(func() {
		var errs []error
		l.fwd.Lock()
		if l.fwd.proc != nil {
			l.fwd.ctl.Close() // the end of its input: it stops
			select {
			case <-l.fwd.proc.exited:
				if err := l.fwd.proc.exitErr; err != nil {
					errs = append(errs, l.fwd.proc.failure(fmt.Sprintf("exited with %v", err)))
				}
			case <-time.After(stopGrace):
				errs = append(errs, l.fwd.proc.stop(0))
			}
			l.fwd.replies.Close()
		}
		l.fwd.Unlock()
		errs = append(errs, removeWireGuard(l.dir), os.RemoveAll(l.dir))
		l.stopErr = errors.Join(errs...)
	})
	return l.stopErr
}
