// Package netx is the dialer every driver uses: it times each connection's
// phases, counts its round trips, sees TLS records, emulates latency,
// spreads loopback source addresses so that connect loops do not run out
// of ports, dials inside a network namespace, and lets a socket wait for
// its answers in the calling thread (poll(2)) instead of Go's poller; the
// SSH tunnels it can dial through, with their login from an ssh:// URL;
// and a relay on loopback that emulates the same latency for clients
// outside Go.
package netx

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Phase is one named stretch of a connection's life.
type Phase struct {
	Name       string
	Start      time.Time
	Duration   time.Duration
	RoundTrips int
}

// Trace is what a Conn saw, from dial start to Finish.
type Trace struct {
	Start    time.Time
	End      time.Time
	Phases   []Phase
	Sent     int64
	Received int64
}

// Total is the time from dial start to the end of the last phase.
func (t Trace) Total() time.Duration { return t.End.Sub(t.Start) }

// Phase returns the named phase, if the trace has it.
func (t Trace) Phase(name string) (Phase, bool) {
	for _, p := range t.Phases {
		if p.Name == name {
			return p, true
		}
	}
	return Phase{}, false
}

// Conn is a TCP connection that records the phases a driver marks and
// counts round trips: a round trip (a client "turn") is a read that follows
// a write, i.e. the client spoke and now waits for the server's answer. The
// count goes to the phase current when the answer is read.
//
// A driver may read and write at once (pgx reads in the background while
// a write is slow); the bookkeeping is guarded, the I/O is not.
type Conn struct {
	net.Conn
	mu     sync.Mutex
	start  time.Time
	phases []Phase
	open   bool // the last phase has not ended
	end    time.Time

	wrote    bool      // the client has written since its last read
	turnRead time.Time // when the answer of the latest turn arrived
	turns    int64     // client turns over the whole connection
	sent     int64
	received int64

	onAnswer string // the phase the next turn's answer starts (MarkOnAnswer)
	oneWay   bool   // the current phase expects no answer (MarkOneWay)

	sniff   *recordSniffer // non-nil while waiting for TLS record boundaries
	records *recordReader  // non-nil while the server's TLS records are timed (WatchRecords)

	// hello is the size of the first TLS record the client wrote in the
	// tls-handshake phase: its ClientHello; helloNext waits for it.
	hello     int
	helloNext bool

	thread atomic.Pointer[threadConn] // non-nil: I/O waits in its thread (WaitInThread)
	polled atomic.Pointer[pollSocket] // non-nil: the TCP socket in the poller (see pollSocket), the original or the one WaitInPoller gave back

	deadlineMu sync.Mutex // orders deadlines with StopOn's
	stopped    bool       // StopOn's context is cancelled

	certAsked atomic.Bool // the server asked for a client certificate (ClientCertConfig)
}

func newConn(raw net.Conn, start, connected time.Time) *Conn {
	// The TCP handshake is one round trip: SYN, SYN-ACK. The client's
	// final ACK counts as its word: a server that speaks first (MySQL's
	// greeting) answers it one round trip later.
	return openedConn(raw, Phase{Name: PhaseTCP, Start: start, RoundTrips: 1}, connected, true)
}

// openedConn starts a Conn whose first phase, the opening, is already over.
// spoke says whether the opening ended with the client's word, so that the
// server's first bytes answer it.
func openedConn(raw net.Conn, opening Phase, opened time.Time, spoke bool) *Conn {
	c := &Conn{Conn: raw, start: opening.Start, open: true, wrote: spoke, turns: int64(opening.RoundTrips)}
	c.phases = append(c.phases, opening)
	c.mark(opened, "")
	if tc, ok := raw.(*net.TCPConn); ok {
		if ps := newPollSocket(tc); ps != nil {
			c.polled.Store(ps)
		}
	}
	return c
}

// Phase names shared by drivers, so that reports can line them up.
const (
	PhaseTCP          = "tcp"
	PhaseTunnel       = "tunnel" // a channel opened through an SSH connection
	PhaseTLSHandshake = "tls-handshake"
	PhaseClose        = "close"
)

// Mark ends the current phase now and starts the named one: for a phase
// that ends by the client's own doing (close, reading a response's body).
// A phase that waits for the server ends where its answer began to arrive:
// see MarkAnswer and MarkOnAnswer.
func (c *Conn) Mark(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mark(time.Now(), name)
}

// MarkOneWay is Mark for a phase whose messages get no answer by their
// protocol (PostgreSQL's Terminate, MySQL's COM_QUIT, a TLS close_notify):
// what the server sends in it (its own close_notify) ends no turn, whether
// or not a background reader happens to read it.
func (c *Conn) MarkOneWay(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mark(time.Now(), name)
	c.oneWay = true
}

// MarkAt is Mark at a time already taken, e.g. TurnRead.
func (c *Conn) MarkAt(t time.Time, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mark(t, name)
}

// MarkAnswer ends the current phase where the last answer it waited for
// began to arrive, and starts the named one there: what the client did
// since (reading the rest of the answer, preparing its next message) is
// the new phase's. A phase that got no answer ends where it began.
func (c *Conn) MarkAnswer(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mark(c.answered(), name)
}

// MarkOnAnswer makes the next bytes from the server (the answer the
// client waits for, or a greeting it need not ask for) end the current
// phase as they arrive, and start the named one: for a phase whose end the
// driver does not see, such as PostgreSQL's startup, which ends inside pgx.
func (c *Conn) MarkOnAnswer(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onAnswer = name
}

// answered is when the latest answer of the current phase began to
// arrive, or the phase's start if it has none.
func (c *Conn) answered() time.Time {
	if n := len(c.phases); n > 0 && c.open && c.phases[n-1].Start.After(c.turnRead) {
		return c.phases[n-1].Start
	}
	return c.turnRead
}

func (c *Conn) mark(t time.Time, name string) {
	if n := len(c.phases); n > 0 {
		last := &c.phases[n-1]
		if c.open {
			last.Duration = t.Sub(last.Start)
		} else {
			// Phases are contiguous: what ran between the end of the last
			// phase and this mark (building a TLS client, say) belongs to
			// the new one.
			t = last.Start.Add(last.Duration)
		}
	}
	c.open = name != ""
	c.oneWay = false
	if c.open {
		c.phases = append(c.phases, Phase{Name: name, Start: t})
	}
	if name == PhaseTLSHandshake && c.hello == 0 {
		c.helloNext = true
	}
}

// Started is when the connection's dial began.
func (c *Conn) Started() time.Time { return c.start }

// ClientHelloBytes is the size of the client's first TLS handshake record,
// the ClientHello (header included), 0 before it: it grows from about 240
// bytes to about 1,500 with a post-quantum key share.
func (c *Conn) ClientHelloBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hello
}

// TurnRead is when the first bytes of the server's latest answer arrived.
func (c *Conn) TurnRead() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turnRead
}

// Read counts a round trip when it follows a write.
func (c *Conn) Read(p []byte) (int, error) {
	if c.records != nil {
		return c.records.read(c, p)
	}
	n, _, err := c.read(p)
	return n, err
}

// read reads the socket once and says when the bytes arrived; a read that
// follows a write is the answer of a turn, which counts for the phase
// current when it arrives. It may end that phase (MarkOnAnswer).
func (c *Conn) read(p []byte) (int, time.Time, error) {
	var n int
	var err error
	if t := c.thread.Load(); t != nil {
		c.mu.Lock()
		answer := c.wrote
		c.mu.Unlock()
		n, err = t.read(p, answer)
	} else {
		n, err = c.stream().Read(p)
	}
	if n == 0 {
		return n, time.Time{}, err
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.received += int64(n)
	if c.wrote && !c.oneWay {
		c.wrote = false
		c.turns++
		c.turnRead = now
		if k := len(c.phases); k > 0 {
			c.phases[k-1].RoundTrips++
		}
	}
	if c.onAnswer != "" {
		c.mark(now, c.onAnswer)
		c.onAnswer = ""
	}
	return n, now, err
}

// Write notes that the client spoke, and watches TLS record types when
// asked to (see SniffTLS).
//
// The client's word is recorded before its bytes can reach the server: a
// driver that reads in the background (pgx does while a write is in
// progress) may read the answer while the writer, descheduled after its
// system call, has not yet returned here, and that answer must still end
// a turn. Round trips are a property of the conversation, not of when the
// writer got a CPU back.
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.sniff != nil {
		c.sniff.scan(c, p)
	}
	if c.helloNext && len(p) >= 5 && p[0] == recordHandshake {
		c.hello, c.helloNext = 5+(int(p[3])<<8|int(p[4])), false
	}
	was := c.wrote
	c.wrote = true
	c.mu.Unlock()
	n, err := c.stream().Write(p)
	if f := afterWrite.Load(); f != nil {
		(*f)()
	}
	c.mu.Lock()
	if n > 0 {
		c.sent += int64(n)
	} else if !was {
		c.wrote = false // a write that sent nothing began no turn
	}
	c.mu.Unlock()
	return n, err
}

// afterWrite, when set, runs after each write's system call returns and
// before Write's bookkeeping ends: see DelayWrites.
var afterWrite atomic.Pointer[func()]

// DelayWrites makes every Conn's writer sleep d after its write system
// call returns, as a writer descheduled on a busy machine does; 0 stops.
// Tests use it to show that round trips do not depend on the writer's
// scheduling (a background reader may read the answer first).
func DelayWrites(d time.Duration) {
	if d <= 0 {
		afterWrite.Store(nil)
		return
	}
	f := func() { time.Sleep(d) }
	afterWrite.Store(&f)
}

// SniffTLS makes the Conn find the end of the TLS handshake by itself, for
// drivers that run TLS inside their own protocol (PostgreSQL's SSLRequest,
// MySQL's SSL request) and have started the tls-handshake phase: from the
// first handshake record the client writes (its ClientHello) it follows the
// records it writes, and the first of type application_data (TLS 1.3: the
// client's encrypted Finished; TLS 1.2: its first message after the
// handshake) ends tls-handshake where the server's last handshake flight
// began to arrive, and starts the phase named after.
func (c *Conn) SniffTLS(after string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sniff = &recordSniffer{after: after}
}

// Finish ends the last phase now and returns the trace.
func (c *Conn) Finish() Trace {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.end.IsZero() {
		c.mark(time.Now(), "")
		last := c.phases[len(c.phases)-1]
		c.end = last.Start.Add(last.Duration)
	}
	return Trace{Start: c.start, End: c.end, Phases: c.phases, Sent: c.sent, Received: c.received}
}

// Turns is the number of client turns (round trips) begun so far, all
// phases: those answered and the one waiting for its answer. The difference
// over a request and its answer is that request's own round trips, even
// when the answer to an earlier write arrives in between.
func (c *Conn) Turns() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wrote {
		return c.turns + 1
	}
	return c.turns
}

// Waiting reports whether the client's last write is still unanswered: a
// write now would join that turn instead of beginning one.
func (c *Conn) Waiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wrote
}

// Counters returns the bytes moved so far each way.
func (c *Conn) Counters() (sent, received int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent, c.received
}

// recordSniffer follows the TLS record layer of what the client writes.
type recordSniffer struct {
	after   string
	header  [5]byte
	have    int // header bytes collected
	skip    int // body bytes of the current record still to pass
	started bool
}

const (
	recordHandshake       = 0x16
	recordApplicationData = 0x17
)

func (s *recordSniffer) scan(c *Conn, p []byte) {
	if !s.started {
		// Before TLS every write is a whole message of the driver's own
		// protocol: look only at its start.
		s.have, s.skip = 0, 0
	}
	for len(p) > 0 {
		if s.skip > 0 {
			n := min(s.skip, len(p))
			s.skip -= n
			p = p[n:]
			continue
		}
		n := copy(s.header[s.have:], p)
		s.have += n
		p = p[n:]
		if s.have < len(s.header) {
			return
		}
		s.have = 0
		typ := s.header[0]
		s.skip = int(s.header[3])<<8 | int(s.header[4])
		switch {
		case typ == recordHandshake && !s.started && s.header[1] == 3:
			s.started = true
		case typ == recordApplicationData && s.started:
			c.mark(c.answered(), s.after)
			c.sniff = nil
			return
		case !s.started:
			// Not TLS (yet): the driver's own protocol; stop looking at
			// this write and wait for the next one.
			s.skip = 0
			return
		}
	}
}
