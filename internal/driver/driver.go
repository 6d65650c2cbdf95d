// Package driver defines how an experiment talks to a target engine: a
// Driver opens Sessions over netx connections; engines live in sub-packages.
package driver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/script"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// Config is what a driver needs to reach the target for one variant.
type Config struct {
	Variant plan.Variant
	Addr    string      // host:port to dial
	Host    string      // host name for requests (HTTP Host header, SNI)
	Path    string      // request path (HTTP)
	TLS     *tls.Config // nil for the plain variant
	Dialer  *netx.Dialer
	Timeout time.Duration // bounds every operation
	// Reuse says the session will run many operations (pool); otherwise it
	// runs one and closes (connect), which HTTP tells the server.
	Reuse bool
	// PerConn is how many operations a session runs before it closes
	// when not Reuse (connect --per-conn; 0 is one): HTTP keeps the
	// connection alive until the last.
	PerConn int
	// ServerTLS, when set, is whether the server itself sees TLS where an
	// intermediary (a pooler) makes the connection to it; nil: as the
	// variant. The check compares the server's own view with it.
	ServerTLS *bool
	// Answered, once true, says that the server answered a session of
	// this variant on Addr (a run's check; nil: none did): a connection
	// it closes before answering was then dropped, not refused as the
	// wrong protocol (a TLS port reading plaintext), and the error says
	// so. Shared by every copy of the Config.
	Answered *atomic.Bool
	// URL is the target with its credentials, for engines that log in:
	// user, password (or passfile=PATH), database, options. Never print it.
	URL *url.URL
	// Workload is what each operation does.
	Workload Workload
}

// Workload is what each operation of a session does.
type Workload struct {
	// Name is one of the engine's workloads, "" for its default:
	// point-select (SQL: sysbench oltp_point_select; Redis: GET),
	// read-only (the sysbench oltp_read_only transaction), stream (read a
	// whole table or collection).
	Name string
	// QueryMode is "prepared" (server-side prepared statements, cached per
	// connection) or "simple" (text protocol).
	QueryMode string
	// Tables and Rows are the size of the prepared sbtest data.
	Tables, Rows int

	// User is the user's own workload (Name is then plan.WorkloadCommand,
	// WorkloadFilter or WorkloadRequest), secrets included: never print
	// it.
	User plan.UserWorkload

	// Scripts, when set, replace Name (PostgreSQL, MySQL): each operation
	// is one pass through a pgbench script the mix picks by weight, sent
	// in QueryMode; Statements is the mix's statements per pass.
	Scripts *script.Mix
}

// ServerView is what the server itself says about a session's encryption.
type ServerView struct {
	TLS     bool
	Version string // as the server names it, e.g. "TLSv1.3"
	Cipher  string
	// Auth is the authentication method the server used, when it says.
	Auth string
	// ClientCert is how the server confirms that it verified the session's
	// client certificate: its subject as the server saw it (PostgreSQL's
	// pg_stat_ssl.client_dn), or the rule every login that succeeds had to
	// pass (MariaDB: the user's REQUIRE X509; Redis: tls-auth-clients
	// yes); "" when it saw none. ClientCertKnown is false where the
	// server cannot say (then ClientCert says nothing either way).
	ClientCert      string
	ClientCertKnown bool
}

// ServerChecker is a Session that can ask the server about its encryption
// (pg_stat_ssl, SHOW SESSION STATUS LIKE 'Ssl_%', ...), so that a variant
// that is not what it claims is caught.
type ServerChecker interface {
	ServerTLS(ctx context.Context) (ServerView, error)
}

// PeerChecker is a Session that can ask the server about the encryption of
// other sessions: those of a client stack (--client), another process on
// whose connections tlsbench cannot ask.
type PeerChecker interface {
	// Peers is what the server says now of the sessions other than this
	// one: its view of each of the same user's sessions open now, or its
	// counts of the connections it accepted, whichever it keeps.
	Peers(ctx context.Context) (Peers, error)
}

// Peers is a server's view of the sessions other than the one asking.
type Peers struct {
	// Open is the server's view of each of the same user's other sessions
	// open now, by the server's id of each (PostgreSQL: pg_stat_ssl of a
	// backend's pid); nil where it keeps no such view.
	Open map[string]ServerView
	// Counted says the server counts the connections it accepted since it
	// started, every user's (MariaDB, MySQL: Connections), and how many of
	// them over TLS (Ssl_finished_accepts): Accepted and TLS.
	Counted       bool
	Accepted, TLS int64
}

// ConnCounter is a Session that can read the server's own running count
// of the connections it accepted, so that a client stack's trial (another
// process's connections) is set beside what the server counted.
type ConnCounter interface {
	ConnCount(ctx context.Context) (ConnCount, error)
}

// ConnCount is a server's count of connections so far.
type ConnCount struct {
	// Counter names the count as the server does
	// ("pg_stat_database.sessions", "Connections",
	// "total_connections_received"), and Accepted is it: every client's
	// connections (PostgreSQL: to this database), this session's among
	// them.
	Counter  string
	Accepted int64
	// TLSCounter and TLS are those of them over TLS, where the server
	// counts them (MariaDB: Ssl_finished_accepts); TLSCounter is ""
	// where it does not.
	TLSCounter string
	TLS        int64
	// Open is how many of this login's other sessions are open now,
	// where the server may count a session late (PostgreSQL counts a
	// backend's session when it first reports its statistics, at the
	// latest as it exits): once a run's sessions are gone, the count
	// holds them. -1 where every connection is counted as it is accepted
	// (MariaDB, Redis).
	Open int64
}

// Preparer is a Driver that can create the data its workloads read:
// sysbench-compatible sbtest tables, or keys. Idempotent.
type Preparer interface {
	Prepare(ctx context.Context, tables, rows int, progress func(done, total int64)) error
}

// DataChecker is a Session that can tell, before any trial, whether all the
// data its workload reads is there: every sbtest table and its rows, not
// just the one the check's single query happened to pick.
type DataChecker interface {
	CheckData(ctx context.Context) error
}

// MissingData is a table the workload reads that is not there, or holds
// fewer rows (MaxID, -1 if there is no such table) than it reads (Rows).
type MissingData struct {
	Table       string
	MaxID, Rows int64
}

func (e *MissingData) Error() string {
	if e.MaxID < 0 {
		return e.Table + " does not exist"
	}
	return fmt.Sprintf("%s holds ids up to %d, the workload reads ids up to %d", e.Table, e.MaxID, e.Rows)
}

// MultiStatement is a Driver whose operations run several statements (a
// transaction): Statements is how many, for queries per second.
type MultiStatement interface {
	Statements() int
}

// Driver opens sessions to a target.
type Driver interface {
	// Open connects: tcp, TLS and the engine's startup, each a phase of the
	// session's Conn.
	Open(ctx context.Context) (Session, error)
}

// Session is one open connection.
type Session interface {
	// Do runs one operation (an HTTP request, a query). The first Do after
	// Open marks its own phases on the Conn.
	Do(ctx context.Context) error
	// Close closes the connection, timing it as the close phase.
	Close() error
	Conn() *netx.Conn
	// TLS returns the negotiated state; ok is false for plain sessions.
	TLS() (state tls.ConnectionState, ok bool)
}

// Link is the connection under a Session: the timed netx.Conn and, with
// TLS, the tls.Conn over it. Sessions embed it for Conn and TLS.
type Link struct {
	Net    *netx.Conn
	Secure *tls.Conn // nil for plain sessions
}

// Conn implements Session.
func (l *Link) Conn() *netx.Conn { return l.Net }

// TLS implements Session.
func (l *Link) TLS() (tls.ConnectionState, bool) {
	if l.Secure == nil {
		return tls.ConnectionState{}, false
	}
	return l.Secure.ConnectionState(), true
}

// OpError is a failed step of a session, named by its phase so that
// failures can be counted by kind.
type OpError struct {
	Phase string
	Err   error
}

func (e *OpError) Error() string { return e.Phase + ": " + e.Err.Error() }
func (e *OpError) Unwrap() error { return e.Err }

// Kind names an error for counting: the phase it happened in and its cause,
// e.g. "tcp: refused", "request: timeout".
func Kind(err error) string {
	phase := "other"
	var oe *OpError
	if errors.As(err, &oe) {
		phase = oe.Phase
	}
	return phase + ": " + cause(err)
}

// Answered reports whether err is the server's answer (a statement's
// error, an HTTP status, a Redis error reply) rather than a failure of the
// connection: after it the session can go on.
func Answered(err error) bool {
	switch cause(err) {
	case "other":
		// An error the server sent names itself (a Causer) or comes
		// from the engine's client library, never from the socket.
		return !errors.Is(err, net.ErrClosed)
	case "canceled", "timeout", "refused", "reset", "no free port", "too many open files", "closed by server", "certificate", "tls alert":
		return false
	}
	return true // a Causer's own cause: the server answered
}

// Causer is an error that names its own cause for Kind: an HTTP status
// ("status 404"), a Redis error code ("WRONGTYPE"). Its causes must be
// few, as kinds are counted one by one.
type Causer interface {
	error
	Cause() string
}

func cause(err error) string {
	if c, ok := errors.AsType[Causer](err); ok {
		return c.Cause()
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no free port"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "too many open files"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed by server"
	}
	var ae tls.AlertError
	var ve *tls.CertificateVerificationError
	switch {
	case errors.As(err, &ve):
		return "certificate"
	case errors.As(err, &ae):
		return "tls alert"
	}
	return "other"
}

// Explained returns err with the line format and args make of it in place
// of its own message: a driver's own explanation, which Explain keeps.
func Explained(err error, format string, args ...any) error {
	return tlsx.Explained(err, format, args...)
}

// Explain turns err, a failed step of a session with cfg over c (nil if no
// TCP connection was made), into one line that names the cause and the fix,
// from what the connection saw: a server that closed it before a word (a
// TLS port reading plaintext, or the reverse), one that said nothing until
// the timeout, a timeout in mid-answer; the rest is tlsx.Explain's
// (certificates, a plaintext answer to TLS, refused, too many open files)
// and tlsx.ExplainClient's (the client certificate, as the server judged it).
// useTLS is how this engine's URL asks for TLS ("use rediss://"). A
// cancelled step, and errors not recognized, are returned as they are.
// Before any session of cfg was answered, a server that closed the
// connection at its first word, or a TLS handshake that met plaintext or
// an unspoken version, is of the kind ErrRefused.
func Explain(err error, cfg Config, c *netx.Conn, useTLS string) error {
	out := explain(err, cfg, c, useTLS)
	if out != nil && !errors.Is(out, ErrRefused) && refusal(err, cfg, c) {
		return Mark(out, ErrRefused)
	}
	return out
}

// refusal reports whether err, before any session of cfg was answered,
// is the server refusing the variant's kind of connection (ErrRefused).
func refusal(err error, cfg Config, c *netx.Conn) bool {
	if cfg.answered() || errors.Is(err, context.Canceled) {
		return false
	}
	if cfg.TLS != nil && tlsx.WrongProtocol(err) {
		return true
	}
	if c == nil {
		return false
	}
	sent, received := c.Counters()
	return received == 0 && sent > 0 && closed(err) && time.Since(c.Started()) < gaveUp
}

func explain(err error, cfg Config, c *netx.Conn, useTLS string) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	if tlsx.IsExplained(err) {
		return err
	}
	if c != nil {
		sent, received := c.Counters()
		waited := time.Since(c.Started()).Round(time.Millisecond)
		switch {
		case received == 0 && sent > 0 && closed(err) && waited >= gaveUp:
			// Not the port's protocol (that closes at once): a server
			// too busy to answer, whose own timeout ended the
			// connection (Go's net/http: its handshake's).
			return Explained(err, "the server at %s accepted the connection and closed it %v later without a word: it is overloaded and gave up on it (its own timeout); use fewer clients at once (-c, --clients)", cfg.Addr, waited)
		case received == 0 && sent > 0 && closed(err) && cfg.TLS == nil:
			return ClosedOnPlaintext(err, cfg, useTLS)
		case received == 0 && sent > 0 && closed(err):
			return ClosedOnTLS(err, cfg)
		case received == 0 && timedOut(err):
			// Silence says nothing of the port's protocol: only an
			// answer in the wrong one does (tlsx.Explain).
			return Explained(err, "the server at %s accepted the connection but sent nothing within --timeout %v: it is overloaded or stopped; if it is only slow (many clients at once), raise --timeout or use fewer clients (-c, --clients)", cfg.Addr, cfg.Timeout)
		case timedOut(err):
			return Explained(err, "the server at %s did not answer within --timeout %v: it is slow or stalled (raise --timeout if it is only slow)", cfg.Addr, cfg.Timeout)
		case closed(err) && !alerted(err) && cfg.answered():
			// Not a refusal at setup (the check was set up alike).
			return dropped(err, cfg, "in mid-operation")
		case cfg.TLS != nil && cfg.answered() && errors.As(err, new(tls.RecordHeaderError)):
			return Explained(err, "the server at %s sent something that is not TLS, though it answered the check on that port over TLS: did something in between corrupt the connection?", cfg.Addr)
		case cfg.TLS != nil && received > 0 && closed(err) && !alerted(err) && c.Turns() <= setupTurns:
			return tlsx.ClosedAfterHandshake(err, cfg.Addr, engine(cfg), cfg.TLS)
		}
	}
	return tlsx.ExplainClient(err, cfg.Addr, engine(cfg), cfg.Variant, cfg.TLS)
}

// engine is cfg's engine as the registry names it, from its URL's scheme,
// for remedies that are that engine's own; HTTP's (a target without a
// login may have no URL) otherwise.
func engine(cfg Config) string {
	if cfg.URL == nil {
		return "http"
	}
	switch s := cfg.URL.Scheme; s {
	case "postgresql":
		return "postgres"
	case "rediss":
		return "redis"
	case "https":
		return "http"
	default:
		return s
	}
}

// gaveUp is how long after the dial a server's close without a word is
// taken for a server giving up (overloaded) rather than a port of another
// protocol refusing the first bytes, which takes a round trip.
const gaveUp = time.Second

// ClosedOnPlaintext says that the server at cfg.Addr closed the
// connection on a plaintext client before answering, as a TLS port does
// (ErrRefused, before any session was answered); useTLS is how to ask the
// engine for TLS.
func ClosedOnPlaintext(err error, cfg Config, useTLS string) error {
	if cfg.answered() {
		return dropped(err, cfg, "before answering")
	}
	return Mark(Explained(err, "the server at %s closed the connection on the plaintext request: is it a TLS port? %s", cfg.Addr, useTLS), ErrRefused)
}

// ClosedOnTLS says that the server at cfg.Addr closed the connection on
// the TLS ClientHello without a word, as a plaintext port of some engines
// (MongoDB) does (ErrRefused, before any session was answered).
func ClosedOnTLS(err error, cfg Config) error {
	if cfg.answered() {
		return dropped(err, cfg, "before answering")
	}
	return Mark(Explained(err, "the server at %s closed the connection at the TLS handshake: is it a plaintext port? use the plain variant (--tls off)", cfg.Addr), ErrRefused)
}

// dropped says that a server that answered on cfg.Addr before closed a
// connection when: before answering, or in mid-operation.
func dropped(err error, cfg Config, when string) error {
	how := "closed"
	if errors.Is(err, syscall.ECONNRESET) {
		how = "reset"
	}
	return Explained(err, "the server at %s %s the connection %s, though it answered the check on that port: did it restart, or did something in between drop the connection?", cfg.Addr, how, when)
}

func (c Config) answered() bool { return c.Answered != nil && c.Answered.Load() }

// Alert is the TLS alert the server sent on tc, if its connection failed
// on one: in TLS 1.3 a server refuses a client certificate (or its
// absence) after the client's handshake is over, so the client learns of
// it at its next read, or its next write meets the reset instead. crypto/tls
// keeps a received alert as the connection's read error, and the alert
// may still wait in the socket: a read with a past deadline returns it,
// or times out at once. Call it only on a connection that failed: it
// leaves the deadline in the past.
func Alert(tc *tls.Conn) error {
	if tc == nil {
		return nil
	}
	tc.SetReadDeadline(time.Unix(1, 0))
	_, err := tc.Read(make([]byte, 1))
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" {
		return err
	}
	return nil
}

// AlertOr is the alert on tc (see Alert) when err is the server closing or
// resetting the connection, else err.
func AlertOr(tc *tls.Conn, err error) error {
	if tc != nil && closed(err) {
		if a := Alert(tc); a != nil {
			return a
		}
	}
	return err
}

// setupTurns bounds the client turns of a connection's setup (tcp, a
// negotiation such as PostgreSQL's SSLRequest, a TLS 1.2 handshake with a
// HelloRetryRequest, the login): a connection closed within them, after
// its handshake, was refused at setup, not dropped later.
const setupTurns = 6

// alerted says whether err is a TLS alert the server sent.
func alerted(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}

// closed says whether err is the peer closing or resetting the connection.
// Closed reports whether err is the server closing or resetting the
// connection.
func Closed(err error) bool { return closed(err) }

func closed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// timedOut says whether err is a deadline that passed (not a cancellation).
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.As(err, &ne) && ne.Timeout()
}

// New makes the driver registered for a target scheme.
func New(scheme string, cfg Config) (Driver, error) {
	f, ok := registry[scheme]
	if !ok {
		return nil, fmt.Errorf("no driver for scheme %q", scheme)
	}
	return f(cfg)
}

var registry = map[string]func(Config) (Driver, error){}

// Register makes a driver available for the schemes given; engines call it
// from init.
func Register(f func(Config) (Driver, error), schemes ...string) {
	for _, s := range schemes {
		registry[s] = f
	}
}
