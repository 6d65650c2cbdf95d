package pgdrv

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/script"
)

// scriptState is a session's part of a script workload: its variables and
// the statements prepared on its connection.
type scriptState struct {
	client   *script.Client
	prepared map[int]bool // by Statement.ID
}

// scriptWorkload runs passes through w.Scripts as pgbench does with -M
// prepared (each statement parsed once per connection as P_n, then bound
// and executed with its values as text parameters) or -M simple (the
// values written into the text, sent with the simple query protocol).
// Sessions are numbered from 0 for :client_id as they first run it.
func scriptWorkload(w driver.Workload) workload {
	clients := new(atomic.Int64)
	prepared := w.QueryMode != "simple"
	return workload{
		statements: w.Scripts.Statements(),
		run: func(ctx context.Context, s *session) error {
			if s.script == nil {
				id := clients.Add(1) - 1
				s.script = &scriptState{client: w.Scripts.NewClient(id, prepared, w.Tables, w.Rows), prepared: map[int]bool{}}
			}
			return s.script.pass(ctx, s.pg.PgConn(), prepared)
		},
	}
}

// errOpenTransaction is a pass that left a transaction open: the next
// would run inside it.
var errOpenTransaction = errors.New("the script ended inside a transaction block: end it with COMMIT or END (tlsbench rolled it back)")

// pass runs one pass on c. Statements run under the connection's deadline
// with a ctx that is never cancelled (see session.Do); ctx ends a \sleep.
// A pass that fails, or ends inside a transaction, is rolled back, so that
// the next starts clean.
func (st *scriptState) pass(ctx context.Context, c *pgconn.PgConn, prepared bool) error {
	bg := context.Background()
	err := st.client.Pass(ctx, func(stmt *script.Statement, query string, args []script.Value) error {
		if !prepared {
			return drain(c.Exec(bg, query))
		}
		if !st.prepared[stmt.ID] {
			if _, err := c.Prepare(bg, stmt.Name(), query, nil); err != nil {
				return err
			}
			st.prepared[stmt.ID] = true
		}
		params := make([][]byte, len(args))
		for i, a := range args {
			params[i] = a.Text()
		}
		rr := c.ExecPrepared(bg, stmt.Name(), params, nil, nil)
		for rr.NextRow() {
			// Read off the wire, not decoded, as the other workloads do.
		}
		_, err := rr.Close()
		return err
	})
	if c.TxStatus() != 'I' && !c.IsClosed() {
		rollback := drain(c.Exec(bg, "ROLLBACK"))
		if err == nil {
			err = errors.Join(errOpenTransaction, rollback)
		}
	}
	return err
}

// drain reads every result of a simple-protocol query off the wire and
// returns the first error. Close alone reads them: NextResult would drop
// the error of a failed read (a reset, a connection closed mid-answer, a
// message too long), and what it returned after is only "conn closed".
func drain(mrr *pgconn.MultiResultReader) error {
	return mrr.Close()
}
