package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tlsbench/tlsbench/internal/clientstack"
	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// The server's count of each client stack trial's connections
// (result.Trial.ServerCount). A stack's connections are another
// process's: what the server counted of them, read just before the
// stack's run and just after on a session of tlsbench's own (opened
// before the first read, so that it is not in the count), is set beside
// what the stack reported, and a difference is a warning naming both.

// stackCount reads a server's count around one stack trial.
type stackCount struct {
	s       io.Closer // the session cc reads on
	cc      driver.ConnCounter
	before  driver.ConnCount
	timeout time.Duration
}

// countStack opens the session that counts v's trial and reads the count
// before it; nil where the server keeps no count a client can read
// (MongoDB, HTTPS) or counts another's connections (an intermediary's,
// a pooler's), which a note says once. A count that cannot be read is a
// warning, once per variant, and the trial runs without it.
func (r *Runner) countStack(ctx context.Context, v plan.Variant) *stackCount {
	switch {
	case r.stacks.uncounted[v.ID]:
		return nil
	case r.Configs[v.ID].ServerTLS != nil:
		r.note("server counts: not of client stacks' connections through a pooler: the server counts the pooler's own")
		return nil
	}
	s, err := r.askSession(ctx, v)
	if err != nil {
		r.warnStack(v, fmt.Sprintf("client %s: the server's count of its connections was not read: %v", v.Client, err))
		return nil
	}
	cc, ok := s.(driver.ConnCounter)
	if !ok {
		s.Close()
		if r.stacks.uncounted == nil {
			r.stacks.uncounted = map[string]bool{}
		}
		r.stacks.uncounted[v.ID] = true // no session of it will count
		r.note("server counts: none of client stacks' connections on this server, which keeps no count of them that a client can read")
		return nil
	}
	c := &stackCount{s: s, cc: cc, timeout: r.Configs[v.ID].Timeout}
	if c.before, err = c.settle(ctx, -1); err != nil {
		s.Close()
		r.warnStack(v, fmt.Sprintf("client %s: the server's count of its connections was not read: %v", v.Client, err))
		return nil
	}
	return c
}

// settle reads the count until two reads peerPoll apart agree and no
// more than open of the login's other sessions are open (open < 0: any
// number), for at most the timeout: a PostgreSQL backend's session is
// counted as late as its exit, a moment after its client closed it.
func (c *stackCount) settle(ctx context.Context, open int64) (driver.ConnCount, error) {
	last, err := c.cc.ConnCount(ctx)
	for end := time.Now().Add(c.timeout); err == nil && time.Now().Before(end); {
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(peerPoll):
		}
		var now driver.ConnCount
		if now, err = c.cc.ConnCount(ctx); err != nil {
			break
		}
		if now == last && (open < 0 || now.Open <= open) {
			break
		}
		last = now
	}
	return last, err
}

// close closes the counting session; nil does nothing.
func (c *stackCount) close() {
	if c != nil {
		c.s.Close()
	}
}

// endCount reads the count after the trial t, whose stack reported rep:
// t's ServerCount, and a warning where it is not what the stack said.
func (r *Runner) endCount(ctx context.Context, c *stackCount, v plan.Variant, where string, t *result.Trial, rep clientstack.Report) {
	if c == nil {
		return
	}
	after, err := c.settle(ctx, c.before.Open)
	if err != nil {
		if ctx.Err() == nil {
			r.warnStack(v, fmt.Sprintf("client %s: the server's count of its connections was not read after %s: %v", v.Client, where, err))
		}
		return
	}
	sc := &result.ServerCount{Counter: after.Counter, Conns: after.Accepted - c.before.Accepted,
		TLSCounter: after.TLSCounter, TLS: after.TLS - c.before.TLS}
	if after.Open > c.before.Open {
		sc.Open = after.Open - c.before.Open
	}
	var failed int64
	for _, n := range t.Errors {
		failed += n
	}
	sc.Want = t.Conns + rep.Extra.Min
	if rep.Extra.Known {
		sc.WantMax = t.Conns + rep.Extra.Max + failed
	}
	t.ServerCount = sc
	if !sc.Agrees(!v.Plain()) {
		r.warnStack(v, countWarning(v, where, *sc, t.Conns, rep.Extra))
	}
}

// countWarning says how a server's count and a stack's differ.
func countWarning(v plan.Variant, where string, sc result.ServerCount, conns int64, extra clientstack.Extra) string {
	said := fmt.Sprintf("client %s reported %d", v.Client, conns)
	switch {
	case !extra.Known:
		said += " and opened an unknown number of its own"
	case extra.Max > extra.Min:
		said += fmt.Sprintf(" and opened %d to %d of its own", extra.Min, extra.Max)
	case extra.Max > 0:
		said += fmt.Sprintf(" and opened %d of its own", extra.Max)
	}
	tls := ""
	if sc.TLSCounter != "" {
		tls = fmt.Sprintf(", %d of them over TLS (%s)", sc.TLS, sc.TLSCounter)
	}
	open := ""
	if sc.Open > 0 {
		open = fmt.Sprintf("; %d of the login's sessions were still open when it was read", sc.Open)
	}
	asked := "over TLS"
	if v.Plain() {
		asked = "in plaintext"
	}
	return fmt.Sprintf("%s: the server counted %d connections (%s)%s where %s, all %s%s: another client of the server's, or connections the client did not report (each trial's counts are in the result's server_count)",
		where, sc.Conns, sc.Counter, tls, said, asked, open)
}

// warnStack warns once per variant: each trial's counts are in its
// result.
func (r *Runner) warnStack(v plan.Variant, w string) {
	if r.stacks.warned[v.ID] {
		return
	}
	if r.stacks.warned == nil {
		r.stacks.warned = map[string]bool{}
	}
	r.stacks.warned[v.ID] = true
	if r.Warn != nil {
		r.Warn(w)
	}
}

// note keeps a note on how the run was done, once.
func (r *Runner) note(n string) {
	for _, s := range r.Notes {
		if s == n {
			return
		}
	}
	r.Notes = append(r.Notes, n)
}

// askSession opens a session of v's Go driver over the bare link (the
// stack's relay carries whatever RTT v emulates: the asking is no part
// of it), to ask the server about a client stack's connections.
func (r *Runner) askSession(ctx context.Context, v plan.Variant) (driver.Session, error) {
	cfg, ok := r.Configs[v.ID]
	if !ok {
		return nil, fmt.Errorf("no connection settings for variant %s", v.ID)
	}
	if cfg.Dialer != nil {
		cfg.Dialer = cfg.Dialer.WithRTT(0)
	}
	cfg.PerConn = 1
	d, err := r.newDriver(r.Scheme, cfg)
	if err != nil {
		return nil, err
	}
	s, err := d.Open(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening a session to ask the server about client %s's connections: %w", v.Client, r.explain(err, v))
	}
	return s, nil
}
