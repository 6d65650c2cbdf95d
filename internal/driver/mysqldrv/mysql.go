// Package mysqldrv is the MySQL and MariaDB driver: one go-sql-driver/mysql connection per session, dialed through netx.
package mysqldrv

import (
	"context"
	"crypto/tls"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/files"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/script"
)

func init() { driver.Register(New, "mysql") }

// Phase names of a MySQL connection besides netx's tcp, tls-handshake and
// close. Each ends where the server's answer began to arrive. With TLS,
// tls-handshake begins with the SSL request packet, which the server does
// not answer (the greeting already said it has TLS), and the ClientHello.
const (
	// PhaseGreeting is from the TCP connect until the server's greeting
	// (the handshake packet) arrives: one round trip, since the server
	// speaks first, answering the client's ACK.
	PhaseGreeting = "greeting"
	// PhaseAuth is the login packet until the server's OK, with any auth
	// switch (ed25519 users take one more round trip than native ones).
	PhaseAuth = "auth"
	// PhaseQuery is the first operation of a session.
	PhaseQuery = "query"
)

// useTLS is what to say to a plaintext client of a TLS port.
const useTLS = "use tls=true"

type mysqlDriver struct {
	cfg       driver.Config
	connector sqldriver.Connector
	work      workload
}

// New returns a driver for cfg: cfg.URL gives the user, the password (or a
// passfile=PATH parameter) and the database; cfg.TLS, when set, is the only
// TLS configuration used, and a plain variant never negotiates TLS.
func New(cfg driver.Config) (driver.Driver, error) {
	if cfg.URL == nil {
		return nil, errors.New("mysql: no URL with user and database given")
	}
	work, err := newWorkload(cfg.Workload)
	if err != nil {
		return nil, err
	}
	mc, err := mysqlConfig(cfg.URL)
	if err != nil {
		return nil, err
	}
	d := &mysqlDriver{cfg: cfg, work: work}
	mc.Net, mc.Addr = "tcp", cfg.Addr
	mc.Timeout = cfg.Timeout
	mc.DialFunc = d.dial
	// nil is plain: the driver then never sends an SSL request, whatever
	// the server offers; and TLS asked for never falls back to plain.
	mc.TLS = cfg.TLS
	mc.AllowFallbackToPlaintext = false
	// Simple mode sends statements with their values in the text protocol;
	// prepared mode uses server-side prepared statements.
	mc.InterpolateParams = cfg.Workload.QueryMode == "simple"
	mc.CheckConnLiveness = false
	mc.Logger = quiet{}
	if err := mc.Apply(mysql.BeforeConnect(beforeConnect)); err != nil {
		return nil, err
	}
	if d.connector, err = mysql.NewConnector(mc); err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	return d, nil
}

// urlParams are the query parameters a mysql:// URL may carry: tls= is
// read by plan (it chooses the variants to compare), and so are ssl-ca=,
// ssl-cert= and ssl-key= (loaded into cfg.TLS: go-sql-driver's DSN has no
// such parameters); passfile= here.
var urlParams = []string{"passfile", "tls", "ssl-ca", "ssl-cert", "ssl-key"}

// mysqlConfig reads the login from a mysql://USER[:PASSWORD]@HOST/DB URL.
func mysqlConfig(u *url.URL) (*mysql.Config, error) {
	mc := mysql.NewConfig()
	if u.User == nil || u.User.Username() == "" {
		return nil, errors.New("mysql: the URL names no user")
	}
	mc.User = u.User.Username()
	mc.Passwd, _ = u.User.Password()
	mc.DBName = strings.TrimPrefix(u.Path, "/")
	q := u.Query()
	for k := range q {
		if !slices.Contains(urlParams, k) {
			return nil, fmt.Errorf("mysql: URL parameter %q is not supported (use %s)", k, strings.Join(urlParams, ", "))
		}
	}
	if path := q.Get("passfile"); path != "" {
		data, err := files.Read(path, "passfile", files.MaxPEM)
		if err != nil {
			return nil, fmt.Errorf("mysql: reading the password file: %w", err)
		}
		mc.Passwd = strings.TrimRight(string(data), "\r\n")
	}
	return mc, nil
}

// Statements implements driver.MultiStatement.
func (d *mysqlDriver) Statements() int { return d.work.statements }

// opening is what one Open learns from the driver's hooks, which it finds
// in the context it gives Connect.
type opening struct {
	ctx     context.Context // Open's: it outlives the dial's context
	conn    *netx.Conn
	stop    func() bool // ends the cancel hook
	tls     *tls.ConnectionState
	group   groupSniffer
	timeout time.Duration

	mu     sync.Mutex // the driver may log from its cancel watcher
	logged error      // the driver logs a failed read's cause, then returns ErrInvalidConn
}

type openingKey struct{}

// Print implements mysql.Logger: it keeps the last error the driver logs
// instead of printing it.
func (o *opening) Print(v ...any) {
	for _, a := range v {
		if err, ok := a.(error); ok {
			o.mu.Lock()
			o.logged = err
			o.mu.Unlock()
		}
	}
}

// beforeConnect runs on the driver's own copy of the config for one
// connection: it reports to that connection's opening.
func beforeConnect(ctx context.Context, mc *mysql.Config) error {
	o, ok := ctx.Value(openingKey{}).(*opening)
	if !ok {
		return errors.New("mysql: connect outside Open")
	}
	mc.Logger = o
	if mc.TLS != nil {
		// This connection's config notes on its Conn, dialed by then,
		// whether the server asked for the client certificate.
		mc.TLS = netx.ClientCertConfig(mc.TLS, func() *netx.Conn { return o.conn })
		// The driver keeps its tls.Conn to itself: take the negotiated
		// state when the handshake checks the server (resumed ones too).
		check := mc.TLS.VerifyConnection
		mc.TLS.VerifyConnection = func(cs tls.ConnectionState) error {
			if check != nil {
				if err := check(cs); err != nil {
					return err
				}
			}
			o.tls = &cs
			return nil
		}
	}
	return nil
}

// dial opens the netx connection (tcp) and starts the greeting phase, which
// the greeting ends: tls-handshake or auth begin as it arrives. With TLS
// the conn finds the handshake's end from the records the driver writes,
// and the returned conn learns the group of a TLS 1.2 handshake.
func (d *mysqlDriver) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	o, ok := ctx.Value(openingKey{}).(*opening)
	if !ok {
		return nil, errors.New("mysql: dial outside Open")
	}
	c, err := d.cfg.Dialer.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	c.Mark(PhaseGreeting)
	o.conn = c
	// An interrupted run must not wait for a slow server: cancelling
	// Open's ctx unblocks every read and write of the session at once.
	o.stop = c.StopOn(o.ctx)
	c.SetDeadline(deadline(o.timeout))
	if d.cfg.TLS == nil {
		c.MarkOnAnswer(PhaseAuth)
		return c, nil
	}
	c.MarkOnAnswer(netx.PhaseTLSHandshake)
	c.SniffTLS(PhaseAuth)
	return &clientConn{Conn: c, o: o}, nil
}

// clientConn follows the server's handshake records for the group of a
// TLS 1.2 handshake: they begin after the client's first packet, the SSL
// request.
type clientConn struct {
	*netx.Conn
	o       *opening
	spoke   bool // the client has written
	sniffed bool // the server's handshake records are being followed
}

func (c *clientConn) Write(p []byte) (int, error) {
	if !c.spoke {
		c.spoke, c.sniffed = true, true
	}
	return c.Conn.Write(p)
}

func (c *clientConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.sniffed && n > 0 {
		c.sniffed = c.o.group.feed(p[:n])
	}
	return n, err
}

// Open connects and logs in: tcp, greeting, [tls-handshake,] auth.
func (d *mysqlDriver) Open(ctx context.Context) (driver.Session, error) {
	o := &opening{ctx: ctx, timeout: d.cfg.Timeout}
	dc, err := d.connector.Connect(context.WithValue(ctx, openingKey{}, o))
	if err != nil {
		phase := netx.PhaseTCP
		if o.conn != nil {
			o.stop()
			o.conn.Close()
			tr := o.conn.Finish()
			phase = tr.Phases[len(tr.Phases)-1].Name
			if sent, _ := o.conn.Counters(); sent == 0 {
				// The greeting's first bytes began the next phase, but
				// the client never answered it: it failed reading the
				// greeting, or on what the greeting said (no TLS).
				phase = PhaseGreeting
			}
			if phase == PhaseAuth && d.cfg.TLS != nil && o.tls == nil {
				// The server was never verified: the handshake failed, and
				// the client's encrypted alert looked like its Finished.
				phase = netx.PhaseTLSHandshake
			}
		}
		err = o.cause(err)
		var refused *mysql.MySQLError
		switch {
		case phase == PhaseAuth && errors.Is(err, mysql.ErrMalformPkt):
			err = fmt.Errorf("%w (%s)", err, ed25519Flaw)
		case phase == PhaseGreeting && driver.Closed(err) && o.ctx.Err() == nil:
			err = closedAtGreeting(err, d.cfg.Addr)
		case errors.As(err, &refused) && (refused.Number == erConCount || refused.Number == erHostBlocked):
			// Its answer in place of the greeting (the driver then says
			// goodbye, so the client did write).
			phase = PhaseGreeting
			err = refusedAtGreeting(err, refused.Number, d.cfg.Addr)
		case errors.Is(err, mysql.ErrNoTLS):
			return nil, &driver.OpError{Phase: phase, Err: driver.Refused(err, "the server at %s does not offer TLS (have_ssl is not YES): use the plain variant (--tls off)", d.cfg.Addr)}
		}
		return nil, &driver.OpError{Phase: phase, Err: driver.Mark(driver.Explain(err, d.cfg, o.conn, useTLS), d.kind(err))}
	}
	s := &session{d: d, conn: o.conn, dc: dc, o: o}
	if d.cfg.TLS != nil {
		if o.tls == nil {
			dc.Close()
			o.stop()
			return nil, &driver.OpError{Phase: PhaseAuth, Err: errors.New("the session has no TLS state")}
		}
		st := *o.tls
		st.HandshakeComplete = true
		if st.CurveID == 0 {
			// TLS 1.2 learns its group after checking the certificate.
			st.CurveID = o.group.group
		}
		s.tls = &st
	}
	return s, nil
}

// kind is the driver.Err kind of a server's error, from its number; nil
// for the others.
func (d *mysqlDriver) kind(err error) error {
	var me *mysql.MySQLError
	switch {
	case !errors.As(err, &me):
		return nil
	case me.Number == erHostNotPrivileged:
		return driver.ErrSourceRefused
	case me.Number == erAccessDenied && d.cfg.TLS == nil:
		// MariaDB's require_secure_transport=ON (and a user's REQUIRE
		// SSL) denies a plaintext login as a wrong password would: a
		// refusal if TLS logs in (bench's check tells).
		return driver.Refusal{Why: fmt.Sprintf("the server at %s denied this user over plaintext: it demands TLS (require_secure_transport=ON, or the user's REQUIRE SSL)", d.cfg.Addr)}
	case me.Number == errNoSuchTable && strings.Contains(me.Message, "sbtest"):
		// One of the tables tlsbench prepare makes.
		return driver.ErrMissingData
	}
	return nil
}

// closedAtGreeting explains a server that closed the connection before its
// greeting was whole, which the driver reports as "unexpected EOF": a
// MySQL server does so at its connection limit or to a host it blocks
// when it cannot send its error packet first, and so does a port that is
// no MySQL server, or a TLS-only proxy that reads a ClientHello first.
func closedAtGreeting(err error, addr string) error {
	return driver.Explained(err, "the server at %s closed the connection before its greeting was complete (%v): it may have reached max_connections (raise it, or use fewer connections: -c), or blocked this host after too many failed connections (FLUSH HOSTS, or raise max_connect_errors); or the port is not a MySQL or MariaDB server's, or it is a TLS-only proxy's (give the server's own port)", addr, err)
}

// MySQL errors a server sends in place of its greeting.
const (
	erConCount    = 1040 // ER_CON_COUNT_ERROR: Too many connections
	erHostBlocked = 1129 // ER_HOST_IS_BLOCKED
	// erAccessDenied (ER_ACCESS_DENIED_ERROR) answers a login, also a
	// plaintext one where the server demands TLS.
	erAccessDenied = 1045
	// ER_HOST_NOT_PRIVILEGED: no user may log in from this host.
	erHostNotPrivileged = 1130
)

// refusedAtGreeting explains a server's error packet in place of its
// greeting: its connection limit, or this host blocked.
func refusedAtGreeting(err error, number uint16, addr string) error {
	if number == erConCount {
		return driver.Explained(err, "the server at %s refused the connection: it has reached max_connections (%v): raise max_connections, or use fewer connections (-c)", addr, err)
	}
	return driver.Explained(err, "the server at %s refused this host (%v): it blocked it after too many failed connections: run FLUSH HOSTS (mariadb-admin flush-hosts), or raise max_connect_errors", addr, err)
}

// ed25519Flaw explains a known failure of go-sql-driver/mysql (v1.10.1):
// reading an auth switch request it drops a trailing zero byte, taking it
// for a terminator, but MariaDB's ed25519 challenge is 32 random bytes
// without one, so a challenge that ends in 0 is "malformed".
const ed25519Flaw = "go-sql-driver/mysql rejects a MariaDB ed25519 challenge whose last random byte is 0: about 1 login in 256 fails so"

// cause makes the driver's error say why: ErrInvalidConn hides the read
// error it logged, and a cancelled run is cancelled, not timed out.
func (o *opening) cause(err error) error {
	o.mu.Lock()
	logged := o.logged
	o.mu.Unlock()
	switch {
	case o.ctx.Err() != nil:
		return fmt.Errorf("%w (%v)", o.ctx.Err(), err)
	case (errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, sqldriver.ErrBadConn) || err.Error() == "bad connection") && logged != nil:
		// "bad connection" is also the driver's unexported error for a
		// first write that failed (a TLS 1.3 server that refused the
		// client certificate and closed), which it logs too.
		return fmt.Errorf("%w: %w", logged, err)
	case errors.Is(err, mysql.ErrNoTLS):
		return fmt.Errorf("the server does not offer TLS: %w", err)
	}
	return err
}

// deadline is when an operation started now times out; none without a
// timeout.
func deadline(timeout time.Duration) time.Time {
	if timeout <= 0 {
		return time.Time{}
	}
	return time.Now().Add(timeout)
}

type quiet struct{}

func (quiet) Print(...any) {}

type session struct {
	d     *mysqlDriver
	conn  *netx.Conn
	dc    sqldriver.Conn
	o     *opening
	tls   *tls.ConnectionState
	stmts map[string]sqldriver.Stmt // prepared mode: one per statement text
	// Per-query scratch, reused: the arguments and a row's values.
	named [2]sqldriver.NamedValue
	dest  []sqldriver.Value
	used  bool
	// script is a script workload's state, from the first Do; opCtx is
	// the ctx of the Do in progress, which ends a script's \sleep (and
	// may carry the trial's end, script.WithEnd).
	script *script.Client
	opCtx  context.Context
}

func (s *session) Conn() *netx.Conn { return s.conn }

func (s *session) TLS() (tls.ConnectionState, bool) {
	if s.tls == nil {
		return tls.ConnectionState{}, false
	}
	return *s.tls, true
}

// Do runs one operation of the workload; the first is the query phase.
func (s *session) Do(ctx context.Context) error {
	if err := errors.Join(ctx.Err(), s.o.ctx.Err()); err != nil {
		return &driver.OpError{Phase: PhaseQuery, Err: err}
	}
	if !s.used {
		s.used = true
		s.conn.MarkAnswer(PhaseQuery)
	}
	s.conn.SetDeadline(deadline(s.d.cfg.Timeout))
	s.opCtx = ctx
	// The deadline bounds the operation and cancelling Open's ctx ends it
	// (see opening); the driver gets a ctx that cannot be cancelled, or it
	// would hand every query to its watcher goroutine: a wake-up per query
	// that a load generator takes from the server's CPU.
	if err := s.d.work.run(s, context.Background()); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		} else {
			err = driver.Mark(driver.Explain(s.o.cause(err), s.d.cfg, s.conn, useTLS), s.d.kind(err))
		}
		return &driver.OpError{Phase: PhaseQuery, Err: err}
	}
	return nil
}

// ServerTLS implements driver.ServerChecker: what the server says about
// this session's encryption (empty Ssl_version: none).
func (s *session) ServerTLS(ctx context.Context) (driver.ServerView, error) {
	var v driver.ServerView
	s.conn.SetDeadline(deadline(s.d.cfg.Timeout))
	rows, err := s.dc.(sqldriver.QueryerContext).QueryContext(ctx,
		"SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_version', 'Ssl_cipher')", nil)
	if err != nil {
		return v, s.o.cause(err)
	}
	defer rows.Close()
	err = eachRow(rows, func(row []sqldriver.Value) {
		name, value := asString(row[0]), asString(row[1])
		switch name {
		case "Ssl_version":
			v.Version = value
		case "Ssl_cipher":
			v.Cipher = value
		}
	})
	if err != nil {
		return v, s.o.cause(err)
	}
	if err := rows.Close(); err != nil {
		return v, s.o.cause(err)
	}
	v.TLS = v.Version != ""
	if v.TLS {
		if v.ClientCert, err = s.requiredCert(ctx); err != nil {
			return v, err
		}
		// MariaDB names no client certificate of a session: a login that
		// needed one (REQUIRE X509, SUBJECT, ISSUER) is the proof; other
		// users cannot tell.
		v.ClientCertKnown = v.ClientCert != ""
	}
	return v, nil
}

// Peers implements driver.PeerChecker: the server's counts of the
// connections it accepted (Connections) and of those over TLS
// (Ssl_finished_accepts), every user's. MariaDB keeps no view of another
// session's TLS but in performance_schema, which is off by default.
func (s *session) Peers(ctx context.Context) (driver.Peers, error) {
	c, err := s.ConnCount(ctx)
	if err != nil {
		return driver.Peers{}, err
	}
	return driver.Peers{Counted: true, Accepted: c.Accepted, TLS: c.TLS}, nil
}

// ConnCount implements driver.ConnCounter: SHOW GLOBAL STATUS's
// Connections and Ssl_finished_accepts, every user's, counted as the
// server accepts a connection and as its TLS handshake ends.
func (s *session) ConnCount(ctx context.Context) (driver.ConnCount, error) {
	c := driver.ConnCount{Counter: "Connections", TLSCounter: "Ssl_finished_accepts", Open: -1}
	s.conn.SetDeadline(deadline(s.d.cfg.Timeout))
	rows, err := s.dc.(sqldriver.QueryerContext).QueryContext(ctx,
		"SHOW GLOBAL STATUS WHERE Variable_name IN ('Connections', 'Ssl_finished_accepts')", nil)
	if err != nil {
		return c, s.o.cause(err)
	}
	defer rows.Close()
	seen := 0
	var bad error
	err = eachRow(rows, func(row []sqldriver.Value) {
		n, err := strconv.ParseInt(asString(row[1]), 10, 64)
		if err != nil {
			bad = fmt.Errorf("the server's %s is %q, not a count", asString(row[0]), asString(row[1]))
		}
		switch asString(row[0]) {
		case c.Counter:
			c.Accepted, seen = n, seen+1
		case c.TLSCounter:
			c.TLS, seen = n, seen+1
		}
	})
	if err == nil {
		err = bad
	}
	if err == nil && seen != 2 {
		err = errors.New("the server counts no Connections or Ssl_finished_accepts (SHOW GLOBAL STATUS)")
	}
	if err != nil {
		return c, s.o.cause(err)
	}
	return c, rows.Close()
}

// requiredCert is what the session's user requires of a client
// certificate, from SHOW GRANTS ("REQUIRE X509"), "" for nothing.
func (s *session) requiredCert(ctx context.Context) (string, error) {
	rows, err := s.dc.(sqldriver.QueryerContext).QueryContext(ctx, "SHOW GRANTS", nil)
	if err != nil {
		return "", s.o.cause(err)
	}
	defer rows.Close()
	req := ""
	err = eachRow(rows, func(row []sqldriver.Value) {
		g := asString(row[0])
		if i := strings.Index(g, " REQUIRE "); i >= 0 && req == "" {
			r := strings.TrimSpace(g[i+1:])
			if w := strings.Fields(r); len(w) > 1 && (w[1] == "X509" || w[1] == "SUBJECT" || w[1] == "ISSUER") {
				req = "REQUIRE " + w[1]
			}
		}
	})
	if err != nil {
		return "", s.o.cause(err)
	}
	return req, nil
}

func asString(v sqldriver.Value) string {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// Close sends COM_QUIT and closes the connection, as the close phase.
// Prepared statements go with the connection, unclosed one by one.
func (s *session) Close() error {
	defer s.o.stop()
	s.conn.MarkOneWay(netx.PhaseClose)
	s.conn.SetDeadline(deadline(s.d.cfg.Timeout))
	if err := s.dc.Close(); err != nil {
		return &driver.OpError{Phase: netx.PhaseClose, Err: s.o.cause(err)}
	}
	return nil
}

// groupSniffer follows the server's TLS records during the handshake for
// the group of a TLS 1.2 ECDHE key exchange (its ServerKeyExchange), which
// crypto/tls does not yet know when it calls VerifyConnection.
type groupSniffer struct {
	records []byte // bytes of records not complete yet
	msgs    []byte // handshake messages not complete yet
	group   tls.CurveID
}

// TLS record and handshake message types.
const (
	recordHandshake       = 0x16
	msgServerKeyExchange  = 12
	msgServerHelloDone    = 14
	curveTypeNamedCurve   = 3
	recordHeaderLen       = 5
	handshakeHeaderLength = 4
)

// feed takes bytes the server sent; it reports whether to go on.
func (g *groupSniffer) feed(p []byte) bool {
	g.records = append(g.records, p...)
	for len(g.records) >= recordHeaderLen {
		n := int(g.records[3])<<8 | int(g.records[4])
		if len(g.records) < recordHeaderLen+n {
			return true
		}
		typ, body := g.records[0], g.records[recordHeaderLen:recordHeaderLen+n]
		g.records = g.records[recordHeaderLen+n:]
		if typ != recordHandshake {
			// ChangeCipherSpec or encrypted data: the key exchange, if
			// any was in the clear, is behind.
			return false
		}
		g.msgs = append(g.msgs, body...)
		for len(g.msgs) >= handshakeHeaderLength {
			mt := g.msgs[0]
			ml := int(g.msgs[1])<<16 | int(g.msgs[2])<<8 | int(g.msgs[3])
			if len(g.msgs) < handshakeHeaderLength+ml {
				break
			}
			msg := g.msgs[handshakeHeaderLength : handshakeHeaderLength+ml]
			g.msgs = g.msgs[handshakeHeaderLength+ml:]
			switch {
			case mt == msgServerKeyExchange && len(msg) >= 3 && msg[0] == curveTypeNamedCurve:
				g.group = tls.CurveID(int(msg[1])<<8 | int(msg[2]))
				return false
			case mt == msgServerHelloDone:
				return false
			}
		}
	}
	return true
}
