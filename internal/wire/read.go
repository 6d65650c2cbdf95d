// Package wire decodes packet captures into connections, phases and round
// trips, for any client (libpq, OpenSSL, a proxy, tlsbench itself),
// captures them live while a command runs, and sets a run's own phases
// beside the wire's (connect --wire).
package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
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
	// MaxOpen caps the connections followed at once (0: DefaultMaxOpen):
	// the decoder keeps state for open connections only, and a connection
	// that opens past the cap is counted ("untracked"), not followed.
	MaxOpen int
	// Conn, if set, is given each connection decoded, as it ends.
	Conn func(*Conn)
}

// DefaultMaxOpen is how many connections the decoder follows at once by
// default: a 10,000-client storm fits; each costs a few kB (at most some
// 100 kB: bytes past the handshake are counted, not kept).
const DefaultMaxOpen = 20000

// maxRecord is the largest packet a capture file holds: libpcap's
// MAXIMUM_SNAPLEN. A record that claims more is damage, not a packet.
const maxRecord = 262144

// Capture is a decoded capture: its connections tallied by variant (see
// Result), and what it held (Info).
type Capture struct {
	Info   result.Capture
	groups map[groupKey]*group
	keys   []groupKey // in the order first seen
}

// ErrNotCapture says that a file is neither pcap nor pcapng.
var ErrNotCapture = errors.New("not a capture (neither pcap nor pcapng): give a file tcpdump -w wrote")

// DamagedError is a capture whose record at Offset cannot be a packet (a
// length past any snap length, a bad block): the file is damaged there.
type DamagedError struct {
	Offset  int64 // bytes into the file (pcapng: the block is at or before it)
	Packets int64 // the packets read before it
	Err     error
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("damaged capture at byte %d, after %d packets: %v", e.Offset, e.Packets, e.Err)
}

func (e *DamagedError) Unwrap() error { return e.Err }

// ReadFile decodes the capture in path.
func ReadFile(ctx context.Context, path string, opt Options) (*Capture, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := Decode(ctx, f, opt)
	if err != nil {
		return nil, err
	}
	c.Info.Source = filepath.Base(path)
	return c, nil
}

// packetSource reads a capture's packets; the data is valid until the
// next read.
type packetSource interface {
	ReadPacketData() ([]byte, gopacket.CaptureInfo, error)
	LinkType() layers.LinkType
}

// Decode reads a pcap or pcapng stream, in memory bounded by the
// connections open at once, checking ctx as it goes. A capture cut short
// (a truncated file) yields what came before, counted as "cut-short"; a
// record that cannot be a packet is a *DamagedError; a stream that is no
// capture at all ErrNotCapture.
func Decode(ctx context.Context, r io.Reader, opt Options) (*Capture, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	magic, err := br.Peek(4)
	if err != nil {
		return nil, ErrNotCapture
	}
	cr := &countReader{r: br, left: maxRecord + 1<<20}
	var src packetSource
	var snap uint32
	ng := bytes.Equal(magic, []byte{0x0a, 0x0d, 0x0d, 0x0a})
	if ng {
		ngr, err := pcapgo.NewNgReader(cr, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			return nil, fmt.Errorf("%w (%v)", ErrNotCapture, err)
		}
		src = ngr
		if ifc, err := ngr.Interface(0); err == nil {
			snap = ifc.SnapLength
		}
	} else {
		pr, err := newPcapReader(cr)
		if err != nil {
			return nil, err
		}
		src, snap = pr, pr.snap
	}
	d := newDecoder(opt)
	d.info.SnapLen = int(snap)
	lt := src.LinkType()
	for {
		if d.info.Packets%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		at := cr.n
		cr.left = maxRecord + 1<<20 // what one packet may take, blocks between included
		data, ci, err := src.ReadPacketData()
		if err == io.EOF && ci.CaptureLength == 0 {
			break
		}
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			if ci.CaptureLength > maxRecord {
				return nil, &DamagedError{Offset: at, Packets: d.info.Packets, Err: fmt.Errorf("a record claims %d bytes, more than any capture keeps (%d)", ci.CaptureLength, maxRecord)}
			}
			// A capture cut mid-packet (tcpdump killed, a file copied while
			// written): keep what came before.
			d.info.CutAt = at
			d.unseen("cut-short", 1)
			break
		}
		if err != nil {
			if ng {
				at = cr.n
			}
			return nil, &DamagedError{Offset: at, Packets: d.info.Packets, Err: err}
		}
		d.info.Packets++
		d.packet(lt, data, ci)
	}
	return d.finish(), nil
}

// countReader counts the bytes read through it, and refuses more than
// left: one packet's worth (a pcapng block claiming gigabytes is read no
// further).
type countReader struct {
	r    io.Reader
	n    int64
	left int64
}

var errTooLong = fmt.Errorf("a record or block is longer than any packet (%d bytes)", maxRecord)

func (c *countReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errTooLong
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.left -= int64(n)
	return n, err
}

// pcapReader reads classic pcap (tcpdump -w), checking each record's
// length before it reads the record.
type pcapReader struct {
	r     io.Reader
	order binary.ByteOrder
	nano  bool
	snap  uint32
	link  layers.LinkType
	hdr   [16]byte
	buf   []byte
}

func newPcapReader(r io.Reader) (*pcapReader, error) {
	var h [24]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, ErrNotCapture
	}
	p := &pcapReader{r: r}
	switch {
	case binary.LittleEndian.Uint32(h[:4]) == 0xa1b2c3d4:
		p.order = binary.LittleEndian
	case binary.BigEndian.Uint32(h[:4]) == 0xa1b2c3d4:
		p.order = binary.BigEndian
	case binary.LittleEndian.Uint32(h[:4]) == 0xa1b23c4d:
		p.order, p.nano = binary.LittleEndian, true
	case binary.BigEndian.Uint32(h[:4]) == 0xa1b23c4d:
		p.order, p.nano = binary.BigEndian, true
	default:
		return nil, ErrNotCapture
	}
	p.snap = p.order.Uint32(h[16:20])
	p.link = layers.LinkType(p.order.Uint32(h[20:24]) & 0xffff)
	return p, nil
}

func (p *pcapReader) LinkType() layers.LinkType { return p.link }

// ReadPacketData returns the next record: io.EOF at the end, with a
// CaptureLength when the file ends inside the record.
func (p *pcapReader) ReadPacketData() ([]byte, gopacket.CaptureInfo, error) {
	var ci gopacket.CaptureInfo
	n, err := io.ReadFull(p.r, p.hdr[:])
	switch {
	case err == io.EOF:
		return nil, ci, io.EOF
	case err != nil:
		ci.CaptureLength = n // cut inside the header
		return nil, ci, io.ErrUnexpectedEOF
	}
	sec, frac := int64(p.order.Uint32(p.hdr[0:4])), int64(p.order.Uint32(p.hdr[4:8]))
	if !p.nano {
		frac *= 1000
	}
	ci.Timestamp = time.Unix(sec, frac).UTC()
	ci.CaptureLength = int(p.order.Uint32(p.hdr[8:12]))
	ci.Length = int(p.order.Uint32(p.hdr[12:16]))
	if ci.CaptureLength > maxRecord {
		return nil, ci, fmt.Errorf("a record claims %d bytes, more than any capture keeps (%d)", ci.CaptureLength, maxRecord)
	}
	if cap(p.buf) < ci.CaptureLength {
		p.buf = make([]byte, ci.CaptureLength)
	}
	data := p.buf[:ci.CaptureLength]
	if _, err := io.ReadFull(p.r, data); err != nil {
		return nil, ci, io.ErrUnexpectedEOF
	}
	return data, ci, nil
}

// linger is how long, in capture time, a decoded connection is
// remembered (so that its last ACKs are not taken for a connection that
// began before the capture), and how long a connection the client closed
// waits for the server's FIN before it is decoded without it.
const linger = 2 * time.Second

// decoder follows the TCP connections of a capture as its packets come,
// and decodes each as it ends.
type decoder struct {
	// clock is the latest packet time seen: a record timed before it
	// (a damaged or merged capture) is taken as at it, so that no
	// connection's time runs backwards.
	clock   time.Time
	opt     Options
	max     int
	info    result.Capture
	live    map[flowKey]*stream
	open    int       // streams in live not yet decoded
	now     time.Time // the latest packet's time
	packets int64     // since the last sweep
	out     *Capture
}

type flowKey struct{ a, b netip.AddrPort }

func newDecoder(opt Options) *decoder {
	d := &decoder{opt: opt, max: opt.MaxOpen, live: map[flowKey]*stream{}, out: &Capture{groups: map[groupKey]*group{}}}
	if d.max <= 0 {
		d.max = DefaultMaxOpen
	}
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
	if ci.Timestamp.Before(d.clock) {
		ci.Timestamp = d.clock
	}
	d.clock = ci.Timestamp
	seg := segment{t: ci.Timestamp, seq: tl.Seq, ack: tl.Ack, size: size,
		syn: tl.SYN, ackf: tl.ACK, fin: tl.FIN, rst: tl.RST}
	d.segment(src, dst, seg, payload)
}

func (d *decoder) segment(src, dst netip.AddrPort, seg segment, payload []byte) {
	if seg.t.After(d.now) {
		d.now = seg.t
	}
	if d.packets++; d.packets >= 4096 {
		d.sweep(false)
	}
	s, fromClient := d.find(src, dst)
	if seg.syn && !seg.ackf {
		if s != nil && s.client == src && s.synSeen && seg.seq == s.c.isn {
			if !s.done {
				s.add(true, seg, payload) // a retransmitted SYN
			}
			return
		}
		// A new connection (or the 4-tuple reused after the last one ended).
		if s != nil && !s.done {
			d.close(s)
		}
		if !d.room() {
			d.unseen("untracked", 1)
			d.info.OpenCap = d.max
			return
		}
		s = &stream{client: src, server: dst, start: seg.t}
		d.track(s)
		s.add(true, seg, payload)
		return
	}
	switch {
	case s != nil && s.done:
		return // the last ACKs of a connection decoded
	case s == nil:
		// The capture began after this connection's SYN (or the
		// connection was not followed: the decoder was full).
		if !d.room() {
			return
		}
		client, server := src, dst
		if d.wanted(src.Port()) && !d.wanted(dst.Port()) || len(d.opt.Ports) == 0 && src.Port() < dst.Port() {
			client, server = dst, src
		}
		s = &stream{client: client, server: server, start: seg.t, partial: true}
		d.track(s)
		d.unseen("began-before-capture", 1)
		fromClient = src == client
	}
	s.add(fromClient, seg, payload)
	if s.over() {
		d.close(s)
	}
}

// track follows a new connection.
func (d *decoder) track(s *stream) {
	d.live[flowKey{s.client, s.server}] = s
	d.open++
}

// room says whether another connection may be followed, forgetting the
// connections that are over if need be.
func (d *decoder) room() bool {
	if d.open < d.max {
		return true
	}
	d.sweep(true)
	return d.open < d.max
}

// sweep forgets the decoded connections whose lingering is over and
// decodes those the client closed a while ago; full: forget every
// decoded connection (room is short).
func (d *decoder) sweep(full bool) {
	d.packets = 0
	var closing []*stream
	for k, s := range d.live {
		idle := d.now.Sub(s.last) > linger
		switch {
		case s.done && (idle || full):
			delete(d.live, k)
		case !s.done && idle && !s.end().IsZero():
			closing = append(closing, s)
		}
	}
	slices.SortFunc(closing, func(a, b *stream) int { return a.start.Compare(b.start) })
	for _, s := range closing {
		d.close(s)
	}
}

// close decodes a connection and keeps only what tells its last packets
// apart.
func (d *decoder) close(s *stream) {
	if s.done {
		return
	}
	s.done = true
	d.open--
	if !s.partial {
		conn, problems := s.decode()
		for kind, n := range problems {
			d.unseen(kind, n)
		}
		if conn != nil {
			d.out.add(conn)
			if d.opt.Conn != nil {
				d.opt.Conn(conn)
			}
		}
	}
	s.c.segs, s.s.segs, s.tail = nil, nil, nil
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

// finish decodes the connections still open at the end, in the order
// they began.
func (d *decoder) finish() *Capture {
	var open []*stream
	for _, s := range d.live {
		if !s.done {
			open = append(open, s)
		}
	}
	slices.SortFunc(open, func(a, b *stream) int { return a.start.Compare(b.start) })
	for _, s := range open {
		d.close(s)
	}
	d.live = nil
	c := d.out
	d.info.Conns = c.conns()
	c.Info = d.info
	return c
}
