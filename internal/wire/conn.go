package wire

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"time"

	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// Phase names the wire adds to tlsbench's own: what follows a TLS
// handshake is encrypted, and its messages cannot be told apart (flights
// only); "data" is a plaintext protocol the decoder does not read.
const (
	PhaseEncrypted = "encrypted"
	PhaseData      = "data"
)

// Protocols a connection spoke before or instead of TLS.
const (
	ProtoPostgres = "postgres"
	ProtoMySQL    = "mysql"
	ProtoTLS      = "tls" // TLS from the first byte
	ProtoHTTP     = "http"
	ProtoPlain    = "plain"
)

// Conn is one decoded connection.
type Conn struct {
	Client, Server netip.AddrPort
	Protocol       string
	// Trace holds the phases with tlsbench's names and round-trip rule
	// (netx.Conn), from the SYN to the client's FIN.
	Trace netx.Trace
	// RTT is the TCP handshake's round trip, from the client's SYN to its
	// ACK of the SYN-ACK as the capture saw them (Wireshark's iRTT): the
	// whole round trip wherever the capture was made, by the client (the
	// SYN-ACK is the wait), by the server (the ACK is) or between.
	RTT time.Duration
	// ClientSide is where the capture point lies on that round trip: the
	// share of it between the SYN and the SYN-ACK, 1 at the client, 0 at
	// the server.
	ClientSide float64
	// TLS facts, nil Negotiated for a plain connection.
	Negotiated    *result.Negotiated
	Offered       *result.Offered
	HelloRetry    bool
	TicketOffered bool
	Resumed       bool
	// ClientCert is "sent", "none" (TLS 1.2 shows it) or "" (unknown:
	// TLS 1.3 encrypts it).
	ClientCert     string
	CertChainBytes int
	// AbbreviatedDrops and AbbreviatedTicket are, for a full TLS 1.2
	// handshake, the bytes a resumed (abbreviated) one would leave out,
	// and those its ClientHello would add, -1 where the capture does not
	// show them (abbreviated); 0 and 0 for any other handshake.
	AbbreviatedDrops, AbbreviatedTicket int
	// Negotiation is how a PostgreSQL connection began TLS: "direct"
	// (PostgreSQL 17+: a ClientHello at once, ALPN postgresql), "" with an
	// SSLRequest first, as plan.Variant spells it.
	Negotiation string
	// Flights counts the client turns after the handshake that
	// encryption hides; Answers are the server's answers to them, in
	// order (a long connection's tail left out): the encrypted login's
	// pattern (package advise) is in their sizes.
	Flights int
	Answers []Answer
	Split   []result.PhaseSplit
}

// Answer is one encrypted flight of the server's after the handshake: when
// it began to arrive and its bytes (TLS records, headers included) until
// the next answer began.
type Answer struct {
	At    time.Time
	Bytes int
}

// mark is a phase boundary: the phase named starts at t.
type mark struct {
	name string
	t    time.Time
}

// view is a connection's two directions, assembled, with its turns.
type view struct {
	s      *stream
	c, srv flow
	// turns are when each answer began to arrive (clock); waits the
	// client's waits for them, the TCP handshake's first.
	turns []time.Time
	waits []span
	// tailTurns and tailWait are those of a long connection's tail
	// (stream.tail), all in the phase before the close.
	tailTurns int
	tailWait  time.Duration
	// serverFirst: the server spoke before the client (MySQL's greeting).
	serverFirst bool
	closeAt     time.Time // the client began to close
	end         time.Time // the client's FIN (or RST)
}

// decode decomposes a connection; nil (with the reason counted) when it
// cannot be.
func (s *stream) decode() (*Conn, map[string]int64) {
	problems := map[string]int64{}
	if s.tail != nil {
		for k, n := range s.tail.problems {
			problems[k] += n
		}
	}
	if s.synAck.IsZero() {
		problems["no-answer"]++ // refused or never answered
		return nil, problems
	}
	v := &view{s: s, c: s.c.assemble(problems), srv: s.s.assemble(problems)}
	// The client's FIN or RST ends it, or the server's RST (a reset
	// connection gets no FIN).
	v.end = s.end()
	if v.end.IsZero() {
		problems["ended-after-capture"]++
		return nil, problems
	}
	if v.c.gap || v.srv.gap || s.tail != nil && (s.tail.c.gap || s.tail.s.gap) {
		return nil, problems // counted as lost
	}
	v.timeline()
	conn := &Conn{Client: s.client, Server: s.server, RTT: s.synAck.Sub(s.start), ClientSide: 1}
	if !s.ack.IsZero() && s.ack.After(s.synAck) {
		conn.RTT = s.ack.Sub(s.start)
		conn.ClientSide = float64(s.synAck.Sub(s.start)) / float64(conn.RTT)
	}
	marks, ok := v.phases(conn)
	// A tail is tallied as part of the phase before the close: every
	// other boundary must come before it.
	if ok && s.tail != nil && len(marks) > 1 && marks[len(marks)-2].t.After(s.tail.from) {
		ok = false
	}
	if !ok {
		problems["undecodable"]++
		return nil, problems
	}
	conn.Trace = v.trace(marks)
	conn.Split = v.split(conn.Trace, conn.RTT, conn.ClientSide)
	return conn, problems
}

func first(ts ...time.Time) time.Time {
	var f time.Time
	for _, t := range ts {
		if !t.IsZero() && (f.IsZero() || t.Before(f)) {
			f = t
		}
	}
	return f
}

// event is a chunk of either direction, for the timeline.
type event struct {
	t      time.Time
	client bool
}

func (v *view) events() []event {
	var ev []event
	for _, c := range v.c.chunks {
		ev = append(ev, event{c.t, true})
	}
	for _, c := range v.srv.chunks {
		ev = append(ev, event{c.t, false})
	}
	slices.SortStableFunc(ev, func(a, b event) int { return a.t.Compare(b.t) })
	return ev
}

// isServerFirst says whether the server spoke before the client.
func (v *view) isServerFirst() bool {
	return len(v.srv.chunks) > 0 && (len(v.c.chunks) == 0 || v.srv.chunks[0].t.Before(v.c.chunks[0].t))
}

// timeline runs the clock over the connection's chunks up to its end,
// then takes a tail's tallies.
func (v *view) timeline() {
	v.serverFirst = v.isServerFirst()
	k := newClock(v.s, v.serverFirst)
	v.waits = []span{{v.s.start, v.s.synAck}}
	for _, e := range v.events() {
		if e.t.After(v.end) {
			break
		}
		turn, w, waited := k.event(e.t, e.client)
		if turn {
			v.turns = append(v.turns, e.t)
		}
		if waited {
			v.waits = append(v.waits, w)
		}
	}
	if t := v.s.tail; t != nil {
		k = t.clock
		v.tailTurns, v.tailWait = t.turns, t.wait
		if !t.straddle.a.IsZero() {
			v.waits = append(v.waits, t.straddle)
		}
	}
	// The client begins to close with its bytes after the server's last
	// answer (a Terminate, COM_QUIT, close_notify) or with its FIN.
	v.closeAt = v.end
	if !k.closeAt.IsZero() && k.closeAt.Before(v.end) {
		v.closeAt = k.closeAt
	}
}

// answered is when the latest answer at or before t began to arrive, not
// before from (the phase's start), as netx.Conn's MarkAnswer.
func (v *view) answered(t, from time.Time) time.Time {
	a := from
	for _, r := range v.turns {
		if r.After(t) {
			break
		}
		if r.After(a) {
			a = r
		}
	}
	return a
}

// phases finds the connection's phase boundaries and its TLS facts.
func (v *view) phases(conn *Conn) ([]mark, bool) {
	s := v.s
	m := []mark{{netx.PhaseTCP, s.start}}
	next := func(name string, t time.Time) {
		if t.Before(m[len(m)-1].t) {
			t = m[len(m)-1].t
		}
		m = append(m, mark{name, t})
	}
	cb, sb := v.c.bytes, v.srv.bytes
	tlsC, tlsS := -1, -1 // where TLS starts in each direction
	switch {
	case len(cb) >= 8 && binary.BigEndian.Uint32(cb[0:4]) == 8 &&
		(binary.BigEndian.Uint32(cb[4:8]) == 80877103 || binary.BigEndian.Uint32(cb[4:8]) == 80877104):
		conn.Protocol = ProtoPostgres
		next("startup", s.synAck)
		if len(sb) == 0 {
			return nil, false
		}
		answer := v.srv.at(0)
		if sb[0] == 'S' {
			next(netx.PhaseTLSHandshake, answer)
			tlsC, tlsS = 8, 1
		} else {
			// 'N' (or 'G' refused): the login goes on in plain text.
			next("auth", answer)
			return v.postgresPlain(m, 8, 1)
		}
	case len(cb) >= 8 && binary.BigEndian.Uint32(cb[4:8]) == 196608:
		conn.Protocol = ProtoPostgres
		next("startup", s.synAck)
		if len(sb) == 0 {
			return nil, false
		}
		next("auth", v.srv.at(0))
		return v.postgresPlain(m, 0, 0)
	case v.serverFirst && len(sb) > 5 && sb[4] == 10:
		conn.Protocol = ProtoMySQL
		next("greeting", s.synAck)
		greeting := 4 + (int(sb[0]) | int(sb[1])<<8 | int(sb[2])<<16)
		after := v.srv.at(0)
		if len(cb) >= 36 && int(cb[0])|int(cb[1])<<8|int(cb[2])<<16 == 32 && binary.LittleEndian.Uint32(cb[4:8])&0x0800 != 0 {
			next(netx.PhaseTLSHandshake, after)
			tlsC, tlsS = 36, greeting
		} else {
			next("auth", after)
			return v.mysqlPlain(m)
		}
	case len(cb) >= 6 && cb[0] == recHandshake && cb[1] == 3 && cb[5] == msgClientHello:
		conn.Protocol = ProtoTLS
		next(netx.PhaseTLSHandshake, s.synAck)
		tlsC, tlsS = 0, 0
	case isHTTPRequest(cb):
		conn.Protocol = ProtoHTTP
		next("request", s.synAck)
		if len(v.srv.chunks) > 0 {
			next("response", v.srv.chunks[0].t)
		}
	default:
		conn.Protocol = ProtoPlain
		next(PhaseData, s.synAck)
	}
	if tlsC >= 0 {
		if !v.readHandshake(conn, tlsC, tlsS) {
			return nil, false
		}
		if conn.Protocol == ProtoTLS && slices.Contains(conn.Offered.ALPN, "postgresql") {
			conn.Protocol, conn.Negotiation = ProtoPostgres, plan.NegotiationDirect // PostgreSQL 17+
		}
		// The handshake ends where the server's last handshake flight began
		// to arrive, before the client's first application_data record (TLS
		// 1.3: its encrypted Finished).
		th := readTLS(cb, tlsC)
		fin := th.firstRecord(recApplicationData, tlsC)
		if fin < 0 {
			return nil, false
		}
		sent := v.c.at(fin)
		next(PhaseEncrypted, v.answered(sent, m[len(m)-1].t))
		for i, r := range v.turns {
			if r.After(sent) && r.Before(v.closeAt) {
				conn.Flights++
				until := v.closeAt
				if i+1 < len(v.turns) {
					until = minTime(until, v.turns[i+1])
				}
				conn.Answers = append(conn.Answers, Answer{At: r, Bytes: v.srv.between(r, until)})
			}
		}
		conn.Flights += v.tailTurns
	}
	next(netx.PhaseClose, v.closeAt)
	return m, true
}

// readHandshake fills the connection's TLS facts from the records in
// clear.
func (v *view) readHandshake(conn *Conn, tlsC, tlsS int) bool {
	ct, st := readTLS(v.c.bytes, tlsC), readTLS(v.srv.bytes, tlsS)
	chm, ok := ct.msg(msgClientHello, 0)
	if !ok {
		return false
	}
	recBytes := 0
	if len(ct.records) > 0 {
		recBytes = 5 + ct.records[0].length
	}
	ch, err := parseClientHello(chm.body, recBytes)
	if err != nil {
		return false
	}
	conn.Offered = &ch.offered
	conn.TicketOffered = ch.ticketOffered
	shm, ok := st.msg(msgServerHello, 0)
	if !ok {
		return false
	}
	sh, err := parseServerHello(shm.body)
	if err != nil {
		return false
	}
	if sh.retry {
		conn.HelloRetry = true
		if shm, ok = st.msg(msgServerHello, 1); !ok {
			return false
		}
		if sh, err = parseServerHello(shm.body); err != nil {
			return false
		}
	}
	n := &result.Negotiated{Version: tlsVersionName(sh.version), Suite: suiteName(sh.suite),
		Group: plan.GroupLabel(sh.group), ClientHelloBytes: recBytes, HelloRetry: conn.HelloRetry, ALPN: sh.alpn}
	if sh.version == 0x0304 {
		conn.Resumed = sh.psk
	} else {
		cert, hasCert := st.msg(msgCertificate, 0)
		conn.Resumed = !hasCert && len(sh.sessionID) > 0
		if hasCert {
			conn.CertChainBytes, n.PeerKey, _ = certChain(cert.body)
		}
		if !conn.Resumed {
			conn.AbbreviatedDrops, conn.AbbreviatedTicket = abbreviated(ct, st, ch, sh)
		}
		if ske, ok := st.msg(msgServerKeyExchange, 0); ok {
			n.Group = plan.GroupLabel(ecdheGroup(ske.body))
		}
		conn.ClientCert = "none"
		if cc, ok := ct.msg(msgCertificate, 0); ok {
			if _, key, sent := certChain(cc.body); sent {
				conn.ClientCert, n.ClientCert = "sent", key
				if key == "" {
					n.ClientCert = "unknown key"
				}
			}
		}
	}
	conn.Negotiated = n
	return true
}

func tlsVersionName(v uint16) string {
	switch v {
	case 0x0304:
		return "TLS 1.3"
	case 0x0303:
		return "TLS 1.2"
	case 0x0302:
		return "TLS 1.1"
	case 0x0301:
		return "TLS 1.0"
	}
	return "0x" + string("0123456789abcdef"[v>>12]) + string("0123456789abcdef"[v>>8&15]) +
		string("0123456789abcdef"[v>>4&15]) + string("0123456789abcdef"[v&15])
}

// postgresPlain finds a plaintext login's end: the client's first message
// after the server's ReadyForQuery starts query (its time less what the
// client did since the answer arrived belongs to query, as pgdrv marks it).
func (v *view) postgresPlain(m []mark, cOff, sOff int) ([]mark, bool) {
	cb, sb := v.c.bytes, v.srv.bytes
	rfq := -1
	for p := sOff; p+5 <= len(sb); {
		n := int(binary.BigEndian.Uint32(sb[p+1 : p+5]))
		if sb[p] == 'Z' {
			rfq = p
			break
		}
		p += 1 + n
	}
	if rfq < 0 {
		return nil, false
	}
	// The StartupMessage has no type byte; typed messages follow it.
	p := cOff
	if p+4 <= len(cb) {
		p += int(binary.BigEndian.Uint32(cb[p : p+4]))
	}
	rfqAt := v.srv.at(rfq)
	query := time.Time{}
	for p+5 <= len(cb) {
		at := v.c.at(p)
		if at.After(rfqAt) || at.Equal(rfqAt) {
			if cb[p] != 'X' {
				query = at
			}
			break
		}
		p += 1 + int(binary.BigEndian.Uint32(cb[p+1:p+5]))
	}
	last := m[len(m)-1].t
	if !query.IsZero() {
		m = append(m, mark{"query", v.answered(query, last)})
	}
	return v.closeMark(m), true
}

// mysqlPlain finds a plaintext login's end: the client's first command
// (sequence id 0) after its HandshakeResponse.
func (v *view) mysqlPlain(m []mark) ([]mark, bool) {
	cb := v.c.bytes
	p := 0
	first := true
	for p+5 <= len(cb) {
		n := int(cb[p]) | int(cb[p+1])<<8 | int(cb[p+2])<<16
		if !first && cb[p+3] == 0 {
			if cb[p+4] != 0x01 { // not COM_QUIT
				at := v.c.at(p)
				m = append(m, mark{"query", v.answered(at, m[len(m)-1].t)})
			}
			break
		}
		first = false
		p += 4 + n
	}
	return v.closeMark(m), true
}

func (v *view) closeMark(m []mark) []mark {
	t := v.closeAt
	if t.Before(m[len(m)-1].t) {
		t = m[len(m)-1].t
	}
	return append(m, mark{netx.PhaseClose, t})
}

func isHTTPRequest(b []byte) bool {
	for _, m := range []string{"GET ", "POST ", "PUT ", "HEAD ", "DELETE ", "OPTIONS ", "PATCH "} {
		if len(b) >= len(m) && string(b[:len(m)]) == m {
			return true
		}
	}
	return false
}

// trace turns the marks into phases with their round trips: a turn counts
// for the phase current when its answer arrives (a turn at a boundary for
// the phase it ends). The phases tile the connection, from its SYN to
// its end, so that they add up to its time.
func (v *view) trace(m []mark) netx.Trace {
	tr := netx.Trace{Start: v.s.start, End: v.end}
	turns := append([]time.Time{v.s.synAck}, v.turns...)
	at := func(i int) time.Time {
		if i >= len(m) {
			return v.end
		}
		return minTime(v.end, m[i].t)
	}
	for i, k := range m {
		start, end := at(i), at(i+1)
		p := netx.Phase{Name: k.name, Start: start, Duration: end.Sub(start)}
		for _, r := range turns {
			if r.After(start) && !r.After(end) || i == 0 && r.Equal(start) {
				p.RoundTrips++
			}
		}
		if i == len(m)-2 {
			p.RoundTrips += v.tailTurns
		}
		tr.Phases = append(tr.Phases, p)
	}
	for _, c := range v.c.chunks {
		tr.Sent += int64(c.end - c.off)
	}
	for _, c := range v.srv.chunks {
		tr.Received += int64(c.end - c.off)
	}
	if t := v.s.tail; t != nil {
		tr.Sent, tr.Received = tr.Sent+t.sent, tr.Received+t.recv
	}
	return tr
}

// split divides each phase's time among the client, the network and the
// server. At the capture point a phase is the client's turns (from an
// answer, or the start, to its next bytes) and its waits for the answers;
// each round trip's network time lies in the waits as far as the capture
// is from the server (clientSide of the TCP handshake's round trip) and in
// the turns for the rest: a capture on the server sees the network in the
// client's turns, one on the client in its waits.
func (v *view) split(tr netx.Trace, rtt time.Duration, clientSide float64) []result.PhaseSplit {
	var out []result.PhaseSplit
	for i, p := range tr.Phases {
		a, b := p.Start, p.Start.Add(p.Duration)
		var wait time.Duration
		if i == len(tr.Phases)-2 {
			wait = v.tailWait
		}
		for _, w := range v.waits {
			lo, hi := maxTime(a, w.a), minTime(b, w.b)
			if hi.After(lo) {
				wait += hi.Sub(lo)
			}
		}
		trips := time.Duration(p.RoundTrips) * rtt
		inWait := min(wait, time.Duration(float64(trips)*clientSide))
		inTurns := min(p.Duration-wait, trips-time.Duration(float64(trips)*clientSide))
		out = append(out, result.PhaseSplit{Phase: p.Name,
			Client: ms(p.Duration - wait - inTurns), Server: ms(wait - inWait), Network: ms(inWait + inTurns)})
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
