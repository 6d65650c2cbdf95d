package mysqldrv

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"sync/atomic"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/script"
)

// scriptWorkload runs passes through w.Scripts: prepared mode as
// server-side prepared statements (each prepared once per connection,
// then executed with its values in the binary protocol), simple mode as
// text with the values written in (COM_QUERY). Sessions are numbered from
// 0 for :client_id as they first run it.
func scriptWorkload(w driver.Workload) workload {
	clients := new(atomic.Int64)
	prepared := w.QueryMode != "simple"
	return workload{
		statements: w.Scripts.Statements(),
		tables:     w.Tables,
		rows:       w.Rows,
		run: func(s *session, ctx context.Context) error {
			if s.script == nil {
				s.script = w.Scripts.NewClient(clients.Add(1)-1, prepared, w.Tables, w.Rows)
			}
			return s.scriptPass(ctx)
		},
	}
}

// scriptPass runs one pass; Do's ctx ends a \sleep (the statements run
// under the connection's deadline, and cancelling Open's ctx ends them). A failed pass is rolled back, so that
// the next starts clean; the driver does not tell whether a pass that
// succeeded left a transaction open (MySQL's next BEGIN commits it).
func (s *session) scriptPass(ctx context.Context) error {
	err := s.script.Pass(s.opCtx, func(_ *script.Statement, query string, args []script.Value) error {
		if s.d.cfg.Workload.QueryMode == "simple" {
			return s.query(ctx, query) // the text protocol, no arguments
		}
		named := make([]sqldriver.NamedValue, len(args))
		for i, a := range args {
			named[i] = sqldriver.NamedValue{Ordinal: i + 1, Value: a.Any()}
		}
		st, err := s.prepared(ctx, query)
		if err != nil {
			return err
		}
		rows, err := st.(sqldriver.StmtQueryContext).QueryContext(ctx, named)
		if err != nil {
			return err
		}
		return errors.Join(eachRow(rows, func([]sqldriver.Value) {}), rows.Close())
	})
	if err != nil {
		s.dc.(sqldriver.ExecerContext).ExecContext(ctx, "ROLLBACK", nil)
	}
	return err
}
