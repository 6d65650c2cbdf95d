package wire

import (
	"net/netip"
	"slices"
	"time"
)

// segment is one captured TCP segment.
type segment struct {
	t                   time.Time
	seq, ack            uint32
	data                []byte // as captured (may be cut by the snap length)
	size                int    // payload bytes the segment carried
	syn, ackf, fin, rst bool
}

// stream is one TCP connection as the capture saw it.
type stream struct {
	client, server netip.AddrPort
	start          time.Time
	partial        bool // began before the capture: no SYN
	synSeen        bool
	synAck         time.Time // the first SYN-ACK
	c, s           half      // client's and server's direction
}

// half is one direction of a connection: its segments in arrival order.
type half struct {
	isn    uint32
	hasISN bool
	segs   []segment
	fin    time.Time // first FIN
	rst    time.Time // first RST
}

func (s *stream) add(fromClient bool, seg segment) {
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
	}
	if seg.fin && h.fin.IsZero() {
		h.fin = seg.t
	}
	if seg.rst && h.rst.IsZero() {
		h.rst = seg.t
	}
	if seg.size > 0 {
		h.segs = append(h.segs, seg)
	}
}

// chunk is a run of a direction's bytes that first arrived together.
type chunk struct {
	off, end int // byte offsets in the direction's stream
	t        time.Time
}

// flow is a direction's bytes in sequence order, with when each arrived.
type flow struct {
	bytes  []byte  // up to the first gap; bytes a snap length cut are zero
	chunks []chunk // in arrival order, new bytes only
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
		skip := seen - p.off
		data := make([]byte, p.size)
		copy(data, p.data)
		f.bytes = append(f.bytes, data[skip:]...)
		seen = p.off + p.size
	}
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
