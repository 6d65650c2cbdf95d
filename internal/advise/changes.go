package advise

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// The changes, in the order. Round trips are the protocols' own
// counts (TLS 1.2's full handshake 2, TLS 1.3's 1, PostgreSQL's
// SSLRequest 1, a HelloRetryRequest 1), checked by the wire's tests and
// tlsbench's own; the time that goes with a round trip is the
// connection's RTT at the capture point.

// Key-share sizes of the post-quantum hybrid X25519MLKEM768
// (draft-ietf-tls-ecdhe-mlkem): the client's ML-KEM-768 encapsulation key
// and X25519 share, the server's ML-KEM-768 ciphertext and X25519 share.
// Protocol sizes, not measurements.
const (
	hybridClientShare = 1184 + 32
	hybridServerShare = 1088 + 32
	x25519Share       = 32
)

// poolBelow is the median operations per connection under which a pool
// applies: a handshake for fewer than this many operations.
const poolBelow = 10

// change is one change the advice may give.
type change struct {
	name string
	// applies says why the change applies to p, or (false) why it does
	// not; "" with false: nothing worth saying (it is left out).
	applies func(p *profile) (string, bool)
	// conn says how the change changes one connection: the round trips
	// it saves and the client's and server's time that go with them, ms
	// (a round trip's own time is the connection's RTT); ok false for a
	// connection it does not change.
	conn  func(s sample) (rt int, local float64, ok bool)
	model string
	// bytes is the predicted change of bytes per connection the protocol
	// fixes (negative: fewer); ok false where only a calibration can tell.
	bytes func(p *profile) (float64, bool)
	// from and to are the calibration variants whose CPU figures the
	// change is predicted from, given the variant like what was observed.
	pair func(p *profile, like sel) (from, to sel)
}

var changes = []change{
	{
		name: "TLS 1.2 → 1.3",
		applies: func(p *profile) (string, bool) {
			n := p.count(func(s sample) bool { return s.version == "TLS 1.2" && !s.resumed })
			if n == 0 {
				return notTLS12(p)
			}
			return fmt.Sprintf("%d of %d connections made a full TLS 1.2 handshake: 2 round trips, where TLS 1.3 takes 1", n, p.Conns), true
		},
		conn: func(s sample) (int, float64, bool) {
			return 1, 0, s.version == "TLS 1.2" && !s.resumed
		},
		model: "a round trip less per full TLS 1.2 handshake, at the connection's RTT; the client's and server's time kept",
		pair: func(_ *profile, like sel) (sel, sel) {
			from, to := like, like
			from.tls, to.tls = "1.2", "1.3"
			return from, to
		},
	},
	{
		name: "RSA → ECDSA P-256 server key",
		applies: func(p *profile) (string, bool) {
			if p.TLSConns == 0 {
				return "", false
			}
			if !strings.HasPrefix(p.ServerKey, "rsa") {
				return fmt.Sprintf("the server's key is %s already (%s)", p.ServerKey, keyFrom(p)), false
			}
			return fmt.Sprintf("the server signs every full handshake with its %s key (%s); an ECDSA P-256 signature costs it less, the client's verification more", p.ServerKey, keyFrom(p)), true
		},
		conn:  func(s sample) (int, float64, bool) { return 0, 0, s.tls && !s.resumed },
		model: "no round trip changes; the server's and client's CPU per full handshake from the calibration",
		bytes: func(*profile) (float64, bool) { return 0, false },
		pair: func(p *profile, like sel) (sel, sel) {
			from, to := like, like
			from.key, to.key = p.ServerKey, "ecdsa-p256"
			return from, to
		},
	},
	{
		name: "session resumption on",
		applies: func(p *profile) (string, bool) {
			full := p.count(func(s sample) bool { return s.tls && !s.resumed })
			switch {
			case p.TLSConns == 0:
				return "", false
			case p.Engine == "postgres":
				return "PostgreSQL never resumes a TLS session (it turns session tickets and its session cache off): every connection is a full handshake", false
			case full == 0:
				return fmt.Sprintf("every TLS connection (%d) resumed a session already", p.TLSConns), false
			}
			why := fmt.Sprintf("%d of %d TLS connections made a full handshake (%d resumed): a client that keeps its session resumes without the certificate and its signature", full, p.TLSConns, p.Resumed)
			if p.count(func(s sample) bool { return s.abbrevDrops > 0 && s.abbrevTicket < 0 }) > 0 {
				why += "; bytes: the server issued no session ticket in the capture (its clients asked for none), so the ticket a resumed ClientHello carries, of the server's size, is not subtracted"
			}
			return why, true
		},
		conn: func(s sample) (int, float64, bool) {
			if !s.tls || s.resumed {
				return 0, 0, false
			}
			if s.version == "TLS 1.2" {
				return 1, 0, true // an abbreviated handshake: 1 round trip
			}
			return 0, 0, true // TLS 1.3 resumes in 1 round trip, as it does in full
		},
		model: "TLS 1.2's abbreviated handshake takes 1 round trip of 2, and leaves out the certificates, the key exchange and ServerHelloDone, their bytes as each connection's capture shows them, less the session ticket its ClientHello carries (the NewSessionTicket's); TLS 1.3 resumes in as many round trips as a full one; CPU (and TLS 1.3's bytes) from the calibration",
		bytes: func(p *profile) (float64, bool) {
			if p.version != "TLS 1.2" {
				return 0, false // TLS 1.3 encrypts what a resumption leaves out
			}
			saved := 0
			for _, s := range p.samples {
				if s.version == "TLS 1.2" && !s.resumed {
					saved += s.abbrevDrops - max(0, s.abbrevTicket)
				}
			}
			return -float64(saved) / float64(len(p.samples)), saved > 0
		},
		pair: func(_ *profile, like sel) (sel, sel) {
			from, to := like, like
			from.resume, to.resume = "off", "on"
			return from, to
		},
	},
	{
		name: "avoid HelloRetryRequest",
		applies: func(p *profile) (string, bool) {
			if p.HelloRetries == 0 {
				return "", false
			}
			return fmt.Sprintf("%d of %d TLS connections paid a HelloRetryRequest: the client's first key share is not of a group the server takes (it chose %s); offering %s's share first saves a round trip and a key share", p.HelloRetries, p.TLSConns, p.group, p.group), true
		},
		conn:  func(s sample) (int, float64, bool) { return 1, 0, s.helloRetry },
		model: "a round trip less per connection that paid a HelloRetryRequest, at its RTT",
		pair: func(_ *profile, like sel) (sel, sel) {
			from, to := like, like
			from.helloRetry, to.helloRetry = "yes", "no"
			return from, to
		},
	},
	{
		name: "PostgreSQL 17+ direct TLS",
		applies: func(p *profile) (string, bool) {
			if p.Engine != "postgres" || p.SSLRequests == 0 {
				return "", false
			}
			return fmt.Sprintf("%d of %d connections sent an SSLRequest and waited for its answer before the handshake; PostgreSQL 17+ with a libpq 17+ client (sslnegotiation=direct) starts TLS at once", p.SSLRequests, p.Conns), true
		},
		conn:  func(s sample) (int, float64, bool) { return 1, s.startup, s.sslRequest },
		model: "the SSLRequest's round trip and the client's time in it go; the server's there, its backend's start, stays",
		pair: func(_ *profile, like sel) (sel, sel) {
			from, to := like, like
			from.negotiation, to.negotiation = "postgres", "direct"
			return from, to
		},
	},
	{
		name: "pooling",
		applies: func(p *profile) (string, bool) {
			if p.Ops.P50 >= poolBelow {
				return "", false
			}
			pool := "a client-side pool"
			if p.Engine == "postgres" {
				pool += " or a local PgBouncer"
			}
			return fmt.Sprintf("a connection ran %s at the median (%s): a new connection every few operations; %s opens its connections once, and the setup's round trips go with them", plural1(num(p.Ops.P50), "operation"), p.OpsKind, pool), true
		},
		conn: func(s sample) (int, float64, bool) {
			// An encrypted login goes too: its round trips, and the rest of
			// its time (the client's and server's).
			return s.setupRT + s.loginRT, s.setupLocal + max(0, s.login-float64(s.loginRT)*s.rtt), true
		},
		model: "the setup phases (tcp, a protocol's preamble, the TLS handshake, the login) go whole: their round trips and the client's and server's time in them; a pool's own churn is left out",
		pair: func(_ *profile, like sel) (sel, sel) {
			from, to := like, like
			to.perConn = -1 // the calibration's most operations per connection
			return from, to
		},
	},
	{
		name: "post-quantum hybrid off",
		applies: func(p *profile) (string, bool) {
			if !isHybrid(p.group) {
				return "", false
			}
			return fmt.Sprintf("the TLS connections negotiated %s: its key shares add %d bytes from the client and %d from the server to every full handshake, and ML-KEM's CPU", p.group, hybridClientShare, hybridServerShare-x25519Share), true
		},
		conn:  func(s sample) (int, float64, bool) { return 0, 0, s.tls && !s.resumed },
		model: "no round trip changes; the key shares' bytes are the protocol's sizes; CPU from the calibration",
		bytes: func(p *profile) (float64, bool) {
			return -float64(hybridClientShare+hybridServerShare-x25519Share) * p.share(func(s sample) bool { return s.tls && !s.resumed }), true
		},
		pair: func(p *profile, like sel) (sel, sel) {
			from, to := like, like
			from.group, to.group = p.group, plan.GroupX25519
			return from, to
		},
	},
	{
		name: "post-quantum hybrid on",
		applies: func(p *profile) (string, bool) {
			if p.version != "TLS 1.3" || isHybrid(p.group) {
				return "", false
			}
			return fmt.Sprintf("the TLS 1.3 connections negotiated %s, which a recorded session's future decryption by a quantum computer would break; X25519MLKEM768 protects against that at a cost in bytes and CPU", p.group), true
		},
		conn:  func(s sample) (int, float64, bool) { return 0, 0, s.tls && !s.resumed },
		model: "no round trip changes (a server that takes the hybrid needs no HelloRetryRequest for it); the key shares' bytes are the protocol's sizes; CPU from the calibration",
		bytes: func(p *profile) (float64, bool) {
			add := hybridServerShare - x25519Share
			if p.offered == nil || !slices.ContainsFunc(p.offered.KeyShares, func(k result.KeyShare) bool { return isHybrid(k.Group) }) {
				add += hybridClientShare
			}
			return float64(add) * p.share(func(s sample) bool { return s.tls && !s.resumed }), true
		},
		pair: func(p *profile, like sel) (sel, sel) {
			from, to := like, like
			from.group, to.group = p.group, plan.GroupX25519MLKEM768
			return from, to
		},
	},
	{
		name: "TLS off (the bound)",
		applies: func(p *profile) (string, bool) {
			if p.TLSConns == 0 {
				return "", false
			}
			return fmt.Sprintf("%d of %d connections use TLS: what all of TLS costs them now, the most any change of it can save", p.TLSConns, p.Conns), true
		},
		conn: func(s sample) (int, float64, bool) {
			if !s.tls {
				return 0, 0, false
			}
			rt, local := s.handshakeRT, s.handshake
			if s.sslRequest {
				rt, local = rt+1, local+s.startup
			}
			return rt, local, true
		},
		model: "the TLS handshake (and PostgreSQL's SSLRequest) go: their round trips and the client's and server's time in them (but for a PostgreSQL backend's start, in the SSLRequest's); the encryption of what follows from the calibration's CPU only",
		pair: func(_ *profile, like sel) (sel, sel) {
			from, to := like, like
			to.tls, to.key = "off", ""
			return from, to
		},
	},
	{
		name: "TLS off → on (TLS 1.3)",
		applies: func(p *profile) (string, bool) {
			if p.TLSConns > 0 {
				return "", false
			}
			extra := "a TLS 1.3 handshake adds 1 round trip"
			if p.Engine == "postgres" {
				extra += ", and PostgreSQL's SSLRequest another (none with direct TLS, PostgreSQL 17+)"
			}
			return fmt.Sprintf("none of the %d connections uses TLS: what turning it on would cost (%s)", p.Conns, extra), true
		},
		conn: func(s sample) (int, float64, bool) {
			if s.tls {
				return 0, 0, false
			}
			return -1, 0, true
		},
		model: "a TLS 1.3 handshake's round trip more per connection (PostgreSQL: its SSLRequest's too), at the connection's RTT; the handshake's CPU from the calibration",
		pair: func(_ *profile, like sel) (sel, sel) {
			from, to := like, like
			from.tls, to.tls = "off", "1.3"
			return from, to
		},
	},
}

// connOf is c.conn on p: turning TLS on costs PostgreSQL its SSLRequest's
// round trip too.
func (c change) connOf(p *profile) func(s sample) (int, float64, bool) {
	if c.name == "TLS off → on (TLS 1.3)" && p.Engine == "postgres" {
		return func(s sample) (int, float64, bool) {
			rt, local, ok := c.conn(s)
			return rt - 1, local, ok
		}
	}
	return c.conn
}

func notTLS12(p *profile) (string, bool) {
	if p.TLSConns == 0 {
		return "", false
	}
	if p.version == "TLS 1.3" {
		return fmt.Sprintf("the TLS connections negotiated TLS 1.3 already (%d of %d)", p.Versions[0].Conns, p.TLSConns), false
	}
	return "", false
}

func isHybrid(group string) bool { return strings.Contains(strings.ToUpper(group), "MLKEM") }

func keyFrom(p *profile) string {
	switch p.ServerKeyFrom {
	case "capture":
		return "seen in the TLS 1.2 certificate"
	case "--server-key":
		return "as --server-key says"
	}
	return "assumed: TLS 1.3 encrypts the certificate; give --server-key to say"
}

// count counts the samples f holds for.
func (p *profile) count(f func(sample) bool) int {
	n := 0
	for _, s := range p.samples {
		if f(s) {
			n++
		}
	}
	return n
}

// share is the fraction of the samples f holds for.
func (p *profile) share(f func(sample) bool) float64 {
	return float64(p.count(f)) / float64(len(p.samples))
}

// advise predicts c on p: the setup figures from the round-trip model,
// bytes where the protocol fixes them, CPU from cal (nil: none).
func (c change) advise(p *profile, cal *calibration) (result.Change, bool) {
	why, ok := c.applies(p)
	if !ok {
		return result.Change{Change: c.name, Applies: why, NotApplicable: true}, why != ""
	}
	out := result.Change{Change: c.name, Applies: why, Model: c.model}
	conn := c.connOf(p)
	now := make([]float64, len(p.samples))
	pred := make([]float64, len(p.samples))
	var rt float64
	for i, s := range p.samples {
		now[i], pred[i] = s.setup, s.setup
		if n, local, ok := conn(s); ok {
			out.Conns++
			rt += float64(n)
			pred[i] = s.setup - float64(n)*s.rtt - local
		}
	}
	out.RoundTripsSaved = round3(rt / float64(len(p.samples)))
	nowS, predS := stats.Summarize(now), stats.Summarize(pred)
	out.Setup = result.Figure{Now: f64(nowS.Mean), NowCI: ci(nowS.CI95), Predicted: f64(predS.Mean), PredictedCI: ci(predS.CI95)}
	out.P95 = result.Figure{Now: f64(stats.Quantile(now, 0.95)), Predicted: f64(stats.Quantile(pred, 0.95))}
	out.Bytes.Now = f64(p.Bytes.Mean)
	if c.bytes != nil {
		if d, ok := c.bytes(p); ok {
			out.Bytes.Predicted = f64(p.Bytes.Mean + d)
		}
	}
	from, to := c.pair(p, p.like())
	out.Needs = from.String() + " → " + to.String()
	if cal != nil {
		cal.predict(&out, p, from, to)
	}
	return out, true
}

// Advise is p's advice: the changes that apply, ranked by the setup time
// they save per connection, then those that do not, with why.
func (p *profile) advise(cal *calibration) []result.Change {
	var yes, no []result.Change
	for _, c := range changes {
		a, keep := c.advise(p, cal)
		switch {
		case !keep:
		case a.NotApplicable:
			no = append(no, a)
		default:
			yes = append(yes, a)
		}
	}
	slices.SortStableFunc(yes, func(a, b result.Change) int {
		x, _ := a.Setup.Saved()
		y, _ := b.Setup.Saved()
		return cmp.Compare(y, x)
	})
	return append(yes, no...)
}

func f64(x float64) *float64 { return &x }

// ci is an interval's half-width, nil where it has none (one value).
func ci(x float64) *float64 {
	if x != x {
		return nil
	}
	return &x
}

// plural1 is n (written) and word, plural unless n is "1".
func plural1(n, word string) string {
	if n == "1" {
		return n + " " + word
	}
	return n + " " + word + "s"
}

// num writes a count without a needless fraction.
func num(x float64) string {
	if x == float64(int64(x)) {
		return fmt.Sprint(int64(x))
	}
	return fmt.Sprintf("%.1f", x)
}
