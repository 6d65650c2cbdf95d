package wire

import (
	"net/netip"
	"slices"
	"time"
)

// What one connection may hold, so that a capture decodes in memory
// bounded by the connections open at once, not by its length: the bytes
// of each direction that are read (handshakes and logins fit many times
// over), and the segments kept one by one before the rest are only
// tallied (the tail).
const (
	keepBytes    = 32 << 10
	headSegments = 256
	// maxAhead bounds the segments of a tail kept while they wait for a
	// hole before them to fill: more is a loss at the capture point.
	maxAhead = 64
)

// segment is one captured TCP segment.
type segment struct {
	t                   time.Time
	seq, ack            uint32
	data                []byte // as captured (may be cut by the snap length), nil past keepBytes
	size                int    // payload bytes the segment carried
	syn, ackf, fin, rst bool
}

// stream is one TCP connection as the capture saw it.
type stream struct {
	client, server netip.AddrPort
	start          time.Time
	partial        bool // began before the capture: no SYN; nothing kept
	synSeen        bool
	synAck         time.Time // the first SYN-ACK
	// ack is the client's first segment after the SYN-ACK: the
	// handshake's ACK, alone or with data.
	ack  time.Time
	c, s half // client's and server's direction
	// last is the latest packet's time; done says the connection was
	// decoded (what still comes of it, the last ACKs, is ignored).
	last time.Time
	done bool
	// tail tallies the segments past the first headSegments.
	tail *tail
}

// half is one direction of a connection: its segments in arrival order.
type half struct {
	isn    uint32
	hasISN bool
	segs   []segment
	fin    time.Time // first FIN
	rst    time.Time // first RST
}

// end is when the client's FIN or RST, or the server's RST, ended the
// connection; zero while it has not.
func (s *stream) end() time.Time { return first(s.c.fin, s.c.rst, s.s.rst) }

// over says whether nothing more of the connection can come but ACKs: a
// reset, or a FIN each way.
func (s *stream) over() bool {
	return !s.c.rst.IsZero() || !s.s.rst.IsZero() || !s.c.fin.IsZero() && !s.s.fin.IsZero()
}

func (s *stream) add(fromClient bool, seg segment, payload []byte) {
	s.last = seg.t
	h := &s.s
	if fromClient {
		h = &s.c
	}
	switch {
	case seg.syn && fromClient:
		s.synSeen = true
		h.isn, h.hasISN = seg.seq, true
	case seg.syn && seg.ackf && !fromClient:
		if s.synAck.IsZero() {
			s.synAck = seg.t
			h.isn, h.hasISN = seg.seq, true
		}
	case fromClient && !s.synAck.IsZero() && s.ack.IsZero():
		s.ack = seg.t
	}
	end := s.end()
	if seg.fin && h.fin.IsZero() {
		h.fin = seg.t
	}
	if seg.rst && h.rst.IsZero() {
		h.rst = seg.t
	}
	if seg.size == 0 || s.partial {
		return
	}
	// Past the end nothing is read: a long connection's last segments
	// (a server that writes on after the client's FIN) are not kept.
	past := !end.IsZero() && seg.t.After(end)
	switch n := len(s.c.segs) + len(s.s.segs); {
	case s.tail != nil:
		if !past {
			s.tail.add(s, fromClient, seg)
		}
		return
	case past && n >= headSegments:
		return
	}
	// Keep the bytes that are read: those within keepBytes of the start.
	if off := int(int32(seg.seq - h.isn - 1)); h.hasISN && off >= 0 && off < keepBytes {
		seg.data = slices.Clone(payload[:min(len(payload), keepBytes-off)])
	}
	h.segs = append(h.segs, seg)
	if n := len(s.c.segs) + len(s.s.segs); n >= headSegments && end.IsZero() && n%32 == 0 {
		s.startTail(n >= 2*headSegments)
	}
}

// chunk is a run of a direction's bytes that first arrived together.
type chunk struct {
	off, end int // byte offsets in the direction's stream
	t        time.Time
}

// flow is a direction's bytes in sequence order, with when each arrived.
type flow struct {
	bytes  []byte  // up to the first gap and keepBytes; bytes a snap length cut are zero
	chunks []chunk // in arrival order, new bytes only
	seen   int     // bytes contiguous from the start
	gap    bool    // bytes are missing (lost before the capture point)
}

// at is when the byte at offset off first arrived (the zero time past the
// end).
func (f *flow) at(off int) time.Time {
	for _, c := range f.chunks {
		if off >= c.off && off < c.end {
			return c.t
		}
	}
	return time.Time{}
}

// between counts the bytes that arrived from from (included) to until.
func (f *flow) between(from, until time.Time) int {
	n := 0
	for _, c := range f.chunks {
		if !c.t.Before(from) && c.t.Before(until) {
			n += c.end - c.off
		}
	}
	return n
}

// assemble puts a direction's segments in sequence order, counting
// retransmissions, reordering and gaps.
func (h *half) assemble(problems map[string]int64) flow {
	var f flow
	if !h.hasISN {
		return f
	}
	base := h.isn + 1
	type piece struct {
		off   int
		data  []byte
		size  int
		t     time.Time
		index int
	}
	pieces := make([]piece, 0, len(h.segs))
	maxEnd := 0
	for i, sg := range h.segs {
		off := int(int32(sg.seq - base))
		if off < 0 {
			continue // before the stream: a keep-alive probe or junk
		}
		if off < maxEnd && off+sg.size > maxEnd {
			problems["retransmitted"]++
		} else if off < maxEnd {
			// Bytes already beyond this point arrived first: either a
			// retransmission of what was seen or a segment overtaken.
			covered := false
			for _, p := range pieces {
				if p.off <= off && p.off+p.size >= off+sg.size {
					covered = true
					break
				}
			}
			if covered {
				problems["retransmitted"]++
			} else {
				problems["reordered"]++
			}
		}
		maxEnd = max(maxEnd, off+sg.size)
		pieces = append(pieces, piece{off: off, data: sg.data, size: sg.size, t: sg.t, index: i})
	}
	// Arrival order tells when bytes came; sequence order what they say.
	seen := 0 // bytes contiguous from 0, in sequence order
	var byArrival []chunk
	sorted := slices.Clone(pieces)
	slices.SortStableFunc(sorted, func(a, b piece) int { return a.off - b.off })
	for _, p := range sorted {
		if p.off > seen {
			f.gap = true
			problems["lost"]++
			break
		}
		if p.off+p.size <= seen {
			continue
		}
		// Only the first keepBytes are read; past them, sizes count.
		if seen < keepBytes {
			data := make([]byte, min(p.off+p.size, keepBytes)-p.off)
			copy(data, p.data)
			f.bytes = append(f.bytes, data[seen-p.off:]...)
		}
		seen = p.off + p.size
	}
	f.seen = seen
	// The bytes up to an offset are readable when every byte before it
	// has arrived (TCP delivers in order): each arrival that extends the
	// readable prefix makes a chunk at its time.
	covered := 0
	var pending []piece
	for _, p := range pieces {
		pending = append(pending, p)
		start := covered
		for grew := true; grew; {
			grew = false
			for _, q := range pending {
				if q.off <= covered && q.off+q.size > covered {
					covered = min(q.off+q.size, seen)
					grew = true
				}
			}
		}
		pending = slices.DeleteFunc(pending, func(q piece) bool { return q.off+q.size <= covered })
		if covered > start {
			byArrival = append(byArrival, chunk{off: start, end: covered, t: p.t})
		}
	}
	f.chunks = byArrival
	return f
}

// span is a stretch of time.
type span struct{ a, b time.Time }

// clock follows a connection's chunks in time order, as netx.Conn counts
// them: a turn is an answer that follows client bytes (the client's ACK
// of the SYN-ACK counts as its word); a wait runs from client bytes (or
// the client's ACK of the SYN-ACK when the server speaks first) to the next answer; the
// close begins with the client's first bytes after the last answer.
//
// Client bytes that reach the capture point sooner after an answer than
// half its round trip to the client (the SYN-ACK to the ACK) left the
// client before that answer reached it: they were pipelined with the
// bytes it answered (a Redis client's HELLO and CLIENT SETINFO, sent as
// three TLS records, which a capture on the server sees answered one by
// one), and their answer is no turn of its own, as the client counts it.
// On the client, or on loopback, that round trip is next to nothing.
type clock struct {
	wrote, waiting bool
	since          time.Time
	lastAnswer     time.Time
	closeAt        time.Time // zero until client bytes follow lastAnswer
	pipelined      time.Duration
}

func newClock(s *stream, serverFirst bool) clock {
	established := s.established()
	return clock{wrote: true, waiting: serverFirst, since: established, lastAnswer: established,
		pipelined: established.Sub(s.synAck) / 2}
}

// established is when the capture point saw the TCP handshake end: the
// client's ACK of the SYN-ACK. On the client that is the SYN-ACK's
// arrival; on the server a round trip after it, so that a server which
// speaks first (MySQL's greeting) is waited for from the ACK, not charged
// the ACK's way through the network.
func (s *stream) established() time.Time {
	if !s.ack.IsZero() && s.ack.After(s.synAck) {
		return s.ack
	}
	return s.synAck
}

// event moves the clock by one chunk: whether it was a turn, and the wait
// it ended, if any.
func (k *clock) event(t time.Time, client bool) (turn bool, wait span, waited bool) {
	if client {
		k.wrote = k.wrote || t.Sub(k.lastAnswer) >= k.pipelined
		if !k.waiting {
			k.waiting, k.since = true, t
		}
		if k.closeAt.IsZero() {
			k.closeAt = t
		}
		return false, span{}, false
	}
	turn, k.wrote = k.wrote, false
	if k.waiting {
		wait, waited, k.waiting = span{k.since, t}, true, false
	}
	k.lastAnswer, k.closeAt = t, time.Time{}
	return turn, wait, waited
}

// tail tallies a long connection's segments after its first
// headSegments, as they arrive: its turns and waits (all within the phase
// before the close: a long connection's handshake and login are done by
// then), where its close begins, and its bytes.
type tail struct {
	from  time.Time // the last kept segment's arrival
	c, s  tailHalf
	clock clock
	// turns and wait are the tail's; straddle the wait open when the tail
	// began, once answered.
	turns      int
	wait       time.Duration
	straddle   span
	sent, recv int64
	problems   map[string]int64
}

// tailHalf is one direction of a tail: the next byte awaited, and the
// segments that came beyond a hole.
type tailHalf struct {
	next  int
	ahead []chunk
	gap   bool
}

// startTail makes s tally its later segments instead of keeping them,
// once what it kept is whole (a hole waits for its bytes, up to twice
// headSegments: then it is lost, and the tail says so).
func (s *stream) startTail(force bool) {
	scratch := map[string]int64{}
	c, srv := s.c.assemble(scratch), s.s.assemble(scratch)
	if (c.gap || srv.gap) && !force {
		return
	}
	v := &view{s: s, c: c, srv: srv}
	ev := v.events()
	t := &tail{from: s.last, problems: map[string]int64{}}
	t.c = tailHalf{next: c.seen, gap: c.gap}
	t.s = tailHalf{next: srv.seen, gap: srv.gap}
	t.clock = newClock(s, v.isServerFirst())
	for _, e := range ev {
		t.clock.event(e.t, e.client)
	}
	s.tail = t
}

// add tallies one segment of the tail.
func (t *tail) add(s *stream, fromClient bool, seg segment) {
	h, isn := &t.s, s.s.isn
	if fromClient {
		h, isn = &t.c, s.c.isn
	}
	off := int(int32(seg.seq - isn - 1))
	end := off + seg.size
	switch {
	case h.gap || off < 0:
		return
	case end <= h.next:
		t.problems["retransmitted"]++
		return
	case off > h.next:
		t.problems["reordered"]++
		if len(h.ahead) >= maxAhead {
			h.gap = true
			t.problems["lost"]++
			return
		}
		h.ahead = append(h.ahead, chunk{off: off, end: end, t: seg.t})
		return
	}
	before := h.next
	h.next = end
	for grew := true; grew; {
		grew = false
		for _, a := range h.ahead {
			if a.off <= h.next && a.end > h.next {
				h.next, grew = a.end, true
			}
		}
	}
	h.ahead = slices.DeleteFunc(h.ahead, func(a chunk) bool { return a.end <= h.next })
	if fromClient {
		t.sent += int64(h.next - before)
	} else {
		t.recv += int64(h.next - before)
	}
	turn, w, waited := t.clock.event(seg.t, fromClient)
	if turn {
		t.turns++
	}
	switch {
	case !waited:
	case w.a.After(t.from):
		t.wait += w.b.Sub(w.a)
	default:
		t.straddle = w // began among the kept segments
	}
}
