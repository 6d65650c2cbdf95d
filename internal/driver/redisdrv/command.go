package redisdrv

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// commands is the user's workload (--command): every operation sends all
// of them, in order, as one pipeline (one write, then every reply: one
// round trip), each __rand_int__ replaced by its own random number in
// [0, keyspace). A command cannot use another's reply, so sending them one
// by one would add only waiting; a MULTI ... EXEC in the list is a
// transaction as written.
type commands struct {
	args     [][]plan.Template
	names    []string // upper-case command names, for messages
	keyspace int64
}

func newCommands(w plan.UserWorkload) commands {
	c := commands{keyspace: w.Keyspace}
	for _, cmd := range w.Commands {
		ts := make([]plan.Template, len(cmd))
		for i, a := range cmd {
			ts[i] = plan.NewTemplate([]byte(a))
		}
		c.args = append(c.args, ts)
		c.names = append(c.names, strings.ToUpper(cmd[0]))
	}
	return c
}

// fill returns command i's arguments for one operation.
func (c commands) fill(i int) []any {
	out := make([]any, len(c.args[i]))
	for j, t := range c.args[i] {
		out[j] = string(t.Fill(nil, c.keyspace))
	}
	return out
}

// run sends the commands as one pipeline and reads every reply. A nil
// reply (a missing key) is an answer, not a failure; an error reply fails
// the operation, counted by its code (WRONGTYPE, NOPERM, ...).
func (s *session) runCommands(ctx context.Context) error {
	c := s.d.commands
	cmds, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range c.args {
			p.Do(ctx, c.fill(i)...)
		}
		return nil
	})
	for i, cmd := range cmds {
		cerr := cmd.Err()
		if cerr == nil || errors.Is(cerr, redis.Nil) {
			continue
		}
		if re, ok := errors.AsType[redis.Error](cerr); ok {
			return &driver.OpError{Phase: PhaseQuery, Err: &replyError{n: i + 1, of: len(cmds), name: c.names[i], msg: re.Error()}}
		}
		return s.opError(ctx, PhaseQuery, cerr)
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return s.opError(ctx, PhaseQuery, err)
	}
	return nil
}

// replyError is an error reply to a command of the user's: the server's
// message (which holds no argument of the command), counted by its code.
type replyError struct {
	n, of int
	name  string
	msg   string
}

func (e *replyError) Error() string {
	return fmt.Sprintf("command %d of %d (%s): %s", e.n, e.of, e.name, e.msg)
}

// Cause is the error's code, its first word when that is upper case, as
// Redis writes codes (ERR, WRONGTYPE, NOAUTH); else "error reply".
func (e *replyError) Cause() string {
	code, _, _ := strings.Cut(e.msg, " ")
	if code == "" || len(code) > 32 || strings.ToUpper(code) != code || strings.ContainsFunc(code, func(r rune) bool { return r < 'A' || r > 'Z' }) {
		return "error reply"
	}
	return code
}
