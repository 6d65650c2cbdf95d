package mongodrv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/netx"
)

// A mongo.Client opens two kinds of connection to a server: one for its
// background monitor (hello every heartbeat), and those of its operation
// pool (hello, authentication, then commands). tlsbench's client has one
// of each: a direct connection (one server, one monitor), polling
// monitoring (no third, RTT-measuring connection) and a pool of one. The
// driver readies its pool at Connect, so the two dials would race: the
// pool's is held back (in the pool monitor's callback, which the driver
// calls on the dialing goroutine) until the monitor's first heartbeat has
// ended. The monitor so dials first and alone, and every dial after that
// heartbeat is the pool's: that is how the dialer tells the two apart. The
// operation connection's phases are the session's; the monitor's are kept
// apart. No server is selected before that heartbeat anyway, so an
// operation's wait is the same.
type client struct {
	d      *mongoDriver
	ctx    context.Context // the session's: cancelling it unblocks every conn
	mongo  *mongo.Client
	ready  chan struct{} // the pool's connection finished its handshake
	failed chan struct{} // err is set
	done   chan struct{} // the monitor's first heartbeat ended

	mu        sync.Mutex
	err       error
	monitor   *link // the monitor's latest connection
	op        *link // the operation connection
	monitors  int   // monitor dials (a later one follows a broken connection)
	doneOnce  sync.Once
	readyOnce sync.Once
	stops     []func() bool
}

// link is one dialed connection: the counting conn, and the TLS conn above
// it when the variant has TLS.
type link struct {
	net    *netx.Conn
	secure *tls.Conn
}

// errNoRedial is what the driver gets if it opens a second operation
// connection: a session is one connection, and a broken one is a failure
// to count, not something to repair silently.
var errNoRedial = errors.New("the session's connection is gone (no reconnect)")

// explainAlert is driver.Explain of the alert on l, or err as it is.
func (c *client) explainAlert(l *link, err error) error {
	if l != nil && l.secure != nil {
		// The connection failed: what the driver says of it leaves out
		// the alert that ended it.
		if a := driver.Alert(l.secure); a != nil {
			return driver.Explain(a, c.d.cfg, l.net, useTLS)
		}
	}
	if msg := err.Error(); c.d.x509 && (strings.Contains(msg, "'authenticate'") || strings.Contains(msg, "MONGODB-X509")) {
		// FerretDB answers MONGODB-X509's authenticate command with
		// CommandNotFound.
		return driver.Explained(err, "the server at %s does not support authMechanism=MONGODB-X509 (%s): log in with a user and password instead, keeping tlsCertificateKeyFile= for the handshake (FerretDB has no X.509 authentication)", c.d.cfg.Addr, msg)
	}
	return err
}

// newClient starts a client; with warm, its pool opens its connection at
// once (min pool size 1), as a session's does, else at the first
// operation, as a new client's does by default. It does not wait.
func (d *mongoDriver) newClient(ctx context.Context, warm bool) (*client, error) {
	c := &client{d: d, ctx: ctx, ready: make(chan struct{}), failed: make(chan struct{}), done: make(chan struct{})}
	o := options.Client().
		SetDialer(c).
		SetMaxPoolSize(1).
		SetPoolMonitor(&event.PoolMonitor{Event: c.poolEvent}).
		SetServerMonitor(&event.ServerMonitor{
			ServerHeartbeatSucceeded: func(*event.ServerHeartbeatSucceededEvent) { c.heartbeat(nil) },
			ServerHeartbeatFailed:    func(e *event.ServerHeartbeatFailedEvent) { c.heartbeat(e.Failure) },
		})
	if warm {
		o.SetMinPoolSize(1)
	}
	m, err := mongo.Connect(d.base, o)
	if err != nil {
		return nil, fmt.Errorf("mongodb: %s", d.redact(err.Error()))
	}
	c.mongo = m
	return c, nil
}

// DialContext implements options.ContextDialer: tcp and TLS, each a phase
// of a counting conn, then the hello phase, which the driver's handshake
// starts.
func (c *client) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	isMonitor := true
	select {
	case <-c.done:
		isMonitor = false
	default:
	}
	c.mu.Lock()
	if !isMonitor && c.op != nil {
		c.mu.Unlock()
		return nil, errNoRedial
	}
	c.mu.Unlock()
	nc, err := c.d.cfg.Dialer.Dial(ctx, c.d.cfg.Addr)
	if err != nil {
		return nil, c.fail(&driver.OpError{Phase: netx.PhaseTCP, Err: driver.Explain(err, c.d.cfg, nil, useTLS)})
	}
	// An interrupted run must not wait for a slow server.
	stop := nc.StopOn(c.ctx)
	l := &link{net: nc}
	var conn net.Conn = nc
	if c.d.tls != nil {
		tc, err := netx.Handshake(ctx, nc, c.d.tls)
		if err != nil {
			stop()
			nc.Close()
			// A MongoDB-protocol port reads a ClientHello as a message too
			// long to be one and closes the connection: driver.Explain
			// asks whether it is a plaintext port.
			return nil, c.fail(&driver.OpError{Phase: netx.PhaseTLSHandshake, Err: driver.Explain(err, c.d.cfg, nc, useTLS)})
		}
		l.secure, conn = tc, tc
	}
	// The handshake ended as the server's last flight arrived.
	nc.MarkAnswer(PhaseHello)
	c.mu.Lock()
	c.stops = append(c.stops, stop)
	if isMonitor {
		c.monitor = l
		c.monitors++
	} else {
		c.op = l
	}
	c.mu.Unlock()
	return &phaseConn{Conn: conn, count: nc}, nil
}

// heartbeat notes the end of a monitor check: the first one lets the pool
// dial; a failed one before the pool's connection is ready fails the client.
func (c *client) heartbeat(err error) {
	if err == nil {
		c.mu.Lock()
		if m := c.monitor; m != nil && c.monitors == 1 {
			// The monitor's handshake is over: later heartbeats add round
			// trips, not time, to its hello phase.
			m.net.Mark("")
		}
		c.mu.Unlock()
	}
	c.doneOnce.Do(func() { close(c.done) })
	if err != nil {
		c.mu.Lock()
		phase := PhaseHello
		if c.err == nil && c.monitor != nil && c.monitors > 0 {
			phase = lastPhase(c.monitor.net)
		}
		m := c.monitor
		c.mu.Unlock()
		c.fail(&driver.OpError{Phase: phase, Err: c.explainAlert(m, c.d.closedAtHello(err))})
	}
}

// poolEvent holds the pool's dial until the monitor's first heartbeat has
// ended (the driver calls it on the pool's goroutine right before dialing)
// and reports the connection ready or failed.
func (c *client) poolEvent(e *event.PoolEvent) {
	switch e.Type {
	case event.ConnectionCreated:
		select {
		case <-c.done:
		case <-c.ctx.Done():
		case <-time.After(c.d.cfg.Timeout):
		}
	case event.ConnectionReady:
		// The handshake is over: what follows its answer is the first
		// operation.
		c.mu.Lock()
		if c.op != nil {
			c.op.net.MarkAnswer(PhaseQuery)
		}
		c.mu.Unlock()
		c.readyOnce.Do(func() { close(c.ready) })
	case event.ConnectionClosed:
		if e.Reason == event.ReasonError && e.Error != nil {
			phase := PhaseHello
			c.mu.Lock()
			if c.op != nil {
				phase = lastPhase(c.op.net)
			}
			op := c.op
			c.mu.Unlock()
			// The pool's connection may meet a TLS-only port before the
			// monitor's heartbeat does: the same refusal either way.
			c.fail(&driver.OpError{Phase: phase, Err: c.explainAlert(op, c.d.closedAtHello(e.Error))})
		}
	}
}

// fail records the client's first failure and returns err.
func (c *client) fail(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		close(c.failed)
	}
	return err
}

// waitReady waits until the pool's connection is ready, the client failed,
// ctx is cancelled or the timeout passed.
func (c *client) waitReady(ctx context.Context) error {
	t := time.NewTimer(c.d.cfg.Timeout)
	defer t.Stop()
	select {
	case <-c.ready:
		return nil
	case <-c.failed:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.err
	case <-ctx.Done():
		return &driver.OpError{Phase: PhaseHello, Err: ctx.Err()}
	case <-t.C:
		return &driver.OpError{Phase: PhaseHello, Err: fmt.Errorf("%w: no connection ready within %v", context.DeadlineExceeded, c.d.cfg.Timeout)}
	}
}

// links returns the operation and monitor connections.
func (c *client) links() (op, monitor *link) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.op, c.monitor
}

// close disconnects the client: endSessions on the operation connection
// if a session was used, then every connection closes.
func (c *client) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), c.d.cfg.Timeout)
	defer cancel()
	err := c.mongo.Disconnect(ctx)
	c.mu.Lock()
	for _, stop := range c.stops {
		stop()
	}
	c.mu.Unlock()
	return err
}

// lastPhase is the name of a conn's current phase.
func lastPhase(c *netx.Conn) string {
	tr := c.Finish()
	return tr.Phases[len(tr.Phases)-1].Name
}

// closedAtHello rephrases a hello that the server ended without an answer,
// as a TLS port does with a plaintext client.
func (d *mongoDriver) closedAtHello(err error) error {
	// The driver's connection errors do not always wrap io.EOF.
	if d.tls == nil && (errors.Is(err, io.EOF) || strings.Contains(err.Error(), "EOF") || isReset(err)) {
		return driver.ClosedOnPlaintext(d.clean(err), d.cfg, useTLS)
	}
	return d.clean(err)
}

func isReset(err error) bool {
	var se *os.SyscallError
	return errors.As(err, &se) && strings.Contains(se.Error(), "reset")
}
