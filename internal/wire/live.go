package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gopacket/gopacket/afpacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// DefaultSnapLen is the bytes of each packet a live capture keeps: enough
// for a ClientHello with a post-quantum key share (about 1,500 bytes) and
// the headers of the records after it, not for the bulk data of large
// segments (loopback carries up to 64 KiB in one), which the decoder
// needs only the sizes of.
const DefaultSnapLen = 4096

// How a live capture is taken (LiveOptions.Method).
const (
	MethodAuto     = ""          // tcpdump when on the PATH, else AF_PACKET
	MethodTcpdump  = "tcpdump"   // tcpdump -w, as users capture by hand
	MethodAFPacket = "af_packet" // a packet socket of tlsbench's own
)

// LiveOptions say what a live capture takes.
type LiveOptions struct {
	Interface string // e.g. lo, eth0
	Ports     []int  // TCP ports kept: either end of a segment
	File      string // the pcap file written
	SnapLen   int    // 0: DefaultSnapLen
	Method    string // MethodAuto, MethodTcpdump or MethodAFPacket
}

// LiveStats is what a stopped live capture counted.
type LiveStats struct {
	Method  string // the method used: tcpdump or af_packet
	SnapLen int
	// Packets is how many packets the file holds (as tcpdump counts
	// them); Dropped how many the kernel dropped because the capture did
	// not keep up: those are missing from the file.
	Packets int64
	Dropped int64
}

// PermissionError is a live capture refused for want of the right to
// capture (root or CAP_NET_RAW).
type PermissionError struct {
	Interface, Method string
	Err               error
}

func (e *PermissionError) Error() string {
	fix := "run tlsbench as root, or let tcpdump capture: setcap cap_net_raw,cap_net_admin=eip $(which tcpdump)"
	if e.Method == MethodAFPacket {
		fix = "run tlsbench as root, or install tcpdump and let it capture: setcap cap_net_raw,cap_net_admin=eip $(which tcpdump)"
	}
	return fmt.Sprintf("capturing on %s needs root or CAP_NET_RAW (%s: %v): %s", e.Interface, e.Method, e.Err, fix)
}

func (e *PermissionError) Unwrap() error { return e.Err }

// Live is a capture running on an interface.
type Live struct {
	stop func() (LiveStats, error)
	once sync.Once
	st   LiveStats
	err  error
}

// StartLive starts capturing o.Ports on o.Interface into o.File and
// returns once the capture is listening, so that nothing the caller does
// next is missed. Stop it with Stop; cancelling ctx stops it too (what was
// captured stays in the file). A tcpdump it runs does not outlive this
// process.
func StartLive(ctx context.Context, o LiveOptions) (*Live, error) {
	if o.Interface == "" {
		return nil, errors.New("no interface to capture on")
	}
	if len(o.Ports) == 0 {
		return nil, errors.New("no TCP port to capture")
	}
	for _, p := range o.Ports {
		if p <= 0 || p > 65535 {
			return nil, fmt.Errorf("port %d is out of range (1 to 65535)", p)
		}
	}
	if o.SnapLen <= 0 {
		o.SnapLen = DefaultSnapLen
	}
	if _, err := net.InterfaceByName(o.Interface); err != nil {
		return nil, fmt.Errorf("no interface %q to capture on: %w (see ip link)", o.Interface, err)
	}
	l := &Live{}
	var err error
	switch o.Method {
	case MethodAuto:
		if _, lerr := exec.LookPath("tcpdump"); lerr == nil {
			l.stop, err = startTcpdump(ctx, o)
		} else {
			l.stop, err = startAFPacket(ctx, o)
		}
	case MethodTcpdump:
		l.stop, err = startTcpdump(ctx, o)
	case MethodAFPacket:
		l.stop, err = startAFPacket(ctx, o)
	default:
		return nil, fmt.Errorf("unknown capture method %q: use tcpdump or af_packet", o.Method)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Stop ends the capture, waits until the file is complete and returns
// what it counted. It may be called more than once.
func (l *Live) Stop() (LiveStats, error) {
	l.once.Do(func() { l.st, l.err = l.stop() })
	return l.st, l.err
}

// portFilter is the capture filter of ports in tcpdump's syntax.
func portFilter(ports []int) string {
	terms := make([]string, len(ports))
	for i, p := range ports {
		terms[i] = "tcp port " + strconv.Itoa(p)
	}
	return strings.Join(terms, " or ")
}

// stopWait bounds how long a stopped capture may take to write its file.
const stopWait = 10 * time.Second

var (
	tcpdumpCount   = regexp.MustCompile(`^(\d+) packets? (captured|dropped by kernel)`)
	tcpdumpDenied  = regexp.MustCompile(`(?i)permission|not permitted`)
	tcpdumpStarted = "listening on "
)

// startTcpdump runs tcpdump as users do by hand. Its own process group
// keeps a Ctrl-C at the terminal from stopping it before the command it
// watches has closed its connections: tlsbench stops it (SIGINT, on which
// tcpdump flushes the file and prints its counts), and the kernel does
// if tlsbench dies (Pdeathsig).
func startTcpdump(ctx context.Context, o LiveOptions) (func() (LiveStats, error), error) {
	bin, err := exec.LookPath("tcpdump")
	if err != nil {
		return nil, errors.New("tcpdump is not installed: install it (apt-get install tcpdump) or capture with af_packet")
	}
	// --immediate-mode: packets go to the file as they come, not in
	// blocks a stop could leave behind. Nanoseconds: phases on loopback
	// last tens of microseconds. -Z root: Debian's tcpdump run by
	// root otherwise becomes user tcpdump, who may not write o.File.
	// -B: the ring of tlsbench's own packet socket (ringBlocks), not
	// libpcap's 2 MiB.
	args := []string{"-i", o.Interface, "-w", o.File, "-U", "--immediate-mode", "--time-stamp-precision", "nano", "-n", "-s", strconv.Itoa(o.SnapLen),
		"-B", strconv.Itoa(ringBlock * ringBlocks >> 10)}
	if os.Geteuid() == 0 {
		args = append(args, "-Z", "root")
	}
	args = append(args, portFilter(o.Ports))
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting tcpdump: %w", err)
	}
	var (
		mu    sync.Mutex
		lines []string
	)
	listening := make(chan struct{})
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		sc := bufio.NewScanner(stderr)
		up := false
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			lines = append(lines, line)
			mu.Unlock()
			if !up && strings.Contains(line, tcpdumpStarted) {
				up = true
				close(listening)
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	waited := make(chan error, 1)
	go func() {
		<-eof // Wait closes the pipe: read it to its end first
		waited <- cmd.Wait()
	}()
	// said is what tcpdump said on stderr but its banner, on one line
	// (it spells a refusal over two).
	said := func() string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, l := range lines {
			if l = strings.TrimSpace(l); l != "" && !strings.Contains(l, tcpdumpStarted) && !tcpdumpCount.MatchString(l) {
				out = append(out, strings.TrimPrefix(l, "tcpdump: "))
			}
		}
		return strings.Join(out, " ")
	}
	select {
	case <-listening:
	case err := <-waited:
		msg := said()
		if msg == "" {
			msg = fmt.Sprint(err)
		}
		if tcpdumpDenied.MatchString(msg) {
			return nil, &PermissionError{Interface: o.Interface, Method: MethodTcpdump, Err: errors.New(msg)}
		}
		return nil, fmt.Errorf("tcpdump did not start: %s", msg)
	case <-ctx.Done():
		cmd.Process.Kill()
		<-waited
		return nil, ctx.Err()
	}
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			cmd.Process.Signal(os.Interrupt)
		case <-stopped:
		}
	}()
	return func() (LiveStats, error) {
		close(stopped)
		// tcpdump drops what it has not yet read when interrupted: the
		// last segments of a run just ended, on a loaded machine. It
		// writes each packet as it reads it (-U, immediate mode), so a
		// file that stopped growing for a while has them all: 200 ms, a
		// loaded 2-core machine's wait for a CPU (a stop, not a trial,
		// pays it).
		waitQuiet(o.File, 200*time.Millisecond, stopWait)
		cmd.Process.Signal(os.Interrupt)
		var werr error
		select {
		case werr = <-waited:
		case <-time.After(stopWait):
			cmd.Process.Kill()
			<-waited
			return LiveStats{}, fmt.Errorf("tcpdump did not stop within %v of SIGINT: the capture %s may be incomplete", stopWait, o.File)
		}
		st := LiveStats{Method: MethodTcpdump, SnapLen: o.SnapLen}
		mu.Lock()
		counted := false
		for _, line := range lines {
			m := tcpdumpCount.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil {
				continue
			}
			n, _ := strconv.ParseInt(m[1], 10, 64)
			if m[2] == "captured" {
				st.Packets, counted = n, true
			} else {
				st.Dropped = n
			}
		}
		mu.Unlock()
		if !counted {
			return st, fmt.Errorf("tcpdump ended without its counts (%v): %s", werr, said())
		}
		return st, nil
	}, nil
}

// waitQuiet waits until file has not grown for quiet, or for at most max.
func waitQuiet(file string, quiet, max time.Duration) {
	size, since := int64(-1), time.Now()
	for end := time.Now().Add(max); time.Now().Before(end); time.Sleep(quiet / 5) {
		fi, err := os.Stat(file)
		if err != nil {
			return
		}
		if fi.Size() != size {
			size, since = fi.Size(), time.Now()
		} else if time.Since(since) >= quiet {
			return
		}
	}
}

// linkType is the pcap link type of what a packet socket reads on iface:
// Ethernet framing (loopback included), or bare IP (tun devices).
func linkType(iface string) (layers.LinkType, error) {
	b, err := os.ReadFile("/sys/class/net/" + iface + "/type")
	if err != nil {
		return 0, err
	}
	switch strings.TrimSpace(string(b)) {
	case "1", "772": // ARPHRD_ETHER, ARPHRD_LOOPBACK
		return layers.LinkTypeEthernet, nil
	case "65534": // ARPHRD_NONE: tun
		return layers.LinkTypeRaw, nil
	}
	return 0, fmt.Errorf("interface %s has link type %s, which tlsbench's own capture does not read: install tcpdump", iface, strings.TrimSpace(string(b)))
}

// quiet is how long a stopping packet-socket capture waits after the
// last packet it read before it stops reading: the kernel hands over the
// packets already in the ring within a block's timeout (ringTimeout), and
// stopping earlier would lose the command's last segments.
const quiet = 50 * time.Millisecond

// The packet socket's ring (TPACKET_V3): ringBlocks blocks of ringBlock
// bytes, each handed to the reader when full or ringTimeout after its
// first packet. The kernel filter cuts every packet to the snap length
// (4 KiB by default), so the 16 MiB hold at least 4,000 packets and tens
// of thousands of small ones: what a loaded 2-core machine's connect loop
// sends while the reader waits for a CPU (a socket's default receive
// buffer, 208 KiB, held 3 of loopback's 64 KiB segments: 690 of 726
// packets dropped at load 10). The drops the kernel counts are reported.
const (
	ringBlock   = 1 << 20
	ringBlocks  = 16
	ringTimeout = 10 * time.Millisecond
	ringPoll    = 20 * time.Millisecond // how often a waiting reader looks up
)

// startAFPacket captures with a packet socket of tlsbench's own, for
// machines without tcpdump: the kernel keeps the segments of o.Ports
// (kernelFilter) in a ring the reader empties into a pcap file with
// nanosecond timestamps.
func startAFPacket(ctx context.Context, o LiveOptions) (func() (LiveStats, error), error) {
	lt, err := linkType(o.Interface)
	if err != nil {
		return nil, err
	}
	ifc, err := net.InterfaceByName(o.Interface)
	if err != nil {
		return nil, err
	}
	filter, err := kernelFilter(lt, ifc.Flags&net.FlagLoopback == 0, o.Ports, o.SnapLen)
	if err != nil {
		return nil, err
	}
	prog, err := bpf.Assemble(filter)
	if err != nil {
		return nil, err
	}
	h, err := afpacket.NewTPacket(afpacket.OptInterface(o.Interface), afpacket.OptTPacketVersion(afpacket.TPacketVersion3),
		afpacket.OptBlockSize(ringBlock), afpacket.OptNumBlocks(ringBlocks), afpacket.OptBlockTimeout(ringTimeout),
		afpacket.OptPollTimeout(ringPoll))
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, &PermissionError{Interface: o.Interface, Method: MethodAFPacket, Err: err}
		}
		return nil, fmt.Errorf("capturing on %s: %w", o.Interface, err)
	}
	if err := h.SetBPF(prog); err != nil {
		h.Close()
		return nil, fmt.Errorf("capturing on %s: attaching the port filter: %w", o.Interface, err)
	}
	// The socket sees every packet from its bind to the filter's attach:
	// those queued in between (other ports', on a busy loopback) passed
	// unfiltered. The reader skips them by their kernel timestamps; what
	// the capture is for starts after StartLive returns.
	filtered := time.Now()
	f, err := os.Create(o.File)
	if err != nil {
		h.Close()
		return nil, err
	}
	// Buffered: two writes per packet would slow the reader down, and the
	// ring fills while it waits.
	bw := bufio.NewWriterSize(f, 1<<20)
	w := pcapgo.NewWriterNanos(bw)
	if err := w.WriteFileHeader(uint32(o.SnapLen), lt); err != nil {
		h.Close()
		f.Close()
		return nil, err
	}
	// The reader owns the ring: it alone reads, counts the drops and
	// closes it (the ring is unmapped then), once asked to stop and quiet
	// (or still busy stopWait later).
	var (
		stopAt  atomic.Int64 // unix nanoseconds; 0 until asked to stop
		st      = LiveStats{Method: MethodAFPacket, SnapLen: o.SnapLen}
		readErr error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer h.Close()
		last := time.Now()
		for {
			data, ci, err := h.ZeroCopyReadPacketData()
			switch {
			case err == nil && ci.Timestamp.Before(filtered):
			case err == nil:
				last = time.Now()
				if err := w.WritePacket(ci, data); err != nil {
					readErr = err
					return
				}
				st.Packets++
			case !errors.Is(err, afpacket.ErrTimeout):
				readErr = err
				return
			}
			if at := stopAt.Load(); at != 0 && (time.Since(last) >= quiet || time.Since(time.Unix(0, at)) >= stopWait) {
				if _, v3, err := h.SocketStats(); err == nil {
					st.Dropped = int64(v3.Drops())
				}
				return
			}
		}
	}()
	stop := func() { stopAt.CompareAndSwap(0, time.Now().UnixNano()) }
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-stopped:
		}
	}()
	return func() (LiveStats, error) {
		close(stopped)
		stop()
		<-done // within stopWait and a poll
		if err := errors.Join(bw.Flush(), f.Close()); err != nil && readErr == nil {
			readErr = err
		}
		if readErr != nil {
			return st, fmt.Errorf("capturing on %s: %w", o.Interface, readErr)
		}
		return st, nil
	}, nil
}
