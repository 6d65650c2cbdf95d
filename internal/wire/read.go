// Package wire decodes packet captures into connections, phases and round
// trips, for any client (libpq, OpenSSL, a proxy, tlsbench itself), and
// captures them live while a command runs.
package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/tlsbench/tlsbench/internal/result"
)

// Options select what is decoded.
type Options struct {
	// Ports are the server ports whose connections are decoded; none: every
	// TCP connection whose SYN the capture shows.
	Ports []int
}

// Capture is a decoded capture: its connections in the order they began,
// and what it held (Info).
type Capture struct {
	Conns []*Conn
	Info  result.Capture
}

// ErrNotCapture says that a file is neither pcap nor pcapng.
var ErrNotCapture = errors.New("not a capture (neither pcap nor pcapng): give a file tcpdump -w wrote")

// ReadFile decodes the capture in path.
func ReadFile(path string, opt Options) (*Capture, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := Decode(f, opt)
	if err != nil {
		return nil, err
	}
	c.Info.Source = baseName(path)
	return c, nil
}

func baseName(path string) string {
	if i := bytesLastSlash(path); i >= 0 {
		return path[i+1:]
	}
	return path
}

func bytesLastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}

// packetSource is what pcapgo's two readers have in common.
type packetSource interface {
	ReadPacketData() ([]byte, gopacket.CaptureInfo, error)
	LinkType() layers.LinkType
}

// Decode reads a pcap or pcapng stream. A capture cut short (a truncated
// file) yields the packets before the cut, counted as "cut-short"; only
// a stream that is no capture at all is an error.
func Decode(r io.Reader, opt Options) (*Capture, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	magic, err := br.Peek(4)
	if err != nil {
		return nil, ErrNotCapture
	}
	var src packetSource
	var snap uint32
	if bytes.Equal(magic, []byte{0x0a, 0x0d, 0x0d, 0x0a}) {
		ng, err := pcapgo.NewNgReader(br, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			return nil, fmt.Errorf("%w (%v)", ErrNotCapture, err)
		}
		src = ng
		if ifc, err := ng.Interface(0); err == nil {
			snap = ifc.SnapLength
		}
	} else {
		pr, err := pcapgo.NewReader(br)
		if err != nil {
			return nil, ErrNotCapture
		}
		src, snap = pr, pr.Snaplen()
	}
	d := newDecoder(opt)
	d.info.SnapLen = int(snap)
	lt := src.LinkType()
	for {
		data, ci, err := src.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			// A capture cut mid-packet (tcpdump killed, a file copied while
			// written): keep what came before.
			d.unseen("cut-short", 1)
			break
		}
		d.info.Packets++
		d.packet(lt, data, ci)
	}
	return d.finish(), nil
}

// decoder tracks the TCP connections of a capture as its packets come.
type decoder struct {
	opt   Options
	info  result.Capture
	live  map[flowKey]*stream
	order []*stream
}

type flowKey struct{ a, b netip.AddrPort }

func newDecoder(opt Options) *decoder {
	d := &decoder{opt: opt, live: map[flowKey]*stream{}}
	d.info.Ports = slices.Clone(opt.Ports)
	return d
}

func (d *decoder) unseen(kind string, n int64) {
	if d.info.Unseen == nil {
		d.info.Unseen = map[string]int64{}
	}
	d.info.Unseen[kind] += n
}

func (d *decoder) wanted(port uint16) bool {
	return len(d.opt.Ports) == 0 || slices.Contains(d.opt.Ports, int(port))
}

func (d *decoder) packet(lt layers.LinkType, data []byte, ci gopacket.CaptureInfo) {
	p := gopacket.NewPacket(data, lt, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
	var srcIP, dstIP netip.Addr
	var ipPayload int // the TCP segment's length on the wire, header included
	switch ip := p.NetworkLayer().(type) {
	case *layers.IPv4:
		srcIP, _ = netip.AddrFromSlice(ip.SrcIP.To4())
		dstIP, _ = netip.AddrFromSlice(ip.DstIP.To4())
		ipPayload = int(ip.Length) - int(ip.IHL)*4
	case *layers.IPv6:
		srcIP, _ = netip.AddrFromSlice(ip.SrcIP)
		dstIP, _ = netip.AddrFromSlice(ip.DstIP)
		ipPayload = int(ip.Length)
	default:
		d.unseen("not-tcp", 1)
		return
	}
	tl, ok := p.TransportLayer().(*layers.TCP)
	if !ok {
		d.unseen("not-tcp", 1)
		return
	}
	src := netip.AddrPortFrom(srcIP, uint16(tl.SrcPort))
	dst := netip.AddrPortFrom(dstIP, uint16(tl.DstPort))
	if !d.wanted(src.Port()) && !d.wanted(dst.Port()) {
		d.unseen("other-ports", 1)
		return
	}
	payload := tl.Payload
	size := ipPayload - int(tl.DataOffset)*4 // bytes the segment carried
	if size < len(payload) || ipPayload <= 0 {
		size = len(payload) // TSO-sized or odd headers: trust what was captured
	}
	if size > len(payload) {
		d.unseen("truncated", 1)
	}
	seg := segment{t: ci.Timestamp, seq: tl.Seq, ack: tl.Ack, data: slices.Clone(payload), size: size,
		syn: tl.SYN, ackf: tl.ACK, fin: tl.FIN, rst: tl.RST}
	d.segment(src, dst, seg)
}

func (d *decoder) segment(src, dst netip.AddrPort, seg segment) {
	s, fromClient := d.find(src, dst)
	if seg.syn && !seg.ackf {
		if s != nil && s.client == src && s.synSeen && seg.seq == s.c.isn {
			s.add(true, seg) // a retransmitted SYN
			return
		}
		// A new connection (or the 4-tuple reused after the last one ended).
		s = &stream{client: src, server: dst, start: seg.t}
		d.live[flowKey{src, dst}] = s
		d.order = append(d.order, s)
		s.add(true, seg)
		return
	}
	if s == nil {
		// The capture began after this connection's SYN.
		client, server := src, dst
		if d.wanted(src.Port()) && !d.wanted(dst.Port()) || len(d.opt.Ports) == 0 && src.Port() < dst.Port() {
			client, server = dst, src
		}
		s = &stream{client: client, server: server, start: seg.t, partial: true}
		d.live[flowKey{client, server}] = s
		d.order = append(d.order, s)
		fromClient = src == client
	}
	s.add(fromClient, seg)
}

func (d *decoder) find(src, dst netip.AddrPort) (*stream, bool) {
	if s, ok := d.live[flowKey{src, dst}]; ok {
		return s, true
	}
	if s, ok := d.live[flowKey{dst, src}]; ok {
		return s, false
	}
	return nil, false
}

func (d *decoder) finish() *Capture {
	c := &Capture{}
	for _, s := range d.order {
		if s.partial {
			d.unseen("began-before-capture", 1)
			continue
		}
		conn, problems := s.decode()
		for kind, n := range problems {
			d.unseen(kind, n)
		}
		if conn != nil {
			c.Conns = append(c.Conns, conn)
		}
	}
	d.info.Conns = int64(len(c.Conns))
	c.Info = d.info
	return c
}

// sinceStart is a time's offset from a reference, for messages.
func sinceStart(t, ref time.Time) time.Duration { return t.Sub(ref) }
