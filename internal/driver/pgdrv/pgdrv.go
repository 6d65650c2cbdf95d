// Package pgdrv is the PostgreSQL driver: pgx over tlsbench's dialer, running the sysbench workloads on sbtest tables it can prepare.
package pgdrv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/files"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
)

func init() { driver.Register(New, "postgres") }

// Phase names of a PostgreSQL connection besides netx's tcp, tls-handshake
// and close. Each ends where the server's answer began to arrive.
const (
	// PhaseStartup is the first round trip after tcp, in which the server
	// forks its backend: the SSLRequest and its 'S' with TLS, the
	// StartupMessage and the first authentication request without, so
	// that plain and TLS variants compare like with like.
	PhaseStartup = "startup"
	// PhaseAuth is authentication until ReadyForQuery; with TLS it begins
	// with the StartupMessage, one round trip more than plain.
	PhaseAuth  = "auth"
	PhaseQuery = "query" // the first operation
)

// useTLS is what to say to a plaintext client of a TLS port.
const useTLS = "use sslmode=require"

// maxMessage bounds a message from the server: pgx's own bound is 1 GiB,
// which it allocates as soon as a message header claims it. The workloads'
// largest message is a row of sbtest (under 300 bytes) or an error; 16 MiB
// leaves room for anything a real server sends them.
const maxMessage = 16 << 20

type pgDriver struct {
	cfg  driver.Config
	base *pgx.ConnConfig // parsed from cfg.URL once; each Open copies it
	// urlTLS is the TLS config the URL itself asks for, for Prepare.
	urlTLS   *tls.Config
	sslmode  string
	workload workload
}

// New returns a driver for cfg. The connection settings come from cfg.URL
// as pgx parses it (user, password or passfile, database, options), with
// TLS, dialing and the query mode set by the variant: no fallback to plain,
// no settings of pgx's own choosing.
func New(cfg driver.Config) (driver.Driver, error) {
	if cfg.URL == nil {
		return nil, errors.New("postgres: no URL to log in with")
	}
	if err := checkFiles(cfg.URL); err != nil {
		return nil, err
	}
	base, err := pgx.ParseConfig(cfg.URL.String())
	if err != nil {
		// pgx's message quotes the URL; name it only redacted.
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) && pe.Unwrap() != nil {
			err = pe.Unwrap()
		}
		return nil, fmt.Errorf("postgres: cannot use %s: %v", plan.Redact(cfg.URL.String()), err)
	}
	w, err := newWorkload(cfg.Workload)
	if err != nil {
		return nil, err
	}
	switch cfg.Workload.QueryMode {
	case "", "prepared":
		// Each statement is parsed once per connection, then only bound
		// and executed, as sysbench's prepared statements are.
		base.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	case "simple":
		base.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	default:
		return nil, fmt.Errorf("postgres: query mode %q: use prepared or simple", cfg.Workload.QueryMode)
	}
	d := &pgDriver{cfg: cfg, base: base, urlTLS: base.TLSConfig, sslmode: cfg.URL.Query().Get("sslmode"), workload: w}
	base.TLSConfig = cfg.TLS // nil: no SSLRequest at all
	base.Fallbacks = nil
	base.SSLNegotiation = "postgres" // an SSLRequest first, unless the variant is direct
	if cfg.Variant.Negotiation == plan.NegotiationDirect && cfg.TLS != nil {
		// TLS from the first byte (PostgreSQL 17+), with the ALPN
		// protocol the server requires of a direct connection.
		base.SSLNegotiation = plan.NegotiationDirect
		base.TLSConfig = cfg.TLS.Clone()
		base.TLSConfig.NextProtos = []string{"postgresql"}
	}
	base.ConnectTimeout = 0 // cfg.Timeout bounds Open instead
	base.MaxProtocolMessageBodyLen = maxMessage
	// No round trips beyond the login: no target_session_attrs check, no
	// set-up queries, and no name lookup (cfg.Addr is what is dialed).
	base.ValidateConnect, base.AfterConnect = nil, nil
	base.LookupFunc = func(_ context.Context, host string) ([]string, error) { return []string{host}, nil }
	base.RuntimeParams["application_name"] = "tlsbench"
	return d, nil
}

// pgxFiles are the parameters whose files pgx reads, whole, as it parses
// the URL, and the environment variables that stand in for them.
var pgxFiles = []struct{ param, env string }{
	{"sslrootcert", "PGSSLROOTCERT"},
	{"sslcert", "PGSSLCERT"},
	{"sslkey", "PGSSLKEY"},
}

// checkFiles makes sure, before pgx reads them with os.ReadFile, that the
// certificate and key files u (or the environment) names are regular files
// of at most files.MaxPEM bytes: sslrootcert=/dev/zero would otherwise
// read until memory runs out, and a FIFO block. pgx reads the passfile and
// servicefile a line at a time, with a bound on the line.
func checkFiles(u *url.URL) error {
	q := u.Query()
	for _, f := range pgxFiles {
		path := q.Get(f.param)
		if path == "" {
			path = os.Getenv(f.env)
		}
		if path == "" || f.param == "sslrootcert" && path == "system" {
			continue
		}
		if _, err := files.Read(path, f.param, files.MaxPEM); err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
	}
	return nil
}

// Statements implements driver.MultiStatement.
func (d *pgDriver) Statements() int { return d.workload.statements }

type session struct {
	driver.Link
	d      *pgDriver
	pg     *pgx.Conn
	used   bool
	cancel func() bool // stops the AfterFunc of Open's ctx
	// handshook is set when the TLS handshake succeeded.
	handshook bool
	script    *scriptState // a script workload's state, from the first Do
}

// Open connects through cfg.Dialer and logs in: startup, then with TLS
// tls-handshake (from the 'S') and auth (the conn finds the handshake's
// end in the TLS records pgx writes), without TLS auth (from the first
// authentication request).
func (d *pgDriver) Open(ctx context.Context) (driver.Session, error) {
	s := &session{d: d}
	cc := *d.base
	// pgx makes the tls.Conn itself: this connection's config notes on
	// its Conn whether the server asked for the client certificate.
	cc.TLSConfig = netx.ClientCertConfig(cc.TLSConfig, func() *netx.Conn { return s.Net })
	cc.DialFunc = func(dctx context.Context, _, _ string) (net.Conn, error) {
		c, err := d.cfg.Dialer.Dial(dctx, d.cfg.Addr)
		if err != nil || s.Net != nil {
			// A later dial is pgx's cancel request for an interrupted
			// query: a connection of its own, not the session's.
			return c, err
		}
		s.Net = c
		// An interrupted run must not wait for a slow server: cancelling
		// ctx unblocks every read and write at once.
		s.cancel = c.StopOn(ctx)
		if d.base.SSLNegotiation == plan.NegotiationDirect {
			// No SSLRequest: the ClientHello is the first word, and
			// the server's first flight its answer.
			c.Mark(netx.PhaseTLSHandshake)
			c.SniffTLS(PhaseAuth)
			return c, nil
		}
		c.Mark(PhaseStartup)
		if d.cfg.TLS != nil {
			c.MarkOnAnswer(netx.PhaseTLSHandshake)
			c.SniffTLS(PhaseAuth)
		} else {
			c.MarkOnAnswer(PhaseAuth)
		}
		return c, nil
	}
	// Handshake before pgx writes the startup message rather than lazily
	// inside that write: pgx starts a background reader on the conn when a
	// write takes over 15 ms, as a slow handshake does, and the conn's
	// bookkeeping is not made for a reader and a writer at once.
	// On an error pgx closes the conn the hook returns: it must be the
	// conn it was given, never nil, or pgx panics.
	cc.AfterNetConnect = func(hctx context.Context, _ *pgconn.Config, c net.Conn) (net.Conn, error) {
		if tc, ok := c.(*tls.Conn); ok {
			if err := tc.HandshakeContext(hctx); err != nil {
				return c, err
			}
			s.handshook = true
		}
		return c, nil
	}
	octx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	pg, err := pgx.ConnectConfig(octx, &cc)
	if err != nil {
		return nil, s.openError(ctx, err)
	}
	s.pg = pg
	s.Secure, _ = pg.PgConn().Conn().(*tls.Conn)
	return s, nil
}

// openError names the phase a failed Open stopped in: tcp if no
// connection was made, else the conn's current phase; and its cause (see
// driver.Explain); a step ended by the cancellation of ctx says so.
func (s *session) openError(ctx context.Context, err error) error {
	if s.Net == nil {
		return &driver.OpError{Phase: netx.PhaseTCP, Err: s.explain(ctx, err)}
	}
	s.cancel()
	s.Net.Close()
	tr := s.Net.Finish()
	phase := tr.Phases[len(tr.Phases)-1].Name
	if phase == PhaseAuth && s.d.cfg.TLS != nil && !s.handshook {
		// The handshake failed: the alert the client sent (encrypted in
		// TLS 1.3) looked like its Finished to the conn.
		phase = netx.PhaseTLSHandshake
	}
	if strings.Contains(err.Error(), "server refused TLS connection") {
		// The 'N' answered the SSLRequest: startup's answer.
		return &driver.OpError{Phase: PhaseStartup, Err: driver.Refused(err, "the server at %s does not accept TLS: it answered the SSLRequest with 'N' (ssl = off): use the plain variant (--tls off)", s.d.cfg.Addr)}
	}
	return &driver.OpError{Phase: phase, Err: s.explain(ctx, err)}
}

func (s *session) explain(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return s.d.explain(err, s.Net)
}

// explain is driver.Explain, and a message over maxMessage said so.
func (d *pgDriver) explain(err error, c *netx.Conn) error {
	var big *pgproto3.ExceededMaxBodyLenErr
	if errors.As(err, &big) {
		return driver.Explained(err, "the server at %s sent a message of %d bytes, more than the %d MiB tlsbench reads: is it a PostgreSQL server?", d.cfg.Addr, big.ActualBodyLen, maxMessage>>20)
	}
	return driver.Mark(driver.Explain(err, d.cfg, c, useTLS), d.kinds(err)...)
}

// kinds are the driver.Err kinds of a server's error, from its SQLSTATE
// and words; none for the others. A pg_hba.conf refusal is the source's
// (ErrSourceRefused); where no line matches the connection's encryption
// (PostgreSQL names it in the message's last words, as on a server with
// hostssl lines only) it is the variant's too (a Refusal that says so):
// the line may be missing for the address instead, which err's own
// explanation says.
func (d *pgDriver) kinds(err error) []error {
	var pe *pgconn.PgError
	switch {
	case !errors.As(err, &pe):
		return nil
	case pe.Code == "28000" && strings.Contains(pe.Message, "pg_hba.conf"):
		// invalid_authorization_specification names more than the host
		// (a role that does not exist): the pg_hba.conf lines are the
		// host's refusal.
		switch {
		case !strings.HasPrefix(pe.Message, "no pg_hba.conf entry"):
		case d.cfg.TLS == nil && strings.HasSuffix(pe.Message, "no encryption"):
			return []error{driver.ErrSourceRefused, driver.Refusal{Why: fmt.Sprintf("the server at %s refuses plaintext connections of this user and database from this address (pg_hba.conf: hostssl lines only, or none for the address)", d.cfg.Addr)}}
		case d.cfg.TLS != nil && strings.HasSuffix(pe.Message, "SSL encryption"):
			return []error{driver.ErrSourceRefused, driver.Refusal{Why: fmt.Sprintf("the server at %s refuses TLS connections of this user and database from this address (pg_hba.conf: hostnossl lines only, or none for the address)", d.cfg.Addr)}}
		}
		return []error{driver.ErrSourceRefused}
	case pe.Code == "42P01" && strings.Contains(pe.Message, "sbtest"):
		// undefined_table, one of those tlsbench prepare makes.
		return []error{driver.ErrMissingData}
	}
	return nil
}

// Do runs one operation of the workload; the first marks the query phase.
// A deadline on the connection bounds it, and cancelling the ctx given to
// Open ends it; pgx gets a ctx that cannot be cancelled, so that it sets up
// no watcher, timer or channel for every query: in a load generator that
// costs the server the CPU the client takes from it.
func (s *session) Do(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return &driver.OpError{Phase: PhaseQuery, Err: err}
	}
	if !s.used {
		s.used = true
		s.Net.MarkAnswer(PhaseQuery)
	}
	s.Net.SetDeadline(time.Now().Add(s.d.cfg.Timeout))
	if err := s.d.workload.run(ctx, s); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return &driver.OpError{Phase: PhaseQuery, Err: s.d.explain(err, s.Net)}
	}
	return nil
}

// Close sends Terminate and closes the connection, as the close phase.
func (s *session) Close() error {
	defer s.cancel()
	s.Net.MarkOneWay(netx.PhaseClose)
	ctx, cancel := context.WithTimeout(context.Background(), s.d.cfg.Timeout)
	defer cancel()
	if err := s.pg.Close(ctx); err != nil {
		return &driver.OpError{Phase: netx.PhaseClose, Err: err}
	}
	return nil
}

// Peers implements driver.PeerChecker: pg_stat_ssl of the same user's
// other client backends in this database, which a role may read of its
// own (a client stack's connections, when it logs in as this session
// does). A backend shows there once it has logged in, until it exits.
func (s *session) Peers(ctx context.Context) (driver.Peers, error) {
	ctx, cancel := context.WithTimeout(ctx, s.d.cfg.Timeout)
	defer cancel()
	rows, err := s.pg.Query(ctx, `SELECT a.pid, s.ssl, coalesce(s.version, ''), coalesce(s.cipher, ''), s.client_dn
		FROM pg_stat_activity a JOIN pg_stat_ssl s ON s.pid = a.pid
		WHERE a.usename = session_user AND a.datname = current_database()
		AND a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()`, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return driver.Peers{}, fmt.Errorf("asking pg_stat_ssl: %w", err)
	}
	p := driver.Peers{Open: map[string]driver.ServerView{}}
	for rows.Next() {
		var pid int64
		var v driver.ServerView
		var dn *string
		if err := rows.Scan(&pid, &v.TLS, &v.Version, &v.Cipher, &dn); err != nil {
			rows.Close()
			return driver.Peers{}, fmt.Errorf("asking pg_stat_ssl: %w", err)
		}
		v.ClientCertKnown = v.TLS
		if dn != nil {
			v.ClientCert = *dn
		}
		p.Open[strconv.FormatInt(pid, 10)] = v
	}
	if err := rows.Err(); err != nil {
		return driver.Peers{}, fmt.Errorf("asking pg_stat_ssl: %w", err)
	}
	return p, nil
}

// ConnCount implements driver.ConnCounter: pg_stat_database's sessions
// of this database (PostgreSQL 14 and later), with this login's other
// client backends open in it. A backend adds its session to the count when it
// first reports its statistics, at the latest as it exits; this session's
// own is forced out first (PostgreSQL 15's pg_stat_force_next_flush, done
// as the statement ends), so that it lands before a count is read, not
// between two.
func (s *session) ConnCount(ctx context.Context) (driver.ConnCount, error) {
	ctx, cancel := context.WithTimeout(ctx, s.d.cfg.Timeout)
	defer cancel()
	c := driver.ConnCount{Counter: "pg_stat_database.sessions"}
	version := s.pg.PgConn().ParameterStatus("server_version") // "15.18 (Debian 15.18-0+deb12u1)", "18beta1"
	digits := strings.IndexFunc(version+".", func(r rune) bool { return r < '0' || r > '9' })
	major, _ := strconv.Atoi(version[:digits])
	if major < 14 {
		return c, fmt.Errorf("PostgreSQL %s counts no sessions (pg_stat_database.sessions is 14's)", version)
	}
	if major >= 15 {
		// A role the server's owner denied it (42501) counts as on 14:
		// its own session may land a moment late.
		var pe *pgconn.PgError
		if _, err := s.pg.Exec(ctx, "SELECT pg_stat_force_next_flush()", pgx.QueryExecModeSimpleProtocol); err != nil && !(errors.As(err, &pe) && pe.Code == "42501") {
			return c, fmt.Errorf("pg_stat_force_next_flush: %w", err)
		}
	}
	err := s.pg.QueryRow(ctx, `SELECT d.sessions, (SELECT count(*) FROM pg_stat_activity a
		WHERE a.datid = d.datid AND a.usename = session_user AND a.backend_type = 'client backend' AND a.pid <> pg_backend_pid())
		FROM pg_stat_database d WHERE d.datname = current_database()`, pgx.QueryExecModeSimpleProtocol).Scan(&c.Accepted, &c.Open)
	if err != nil {
		return c, fmt.Errorf("asking pg_stat_database: %w", err)
	}
	return c, nil
}

// ServerTLS implements driver.ServerChecker: what pg_stat_ssl says of this
// session, the client certificate's subject (client_dn) included. It costs a round trip on the session: run it after the part of
// a trial that is measured.
func (s *session) ServerTLS(ctx context.Context) (driver.ServerView, error) {
	ctx, cancel := context.WithTimeout(ctx, s.d.cfg.Timeout)
	defer cancel()
	var v driver.ServerView
	var version, cipher, clientDN *string
	err := s.pg.QueryRow(ctx, "SELECT ssl, version, cipher, client_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
		pgx.QueryExecModeSimpleProtocol).Scan(&v.TLS, &version, &cipher, &clientDN)
	if err != nil {
		return v, fmt.Errorf("asking pg_stat_ssl: %w", err)
	}
	if version != nil {
		v.Version = *version
	}
	if cipher != nil {
		v.Cipher = *cipher
	}
	// The subject of the client certificate the server verified (NULL:
	// none was sent, or none asked for).
	v.ClientCertKnown = v.TLS
	if clientDN != nil {
		v.ClientCert = *clientDN
	}
	return v, nil
}
