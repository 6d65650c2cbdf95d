// Package redisdrv is the Redis driver: go-redis running over one netx connection per session.
package redisdrv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/files"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
)

func init() {
	driver.Register(New, "redis")
	// go-redis logs some failures (a failed dial) to stderr by itself; a
	// library must not print: every failure reaches tlsbench as an error.
	redis.SetLogger(quietLogger{})
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// Phase names of a Redis session after tcp and tls-handshake.
const (
	PhaseAuth  = "auth"  // AUTH (and SELECT for a database other than 0): one round trip
	PhaseQuery = "query" // the first operation
)

// Workload names.
const (
	WorkloadGet    = "get"    // GET key:<n>, n uniform in [1, Rows]
	WorkloadStream = "stream" // GET stream:1, one value of Rows*100 bytes (at most 64 MiB)
)

// Sizes of the prepared data.
const (
	valueSize = 100 // bytes of each key:<n>
	maxStream = 64 << 20
	streamKey = "stream:1"
)

// useTLS is what to say to a plaintext client of a TLS port.
const useTLS = "use rediss://"

// StreamSize is the size of the stream workload's value for rows rows.
func StreamSize(rows int) int { return min(rows*valueSize, maxStream) }

type redisDriver struct {
	cfg      driver.Config
	user     string
	password string
	db       int
	stream   bool
	ping     bool // PING, no key
	rows     int
	maxBulk  int64 // the largest value a reply may announce (see respGuard)
	commands commands
}

// New returns a driver for cfg: user, password (or passfile=PATH) and
// database (the path, /0 if none) come from cfg.URL, TLS from cfg.TLS only.
// Tables is meaningless for Redis and ignored.
func New(cfg driver.Config) (driver.Driver, error) {
	d := &redisDriver{cfg: cfg, rows: cfg.Workload.Rows}
	switch cfg.Workload.Name {
	case "", WorkloadGet:
	case WorkloadStream:
		d.stream = true
	case plan.WorkloadPing:
		d.ping = true
		d.rows = max(d.rows, 1) // no prepared data
	case plan.WorkloadCommand:
		if len(cfg.Workload.User.Commands) == 0 {
			return nil, fmt.Errorf("redis workload %s: no command", cfg.Workload.Name)
		}
		d.commands = newCommands(cfg.Workload.User)
		d.rows = max(d.rows, 1) // no prepared data
	default:
		return nil, fmt.Errorf("redis has no workload %q: use %s, %s or %s", cfg.Workload.Name, WorkloadGet, WorkloadStream, plan.WorkloadPing)
	}
	if d.rows < 1 {
		return nil, fmt.Errorf("redis workload %s: %d rows: use 1 or more", cfg.Workload.Name, d.rows)
	}
	d.maxBulk = minBulk
	if d.stream {
		d.maxBulk = max(minBulk, int64(StreamSize(d.rows)))
	}
	if len(d.commands.args) > 0 {
		d.maxBulk = maxStream // the user's values: as large as the stream's
	}
	if u := cfg.URL; u != nil {
		if u.User != nil {
			d.user = u.User.Username()
			d.password, _ = u.User.Password()
		}
		if path := u.Query().Get("passfile"); path != "" && d.password == "" {
			data, err := files.Read(path, "passfile", files.MaxPEM)
			if err != nil {
				return nil, fmt.Errorf("reading the password file: %w", err)
			}
			d.password = strings.TrimRight(string(data), "\r\n")
		}
		if db := strings.Trim(u.Path, "/"); db != "" {
			n, err := strconv.Atoi(db)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("redis database %q in the URL's path is not a number", db)
			}
			d.db = n
		}
	}
	return d, nil
}

// Statements is the commands of an operation: one GET, or the user's
// commands.
func (d *redisDriver) Statements() int { return max(1, len(d.commands.args)) }

type session struct {
	driver.Link
	d      *redisDriver
	wire   *cancelConn // what go-redis reads and writes
	client *redis.Client
	dialed atomic.Bool
	stop   func() bool // removes the cancellation hook
	used   bool
}

// errNoRedial is what go-redis gets if it tries to open a second
// connection: a session is one connection, and a broken one is a failure to
// count, not something to repair silently.
var errNoRedial = errors.New("the session's connection is gone (no reconnect)")

// Open dials and runs TLS itself (tcp and tls-handshake phases), then gives
// the connection to a go-redis client of one connection and logs in: AUTH
// user password, plus SELECT if the database is not 0, in one round trip
// (auth phase). The client speaks RESP2, the wire's default, so it needs no
// HELLO; go-redis's own HELLO at connect is answered by a hook without
// reaching the server (see skipHello).
func (d *redisDriver) Open(ctx context.Context) (driver.Session, error) {
	s := &session{d: d, wire: &cancelConn{guard: respGuard{addr: d.cfg.Addr, maxBulk: d.maxBulk}}}
	// Built before the dial: its cost is the library's, not a phase's.
	s.client = redis.NewClient(&redis.Options{
		Addr:     d.cfg.Addr,
		Protocol: 2,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			if s.dialed.Swap(true) {
				return nil, errNoRedial
			}
			return s.wire, nil
		},
		DialerRetries:         1,
		MaxRetries:            -1,
		DialTimeout:           d.cfg.Timeout,
		ReadTimeout:           d.cfg.Timeout,
		WriteTimeout:          d.cfg.Timeout,
		ContextTimeoutEnabled: true,
		PoolSize:              1,
		MaxActiveConns:        1,
		MinIdleConns:          0,
		ConnMaxIdleTime:       -1,
		PipelinePoolSize:      -1, // pipelines on the session's one connection
		DisableIdentity:       true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	})
	s.client.AddHook(skipHello{})
	s.client.AddHook(bounded{wire: s.wire, timeout: d.cfg.Timeout})

	octx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	c, err := d.cfg.Dialer.Dial(octx, d.cfg.Addr)
	if err != nil {
		s.client.Close()
		return nil, s.opError(ctx, netx.PhaseTCP, err)
	}
	s.Net = c
	s.wire.raw, s.wire.Conn = c, c
	// An interrupted run must not wait for a slow server: cancelling ctx
	// unblocks every read and write at once, whatever deadline go-redis sets.
	s.stop = c.StopOn(ctx)
	s.wire.bound(d.cfg.Timeout)
	if d.cfg.TLS != nil {
		// Redis reads a ClientHello on its plaintext port as an
		// unfinished inline command and stays silent until the timeout,
		// or answers -ERR if the hello holds a newline byte, which says
		// "is it a plaintext port?" (driver.Explain). Silence alone says
		// "overloaded or stopped" on every engine; on Redis it may be
		// that port too, unless the check already spoke TLS on it.
		tc, err := netx.Handshake(octx, c, d.cfg.TLS)
		if err != nil {
			s.abort()
			err = s.opError(ctx, netx.PhaseTLSHandshake, err)
			answered := d.cfg.Answered != nil && d.cfg.Answered.Load() // the check took TLS on this port
			if _, got := c.Counters(); got == 0 && !answered && strings.HasSuffix(driver.Kind(err), ": timeout") {
				err = &driver.OpError{Phase: netx.PhaseTLSHandshake, Err: driver.Explained(errors.Unwrap(err),
					"%v; or it is Redis's plaintext port, silent on a TLS ClientHello: check the port, or use the plain variant (--tls off)", errors.Unwrap(err))}
			}
			return nil, err
		}
		s.Secure, s.wire.Conn = tc, tc
	}
	// The handshake ended as the server's last flight arrived.
	c.MarkAnswer(PhaseAuth)
	if err := s.login(octx); err != nil {
		s.abort()
		return nil, s.opError(ctx, PhaseAuth, err)
	}
	return s, nil
}

// opError names the phase of a failed step and its cause (see
// driver.Explain); a step ended by the cancellation of ctx (through the
// connection's deadline) says so, rather than only "i/o timeout".
func (s *session) opError(ctx context.Context, phase string, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	// A server that refused the client certificate (TLS 1.3: after the
	// handshake) resets the connection the login is written to: its alert
	// says why.
	err = driver.AlertOr(s.Secure, err)
	return &driver.OpError{Phase: phase, Err: driver.Explain(err, s.d.cfg, s.Net, useTLS)}
}

// login sends AUTH and SELECT as one pipeline: one round trip.
func (s *session) login(ctx context.Context) error {
	d := s.d
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		switch {
		case d.password != "" && d.user != "":
			p.AuthACL(ctx, d.user, d.password)
		case d.password != "":
			p.Auth(ctx, d.password)
		}
		if d.db != 0 {
			p.Select(ctx, d.db)
		}
		return nil
	})
	return err
}

func (s *session) abort() {
	s.stop()
	s.client.Close()
	s.Net.Close()
}

// Do runs one operation: a GET of a random key:<n> or of the whole stream
// value, a PING, or the user's commands.
func (s *session) Do(ctx context.Context) error {
	if !s.used {
		s.used = true
		s.Net.MarkAnswer(PhaseQuery)
	}
	if len(s.d.commands.args) > 0 {
		return s.runCommands(ctx)
	}
	if s.d.ping {
		if err := s.client.Ping(ctx).Err(); err != nil {
			return s.opError(ctx, PhaseQuery, err)
		}
		return nil
	}
	key := streamKey
	if !s.d.stream {
		key = "key:" + strconv.Itoa(1+rand.IntN(s.d.rows))
	}
	val, err := s.client.Get(ctx, key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return &driver.OpError{Phase: PhaseQuery, Err: fmt.Errorf("GET %s: no such key: prepare the data (tlsbench prepare)", key)}
	case err != nil:
		return s.opError(ctx, PhaseQuery, err)
	case s.d.stream && len(val) != StreamSize(s.d.rows):
		return &driver.OpError{Phase: PhaseQuery, Err: fmt.Errorf("GET %s: %d bytes, want %d: prepare the data again", key, len(val), StreamSize(s.d.rows))}
	}
	return nil
}

// Close closes the connection without QUIT (deprecated since Redis 7.2):
// over TLS a close_notify alert, then FIN; no round trip.
func (s *session) Close() error {
	s.Net.MarkOneWay(netx.PhaseClose)
	s.stop()
	s.client.Close()
	// go-redis closes the connection only if it ever took it.
	s.wire.Close()
	return nil
}

// ServerTLS asks the server which port the session reached: Redis keeps no
// per-connection TLS details, so a connection counts as TLS when its local
// address (CLIENT INFO laddr) is the server's tls-port; Version and Cipher
// stay "" (unknown); the client certificate is known from tls-auth-clients.
// CONFIG GET needs the user to have +config|get.
func (s *session) ServerTLS(ctx context.Context) (driver.ServerView, error) {
	info, err := s.client.ClientInfo(ctx).Result()
	if err != nil {
		return driver.ServerView{}, fmt.Errorf("CLIENT INFO: %w", err)
	}
	_, port, err := net.SplitHostPort(info.LAddr)
	if err != nil {
		return driver.ServerView{}, fmt.Errorf("CLIENT INFO laddr %q: %w", info.LAddr, err)
	}
	conf, err := s.client.ConfigGet(ctx, "tls-*").Result()
	if err != nil {
		return driver.ServerView{}, fmt.Errorf("CONFIG GET tls-*: %w", err)
	}
	tlsPort := conf["tls-port"]
	v := driver.ServerView{TLS: tlsPort != "" && tlsPort != "0" && tlsPort == port}
	// Redis names no client certificate (CLIENT INFO has none): a TLS
	// session that got in while tls-auth-clients is yes had one verified;
	// with no, none was asked for; optional cannot tell.
	switch conf["tls-auth-clients"] {
	case "yes":
		v.ClientCert, v.ClientCertKnown = "tls-auth-clients yes", v.TLS
	case "no":
		v.ClientCertKnown = v.TLS
	}
	return v, nil
}

// Peers implements driver.PeerChecker: CLIENT LIST's connections of the
// same user but this one, each TLS when its local address is the
// server's tls-port, as ServerTLS tells of its own.
func (s *session) Peers(ctx context.Context) (driver.Peers, error) {
	me, err := s.client.ClientInfo(ctx).Result()
	if err != nil {
		return driver.Peers{}, fmt.Errorf("CLIENT INFO: %w", err)
	}
	list, err := s.client.ClientList(ctx).Result()
	if err != nil {
		return driver.Peers{}, fmt.Errorf("CLIENT LIST: %w", err)
	}
	conf, err := s.client.ConfigGet(ctx, "tls-port").Result()
	if err != nil {
		return driver.Peers{}, fmt.Errorf("CONFIG GET tls-port: %w", err)
	}
	tlsPort := conf["tls-port"]
	p := driver.Peers{Open: map[string]driver.ServerView{}}
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		f := map[string]string{}
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			f[k] = v
		}
		if f["id"] == strconv.FormatInt(me.ID, 10) || f["user"] != me.User {
			continue
		}
		_, port, err := net.SplitHostPort(f["laddr"])
		if err != nil {
			return driver.Peers{}, fmt.Errorf("CLIENT LIST laddr %q: %w", f["laddr"], err)
		}
		p.Open[f["id"]] = driver.ServerView{TLS: tlsPort != "" && tlsPort != "0" && port == tlsPort}
	}
	return p, nil
}

// ConnCount implements driver.ConnCounter: INFO stats'
// total_connections_received, every client's on either port, counted as
// the server accepts a connection. Redis counts none over TLS apart.
func (s *session) ConnCount(ctx context.Context) (driver.ConnCount, error) {
	c := driver.ConnCount{Counter: "total_connections_received", Open: -1}
	info, err := s.client.Info(ctx, "stats").Result()
	if err != nil {
		return c, fmt.Errorf("INFO stats: %w", err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, c.Counter+":"); ok {
			c.Accepted, err = strconv.ParseInt(v, 10, 64)
			if err != nil {
				return c, fmt.Errorf("INFO stats: %s is %q, not a count", c.Counter, v)
			}
			return c, nil
		}
	}
	return c, errors.New("INFO stats has no total_connections_received")
}

// skipHello answers go-redis's HELLO at connect without sending it: on a
// RESP2 connection HELLO 2 changes nothing, and it would add a round trip
// to every connection that redis-cli and most RESP2 clients do not make.
// The session sends no HELLO of its own.
type skipHello struct{}

func (skipHello) DialHook(next redis.DialHook) redis.DialHook { return next }

func (skipHello) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "hello" {
			return nil
		}
		return next(ctx, cmd)
	}
}

func (skipHello) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// bounded ends every command and pipeline, as a whole, within the
// timeout: go-redis sets a deadline per write and per reply, which a
// server that drips its reply, or a pipeline of many replies, would
// stretch.
type bounded struct {
	wire    *cancelConn
	timeout time.Duration
}

func (b bounded) DialHook(next redis.DialHook) redis.DialHook { return next }

func (b bounded) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		b.wire.bound(b.timeout)
		return next(ctx, cmd)
	}
}

func (b bounded) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		b.wire.bound(b.timeout)
		return next(ctx, cmds)
	}
}

// cancelConn is the connection go-redis uses. No deadline go-redis sets
// passes the end of the current operation (see bounded); once the
// session's context is cancelled the netx conn keeps its deadline in the
// past (netx.Conn.StopOn). Deadlines go to the netx conn, which is where
// a TLS conn's go too. What it reads passes its respGuard.
type cancelConn struct {
	net.Conn          // the TLS conn, or raw
	raw      net.Conn // the netx conn
	guard    respGuard
	mu       sync.Mutex
	end      time.Time // of the current operation
}

// bound starts an operation that must end within timeout.
func (c *cancelConn) bound(timeout time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.end = time.Time{}
	if timeout > 0 {
		c.end = time.Now().Add(timeout)
	}
	c.raw.SetDeadline(c.end)
}

// Read passes what the server sent through the guard: go-redis has no
// bound of its own on a reply.
func (c *cancelConn) Read(p []byte) (int, error) {
	if c.guard.err != nil {
		return 0, c.guard.err
	}
	n, err := c.Conn.Read(p)
	if gerr := c.guard.scan(p[:n]); gerr != nil {
		return 0, gerr
	}
	return n, err
}

func (c *cancelConn) SetDeadline(t time.Time) error { return c.set(t, c.raw.SetDeadline) }

func (c *cancelConn) SetReadDeadline(t time.Time) error { return c.set(t, c.raw.SetReadDeadline) }

func (c *cancelConn) SetWriteDeadline(t time.Time) error { return c.set(t, c.raw.SetWriteDeadline) }

func (c *cancelConn) set(t time.Time, set func(time.Time) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.end.IsZero() && (t.IsZero() || t.After(c.end)) {
		t = c.end
	}
	return set(t)
}
