package wire

import (
	"bufio"
	"context"
	"encoding/binary"
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
	args := []string{"-i", o.Interface, "-w", o.File, "-U", "--immediate-mode", "--time-stamp-precision", "nano", "-n", "-s", strconv.Itoa(o.SnapLen)}
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
// last packet it read before it closes the socket: the kernel hands the
// packets already queued to the blocked reader within microseconds, and
// closing earlier would lose the command's last segments.
const quiet = 50 * time.Millisecond

// startAFPacket captures with a packet socket of tlsbench's own, for
// machines without tcpdump; it keeps the segments of o.Ports (filtered
// here, not in the kernel) in a pcap file with nanosecond timestamps.
func startAFPacket(ctx context.Context, o LiveOptions) (func() (LiveStats, error), error) {
	lt, err := linkType(o.Interface)
	if err != nil {
		return nil, err
	}
	h, err := pcapgo.NewEthernetHandle(o.Interface)
	if err != nil {
		if errors.Is(err, unix.EPERM) || strings.Contains(err.Error(), "operation not permitted") {
			return nil, &PermissionError{Interface: o.Interface, Method: MethodAFPacket, Err: err}
		}
		return nil, fmt.Errorf("capturing on %s: %w", o.Interface, err)
	}
	if err := h.SetCaptureLength(o.SnapLen); err != nil {
		h.Close()
		return nil, err
	}
	if ifc, _ := net.InterfaceByName(o.Interface); ifc != nil && ifc.Flags&net.FlagLoopback != 0 {
		// A packet socket sees every loopback packet twice, leaving and
		// arriving; like libpcap, keep the arrival only.
		prog, err := bpf.Assemble([]bpf.Instruction{
			bpf.LoadExtension{Num: bpf.ExtType},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.PACKET_OUTGOING, SkipFalse: 1},
			bpf.RetConstant{Val: 0},
			bpf.RetConstant{Val: uint32(o.SnapLen)},
		})
		if err == nil {
			err = h.SetBPF(prog)
		}
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("capturing on %s: filtering out loopback's outgoing copies: %w", o.Interface, err)
		}
	}
	f, err := os.Create(o.File)
	if err != nil {
		h.Close()
		return nil, err
	}
	w := pcapgo.NewWriterNanos(f)
	if err := w.WriteFileHeader(uint32(o.SnapLen), lt); err != nil {
		h.Close()
		f.Close()
		return nil, err
	}
	keep := make(map[uint16]bool, len(o.Ports))
	for _, p := range o.Ports {
		keep[uint16(p)] = true
	}
	var (
		packets  atomic.Int64
		lastRead atomic.Int64 // unix nanoseconds
		readErr  error
	)
	lastRead.Store(time.Now().UnixNano())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			data, ci, err := h.ReadPacketData()
			if err != nil {
				// pcapgo flattens the error to text: a closed socket is
				// the stop, not a failure.
				if !errors.Is(err, os.ErrClosed) && !strings.Contains(err.Error(), "closed file") && !strings.Contains(err.Error(), "file already closed") {
					readErr = err
				}
				return
			}
			lastRead.Store(time.Now().UnixNano())
			if !tcpPorts(data, lt, keep) {
				continue
			}
			if err := w.WritePacket(ci, data); err != nil {
				readErr = err
				return
			}
			packets.Add(1)
		}
	}()
	stopped := make(chan struct{})
	var once sync.Once
	closeSocket := func() { once.Do(func() { h.Close() }) }
	go func() {
		select {
		case <-ctx.Done():
			closeSocket()
		case <-stopped:
		}
	}()
	return func() (LiveStats, error) {
		close(stopped)
		deadline := time.Now().Add(stopWait)
		for time.Since(time.Unix(0, lastRead.Load())) < quiet && time.Now().Before(deadline) {
			time.Sleep(quiet / 5)
		}
		st := LiveStats{Method: MethodAFPacket, SnapLen: o.SnapLen}
		if ts, err := h.Stats(); err == nil {
			st.Dropped = int64(ts.Drops)
		}
		closeSocket()
		<-done
		st.Packets = packets.Load()
		if err := f.Close(); err != nil && readErr == nil {
			readErr = err
		}
		if readErr != nil {
			return st, fmt.Errorf("capturing on %s: %w", o.Interface, readErr)
		}
		return st, nil
	}, nil
}

// tcpPorts says whether a frame carries a TCP segment from or to one of
// the ports kept (IPv4, or IPv6 without extension headers; 802.1Q tags
// skipped).
func tcpPorts(data []byte, lt layers.LinkType, keep map[uint16]bool) bool {
	if lt == layers.LinkTypeEthernet {
		if len(data) < 14 {
			return false
		}
		et, off := binary.BigEndian.Uint16(data[12:]), 14
		for (et == 0x8100 || et == 0x88a8) && len(data) >= off+4 {
			et, off = binary.BigEndian.Uint16(data[off+2:]), off+4
		}
		if et != 0x0800 && et != 0x86dd {
			return false
		}
		data = data[off:]
	}
	if len(data) < 1 {
		return false
	}
	var tcp []byte
	switch data[0] >> 4 {
	case 4:
		ihl := int(data[0]&0x0f) * 4
		if len(data) < 20 || data[9] != 6 || len(data) < ihl {
			return false
		}
		tcp = data[ihl:]
	case 6:
		if len(data) < 40 || data[6] != 6 {
			return false
		}
		tcp = data[40:]
	default:
		return false
	}
	if len(tcp) < 4 {
		return false
	}
	return keep[binary.BigEndian.Uint16(tcp)] || keep[binary.BigEndian.Uint16(tcp[2:])]
}
