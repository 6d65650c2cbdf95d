package netx

import "time"

// WatchRecords makes the Conn hand a TLS layer above it at most one TLS
// record per Read, from a buffer of what the socket delivered, and note
// when the first bytes of each record arrived, until StopRecords: the TLS
// layer then never reads past the record it decrypts, and RecordRead is
// when the record behind the plaintext it returned last began to arrive.
// That tells an answer from the post-handshake messages before it (a TLS
// 1.3 server's NewSessionTicket), which a turn's first read cannot. Not
// safe to call during a Read.
func (c *Conn) WatchRecords() {
	if c.records == nil {
		c.records = &recordReader{mem: make([]byte, watchBuffer)}
	}
}

// watchBuffer is the most a watched Conn reads from the socket at once:
// the answer's first record is what matters, and it lies within the first
// few kilobytes after the post-handshake messages.
const watchBuffer = 4 << 10

// RecordRead is when the first bytes of the latest record handed out
// arrived; zero if the Conn is not watching records.
func (c *Conn) RecordRead() time.Time {
	if c.records == nil {
		return time.Time{}
	}
	return c.records.at
}

// StopRecords ends WatchRecords: once its buffer is empty the Conn reads
// the socket directly again.
func (c *Conn) StopRecords() {
	switch {
	case c.records == nil:
	case c.records.lo == c.records.hi:
		c.records = nil
	default:
		c.records.stop = true
	}
}

// recordReader holds mem[lo:hi], read from the socket and not handed out
// yet; arrived says when each part came: mem[..arrived[i].end] at
// arrived[i].at.
type recordReader struct {
	mem     []byte
	lo, hi  int
	arrived []arrival
	left    int       // bytes of the current record still to hand out, header included
	at      time.Time // when the current record's first byte arrived
	stop    bool
}

type arrival struct {
	end int
	at  time.Time
}

const recordHeaderLen = 5

func (r *recordReader) read(c *Conn, p []byte) (int, error) {
	if r.stop && r.lo == r.hi {
		c.records = nil
		return c.Read(p)
	}
	if r.left == 0 {
		// A record begins: its header says how long it is.
		if err := r.fill(c, recordHeaderLen); err != nil {
			if r.lo == r.hi {
				return 0, err
			}
			// What there is, then the error on the next Read.
			return r.take(p, r.hi-r.lo), nil
		}
		h := r.mem[r.lo:]
		r.left = recordHeaderLen + (int(h[3])<<8 | int(h[4]))
		r.at = r.arrival(r.lo)
	}
	if r.lo == r.hi {
		if err := r.fill(c, 1); err != nil {
			return 0, err
		}
	}
	n := r.take(p, min(r.hi-r.lo, r.left))
	r.left -= n
	return n, nil
}

// fill reads the socket until n bytes are buffered.
func (r *recordReader) fill(c *Conn, n int) error {
	for r.hi-r.lo < n {
		if r.hi == len(r.mem) {
			// Move what is left to the front.
			k := copy(r.mem, r.mem[r.lo:r.hi])
			for i := range r.arrived {
				r.arrived[i].end -= r.lo
			}
			r.lo, r.hi = 0, k
		}
		k, at, err := c.read(r.mem[r.hi:])
		if k > 0 {
			r.hi += k
			r.arrived = append(r.arrived, arrival{r.hi, at})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// take hands out n buffered bytes into p (as many as fit).
func (r *recordReader) take(p []byte, n int) int {
	n = copy(p, r.mem[r.lo:r.lo+n])
	r.lo += n
	for len(r.arrived) > 0 && r.arrived[0].end <= r.lo {
		r.arrived = r.arrived[1:]
	}
	if r.lo == r.hi {
		r.lo, r.hi, r.arrived = 0, 0, r.arrived[:0]
	}
	return n
}

// arrival is when the buffered byte at i arrived.
func (r *recordReader) arrival(i int) time.Time {
	for _, a := range r.arrived {
		if a.end > i {
			return a.at
		}
	}
	return time.Time{}
}
