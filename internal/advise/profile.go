// Package advise turns a capture's decoded connections into each server endpoint's observed profile and predicts what each TLS change would save there.
package advise

import (
	"cmp"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
	"github.com/tlsbench/tlsbench/internal/tlsx"
	"github.com/tlsbench/tlsbench/internal/wire"
)

// setupPhases are the phases before a connection's operations: what a
// pool pays once instead of per connection.
var setupPhases = []string{netx.PhaseTCP, "startup", "greeting", "auth", netx.PhaseTLSHandshake}

// sample is what the advice needs of one decoded connection.
type sample struct {
	start      time.Time
	rtt, setup float64 // ms; setup is every phase but close
	ops        int
	bytes      int64
	tls        bool
	version    string // "TLS 1.2"
	resumed    bool
	helloRetry bool
	// sslRequest: a PostgreSQL TLS connection that sent an SSLRequest
	// first (not direct TLS).
	sslRequest bool
	// handshakeRT is the TLS handshake's round trips; handshake its
	// client's and server's time (its network's excluded), ms; startup
	// the client's of PostgreSQL's SSLRequest exchange (the server's
	// there is its accepting and forking a backend, which every
	// connection pays, SSLRequest or not: measured over a 44 ms link,
	// counting it predicted direct TLS to save 52 ms where it saved 45).
	handshakeRT        int
	handshake, startup float64
	// setupRT and setupLocal are the round trips and the client's and
	// server's time of the phases before the operations (setupPhases).
	setupRT    int
	setupLocal float64
	// loginRT and login are an encrypted login's round trips and time,
	// ms, from the handshake's end to its last answer; loginHow says how
	// they were told, or assumed (loginOf).
	loginRT  int
	login    float64
	loginHow string
	// abbrevDrops and abbrevTicket are a full TLS 1.2 handshake's bytes
	// that a resumed one would leave out and add (wire.Conn's
	// AbbreviatedDrops and AbbreviatedTicket).
	abbrevDrops, abbrevTicket int
}

func sampleOf(c *wire.Conn, engine string) sample {
	s := sample{start: c.Trace.Start, rtt: ms(c.RTT), bytes: c.Trace.Sent + c.Trace.Received,
		tls: c.Negotiated != nil, resumed: c.Resumed, helloRetry: c.HelloRetry,
		abbrevDrops: c.AbbreviatedDrops, abbrevTicket: c.AbbreviatedTicket}
	if s.tls {
		s.version = c.Negotiated.Version
		s.ops = c.Flights
		s.sslRequest = c.Protocol == wire.ProtoPostgres && c.Negotiation != plan.NegotiationDirect
		s.loginRT, s.login, s.loginHow = loginOf(c, engine)
		s.ops -= s.loginRT
	}
	local, client := map[string]float64{}, map[string]float64{}
	for _, sp := range c.Split {
		local[sp.Phase] += sp.Client + sp.Server
		client[sp.Phase] += sp.Client
	}
	for _, p := range c.Trace.Phases {
		switch {
		case p.Name == netx.PhaseClose:
			continue
		case slices.Contains(setupPhases, p.Name):
			s.setupRT += p.RoundTrips
			s.setupLocal += local[p.Name]
		case !s.tls:
			s.ops += p.RoundTrips // each a query or request
		}
		s.setup += ms(p.Duration)
		switch p.Name {
		case netx.PhaseTLSHandshake:
			s.handshakeRT, s.handshake = p.RoundTrips, local[p.Name]
		case "startup":
			s.startup = client[p.Name]
		}
	}
	return s
}

// The encrypted login of PostgreSQL: the client's StartupMessage and each
// message of its authentication is a flight the server answers, and the
// server's last answer carries AuthenticationOk with the ParameterStatus
// messages, BackendKeyData and ReadyForQuery (about 470 bytes over TLS
// with PostgreSQL 15's 13 parameters, 529 with 18's). Every answer before
// it is short: AuthenticationSASL about 65 bytes, SASLContinue about 115,
// AuthenticationMD5Password about 35. So the login ends with the first
// answer of at least pgLoginEnd bytes: SCRAM takes 3 round trips, md5 or
// a password in the clear 2, trust or a client certificate 1.
const (
	pgLoginEnd = 200
	// pgLoginAssumed is the login's round trips where no answer tells:
	// SCRAM, PostgreSQL 14+'s default password_encryption.
	pgLoginAssumed = 3
)

// The encrypted login of Redis: a client of a server with a password
// sends AUTH or HELLO first (pipelining CLIENT SETINFO with it), so the
// first flight is taken to be the login, as its answer's size does not
// tell a +OK from a GET's miss. ioredis then waits for INFO, its ready
// check, whose answer (about 5 KB from Redis 7) is the first flight's
// long answer: at least redisInfoAnswer bytes in the second flight is
// taken to be a ready check, which a pool's connection makes once too.
const redisInfoAnswer = 2000

// loginOf is a TLS connection's login after its handshake: its round
// trips, its time (ms) from the handshake's end to the login's last
// answer, and in words how it was told; "" for a protocol whose login
// the model does not tell apart (its flights count as operations).
// MySQL's login is assumed one round trip (the HandshakeResponse answered
// by OK: mysql_native_password, caching_sha2_password's fast path), as
// its answers' sizes do not tell an OK from a short result.
func loginOf(c *wire.Conn, engine string) (rt int, login float64, how string) {
	var i int // the login's last answer
	switch c.Protocol {
	case wire.ProtoPostgres:
		i = slices.IndexFunc(c.Answers, func(a wire.Answer) bool { return a.Bytes >= pgLoginEnd })
		if i < 0 {
			i, how = pgLoginAssumed-1, "assumed "
		}
	case wire.ProtoMySQL:
		i, how = 0, "assumed "
	default:
		if cmp.Or(engineOf(c), engine) != "redis" {
			return 0, 0, ""
		}
		how = "assumed "
		if len(c.Answers) > 1 && c.Answers[1].Bytes >= redisInfoAnswer {
			i = 1
		}
	}
	i = min(i, c.Flights-1, len(c.Answers)-1)
	if i < 0 {
		return 0, 0, "none seen: 0 round trips"
	}
	for _, p := range c.Trace.Phases {
		if p.Name == wire.PhaseEncrypted {
			login = max(0, ms(c.Answers[i].At.Sub(p.Start)))
		}
	}
	rt = i + 1
	switch {
	case c.Protocol == wire.ProtoMySQL:
		how += plural(rt, "round trip") + " (mysql_native_password, or caching_sha2_password's fast path)"
	case c.Protocol != wire.ProtoPostgres && rt == 2:
		how += "AUTH or HELLO, then a ready check (INFO, as ioredis sends): 2 round trips"
	case c.Protocol != wire.ProtoPostgres:
		how += "AUTH or HELLO: 1 round trip"
	case rt == 1:
		how += "trust or a client certificate: 1 round trip"
	case rt == 2:
		how += "md5 or a password in the clear: 2 round trips"
	case rt == 3:
		how += "SCRAM: 3 round trips"
	default:
		how += plural(rt, "round trip")
	}
	return rt, login, how
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// profile is one endpoint's connections, as samples, and its profile.
type profile struct {
	result.Profile
	samples []sample
	// offered is the first TLS connection's ClientHello.
	offered *result.Offered
	version string // the TLS version most connections negotiated
	group   string // the group most TLS connections negotiated
}

// engineOf names what a connection spoke as a driver does: the wire's
// protocol, and for TLS or an unread protocol from the first byte, ALPN
// and the engine's usual port.
func engineOf(c *wire.Conn) string {
	switch c.Protocol {
	case wire.ProtoPostgres:
		return "postgres"
	case wire.ProtoMySQL:
		return "mysql"
	case wire.ProtoHTTP:
		return "http"
	}
	if o := c.Offered; o != nil && slices.ContainsFunc(o.ALPN, func(a string) bool { return a == "h2" || strings.HasPrefix(a, "http/") }) {
		return "http"
	}
	switch c.Server.Port() {
	case 6379, 6380:
		return "redis"
	case 27017:
		return "mongodb"
	case 443, 8443:
		return "http"
	}
	return ""
}

// newProfile profiles one endpoint's connections; serverKey is
// --server-key ("" if not given), engine --engine: what the connections
// spoke where the capture does not tell it, which their login follows.
func newProfile(server netip.AddrPort, conns []*wire.Conn, serverKey, engine string) *profile {
	p := &profile{Profile: result.Profile{Server: server.String(), Conns: int64(len(conns))}}
	var versions, suites, groups, logins []string
	engines := map[string]int{}
	splits := map[string]*result.PhaseSplit{}
	var phases []string
	first, last := conns[0].Trace.Start, conns[0].Trace.End
	for _, c := range conns {
		s := sampleOf(c, engine)
		p.samples = append(p.samples, s)
		engines[engineOf(c)]++
		if p.Protocol == "" || c.Negotiated != nil && p.Protocol == wire.ProtoTLS {
			p.Protocol = c.Protocol
		}
		first, last = minTime(first, c.Trace.Start), maxTime(last, c.Trace.End)
		for _, sp := range c.Split {
			if _, ok := splits[sp.Phase]; !ok {
				splits[sp.Phase] = &result.PhaseSplit{Phase: sp.Phase}
				phases = append(phases, sp.Phase)
			}
			a := splits[sp.Phase]
			a.Client, a.Server, a.Network = a.Client+sp.Client, a.Server+sp.Server, a.Network+sp.Network
		}
		n := c.Negotiated
		if n == nil {
			continue
		}
		p.TLSConns++
		if p.offered == nil {
			p.offered = c.Offered
		}
		versions, suites, groups = append(versions, n.Version), append(suites, n.Suite), append(groups, n.Group)
		if c.HelloRetry {
			p.HelloRetries++
		}
		if c.Resumed {
			p.Resumed++
		}
		if c.ClientCert == "sent" {
			p.ClientCerts++
		}
		if s.sslRequest {
			p.SSLRequests++
		}
		if s.loginHow != "" {
			logins = append(logins, s.loginHow)
		}
		if c.CertChainBytes > 0 && p.CertChainBytes == 0 {
			p.CertChainBytes = c.CertChainBytes
		}
		if n.PeerKey != "" && p.ServerKey == "" {
			p.ServerKey, p.ServerKeyFrom = cmp.Or(tlsx.KeyTypeOf(n.PeerKey), n.PeerKey), "capture"
		}
	}
	p.Engine = mostOf(engines)
	if p.Engine == "" && engine != "" {
		p.Engine, p.EngineFrom = engine, "--engine"
	}
	p.ClientTLS = clientTLS(p.offered)
	p.Versions, p.Suites, p.Groups, p.Login = shares(versions), shares(suites), shares(groups), shares(logins)
	if len(p.Versions) > 0 {
		p.version = p.Versions[0].Name
	}
	if len(p.Groups) > 0 {
		p.group = p.Groups[0].Name
	}
	switch {
	case p.TLSConns == 0:
	case serverKey != "" && p.ServerKey == "":
		p.ServerKey, p.ServerKeyFrom = serverKey, "--server-key"
	case p.ServerKey == "":
		// TLS 1.3 encrypts the certificate: the most common server key.
		p.ServerKey, p.ServerKeyFrom = "rsa2048", "assumed"
	}
	n := float64(len(conns))
	for _, ph := range phases {
		a := splits[ph]
		p.Split = append(p.Split, result.PhaseSplit{Phase: ph, Client: round3(a.Client / n), Server: round3(a.Server / n), Network: round3(a.Network / n)})
	}
	p.Span = last.Sub(first).Seconds()
	p.Rate = rateOf(p.samples, p.Span)
	p.OpsKind = "round trips after the login (queries or requests)"
	switch {
	case p.TLSConns > 0 && len(p.Login) > 0:
		p.OpsKind = "queries: encrypted flights after the handshake less the login's (PostgreSQL's end told by the size of the server's last login answer)"
		if p.Engine == "redis" {
			p.OpsKind = "commands: encrypted flights after the handshake less the login's (a ready check told by the size of its INFO's answer)"
		}
	case p.TLSConns > 0:
		p.OpsKind = "encrypted flights after the handshake, the login's included"
	}
	p.Ops = dist(p.samples, func(s sample) float64 { return float64(s.ops) })
	p.RTT = dist(p.samples, func(s sample) float64 { return s.rtt })
	p.Setup = dist(p.samples, func(s sample) float64 { return s.setup })
	p.Bytes = dist(p.samples, func(s sample) float64 { return float64(s.bytes) })
	return p
}

// clientTLS is the TLS library a ClientHello looks like, by the groups
// it offers: OpenSSL offers X448, Go's crypto/tls never does, and since
// Go 1.24 offers X25519MLKEM768 by default.
func clientTLS(o *result.Offered) string {
	switch {
	case o == nil:
		return ""
	case slices.Contains(o.Groups, "X448"):
		return "OpenSSL"
	case slices.ContainsFunc(o.Groups, isHybrid):
		return "Go crypto/tls"
	}
	return ""
}

// rateOf counts the connections begun in each second from the first.
func rateOf(ss []sample, span float64) result.Rate {
	first := ss[0].start
	for _, s := range ss {
		first = minTime(first, s.start)
	}
	var r result.Rate
	for _, s := range ss {
		i := int(s.start.Sub(first) / time.Second)
		for len(r.PerSecond) <= i {
			r.PerSecond = append(r.PerSecond, 0)
		}
		r.PerSecond[i]++
	}
	if span > 0 {
		r.Mean = float64(len(ss)) / span
	}
	if span >= 2 {
		r.Peak = float64(slices.Max(r.PerSecond))
	}
	return r
}

// dist summarizes f over the samples: mean and nearest-rank quantiles.
func dist(ss []sample, f func(sample) float64) result.Dist {
	xs := make([]float64, len(ss))
	for i, s := range ss {
		xs[i] = f(s)
	}
	return result.Dist{Mean: stats.Summarize(xs).Mean, P50: stats.Quantile(xs, 0.5), P95: stats.Quantile(xs, 0.95),
		Min: slices.Min(xs), Max: slices.Max(xs)}
}

// shares counts each value, the most common first.
func shares(vs []string) []result.Share {
	var out []result.Share
	for _, v := range vs {
		if i := slices.IndexFunc(out, func(s result.Share) bool { return s.Name == v }); i >= 0 {
			out[i].Conns++
		} else {
			out = append(out, result.Share{Name: v, Conns: 1})
		}
	}
	slices.SortStableFunc(out, func(a, b result.Share) int { return cmp.Compare(b.Conns, a.Conns) })
	return out
}

func mostOf(m map[string]int) string {
	best, n := "", 0
	for k, c := range m {
		if c > n || c == n && k < best {
			best, n = k, c
		}
	}
	return best
}

// describe is the profile in one line, for errors and findings.
func (p *profile) describe() string {
	what := cmp.Or(p.Engine, p.Protocol)
	return fmt.Sprintf("%s at %s: %d connections, %d with TLS", what, p.Server, p.Conns, p.TLSConns)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
