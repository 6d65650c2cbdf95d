package script

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// Client is one session's state: its variables, which last from pass to
// pass as pgbench's do, and its random source. Not safe for concurrent
// use; each session has its own.
type Client struct {
	mix  *Mix
	vars map[string]Value
	rng  *rand.Rand
	// Prepared says how statements are sent: with their parameters apart
	// (prepared) or with the values written into the text (simple).
	prepared bool
}

// NewClient returns the state of a session numbered id (:client_id) that
// sends prepared statements or, if not prepared, text with the values in
// place; tables and rows are the sbtest size (:tables, :rows).
func (m *Mix) NewClient(id int64, prepared bool, tables, rows int) *Client {
	return &Client{
		mix: m,
		vars: map[string]Value{
			"client_id":    Int(id),
			"scale":        Int(1), // pgbench's default for a custom script
			"random_seed":  Int(m.seed),
			"default_seed": Int(m.seed),
			"tables":       Int(int64(tables)),
			"rows":         Int(int64(rows)),
		},
		rng:      rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		prepared: prepared,
	}
}

// Exec runs one statement: prepared, query is st.Prepared and args are
// the values of st.Vars in order; simple, query is the text with the
// values written in and args is nil.
type Exec func(st *Statement, query string, args []Value) error

// Pass runs one pass through a script the mix picks: its \set and \sleep
// commands here, its statements through exec, in order. A \sleep ends
// early when ctx is done (with ctx's error), at the mix's timeout
// (TimeoutError) and at the end WithEnd put in ctx (ErrCut). An error
// names the script's file and line.
func (c *Client) Pass(ctx context.Context, exec Exec) error {
	sc := c.mix.pick(c.rng)
	en := &env{vars: c.vars, rng: c.rng}
	var start time.Time // of the pass, once it has a \sleep
	if sc.sleeps && c.mix.timeout > 0 {
		start = time.Now()
	}
	for _, cmd := range sc.cmds {
		switch {
		case cmd.stmt != nil:
			st := cmd.stmt
			var err error
			if c.prepared {
				args := make([]Value, len(st.Vars))
				for i, v := range st.Vars {
					args[i] = c.vars[v]
				}
				err = exec(st, st.Prepared, args)
			} else {
				err = exec(st, st.simple(c.vars), nil)
			}
			if err != nil {
				return &Error{File: sc.Name, Line: cmd.line, Err: err}
			}
		case cmd.sleep != nil:
			d, err := cmd.sleep.duration(c.vars)
			if err != nil {
				return &Error{File: sc.Name, Line: cmd.line, Msg: err.Error()}
			}
			if err := c.mix.pause(ctx, d, start); err != nil {
				return &Error{File: sc.Name, Line: cmd.line, Err: err}
			}
		default:
			v, err := cmd.expr.eval(en)
			if err != nil {
				return &Error{File: sc.Name, Line: cmd.line, Msg: err.Error() + " in command \"set\""}
			}
			c.vars[cmd.set] = v
		}
	}
	return nil
}

// duration is pgbench's evaluateSleep: a variable's value is read as an
// integer.
func (s *sleep) duration(vars map[string]Value) (time.Duration, error) {
	n := s.n
	if s.name != "" {
		v := vars[s.name]
		i, err := strconv.ParseInt(v.String(), 10, 32)
		if err != nil {
			return 0, fmt.Errorf("sleep: invalid sleep time %q for variable %q", v.String(), s.name)
		}
		n = i
	}
	return time.Duration(max(n, 0)) * s.unit, nil
}

// TimeoutError fails a pass whose \sleep would outlast the timeout that
// bounds every pass: the pass ends at the timeout, as one whose statement
// took that long would.
type TimeoutError struct{ Timeout time.Duration }

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("\\sleep: the pass would run past its timeout (%s): shorten the sleep or give a longer --timeout", e.Timeout)
}

// Cause names the kind of failure the pass is counted as.
func (e *TimeoutError) Cause() string { return "sleep past timeout" }

// ErrCut ends a pass whose \sleep was cut short at the end WithEnd set:
// the pass neither finished nor failed.
var ErrCut = errors.New("\\sleep cut short by the end of the trial")

type endKey struct{}

// WithEnd returns ctx with an end for the \sleeps of passes run under it
// (the end of a trial): a sleep that would last past end stops there and
// its pass returns ErrCut. Only a sleep reads it; the statements of a pass
// and ctx's own deadline are as they were.
func WithEnd(ctx context.Context, end time.Time) context.Context {
	return context.WithValue(ctx, endKey{}, end)
}

// pause sleeps d within a pass that started at start (zero without a
// timeout): until ctx is done, the pass's timeout, or ctx's end.
func (m *Mix) pause(ctx context.Context, d time.Duration, start time.Time) error {
	if d <= 0 {
		return nil
	}
	until := time.Now().Add(d)
	var cut error
	if !start.IsZero() {
		if limit := start.Add(m.timeout); until.After(limit) {
			until, cut = limit, &TimeoutError{Timeout: m.timeout}
		}
	}
	if end, ok := ctx.Value(endKey{}).(time.Time); ok && until.After(end) {
		until, cut = end, ErrCut
	}
	if wait := time.Until(until); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return cut
}
