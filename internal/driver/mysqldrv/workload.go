package mysqldrv

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// The statements of sysbench 1.0.20's oltp_common.lua; %d is the table.
const (
	sqlPointSelect   = "SELECT c FROM sbtest%d WHERE id=?"
	sqlSimpleRange   = "SELECT c FROM sbtest%d WHERE id BETWEEN ? AND ?"
	sqlSumRange      = "SELECT SUM(k) FROM sbtest%d WHERE id BETWEEN ? AND ?"
	sqlOrderRange    = "SELECT c FROM sbtest%d WHERE id BETWEEN ? AND ? ORDER BY c"
	sqlDistinctRange = "SELECT DISTINCT c FROM sbtest%d WHERE id BETWEEN ? AND ? ORDER BY c"
	sqlBegin         = "BEGIN"
	sqlCommit        = "COMMIT"
	sqlStream        = "SELECT * FROM sbtest1"
)

// oltp_read_only's defaults: --point-selects=10, --range-size=100, one
// of each range query.
const (
	pointSelects = 10
	rangeSize    = 100
)

// workload is what each Do runs.
type workload struct {
	statements int // per operation, for queries per second
	run        func(s *session, ctx context.Context) error
	tables     int
	rows       int
	queries    [][]string // per table (0-based), the range statements' texts
}

// Range statements in the order oltp_read_only runs them.
var rangeStatements = []string{sqlSimpleRange, sqlSumRange, sqlOrderRange, sqlDistinctRange}

func newWorkload(w driver.Workload) (workload, error) {
	switch w.QueryMode {
	case "", "prepared", "simple":
	default:
		return workload{}, fmt.Errorf("mysql: query mode %q: use prepared or simple", w.QueryMode)
	}
	if w.Scripts != nil {
		return scriptWorkload(w), nil
	}
	if w.Name == plan.WorkloadPing {
		return workload{statements: 1, run: (*session).ping}, nil
	}
	if w.Name != "stream" && (w.Tables < 1 || w.Rows < 1) {
		return workload{}, fmt.Errorf("mysql: %d tables of %d rows: the %s workload needs at least one row", w.Tables, w.Rows, w.Name)
	}
	wl := workload{statements: 1, tables: w.Tables, rows: w.Rows}
	for t := 1; t <= w.Tables; t++ {
		qs := []string{fmt.Sprintf(sqlPointSelect, t)}
		for _, r := range rangeStatements {
			qs = append(qs, fmt.Sprintf(r, t))
		}
		wl.queries = append(wl.queries, qs)
	}
	switch w.Name {
	case "", "point-select":
		wl.run = (*session).pointSelect
	case "read-only":
		wl.run = (*session).readOnly
		wl.statements = 2 + pointSelects + len(rangeStatements)
	case "stream":
		wl.run = (*session).stream
	default:
		return workload{}, fmt.Errorf("mysql: unknown workload %q: use point-select, read-only, stream or ping", w.Name)
	}
	return wl, nil
}

// table picks a table as sysbench's get_table_num does (uniformly).
func (w *workload) table() int { return rand.IntN(w.tables) }

// id picks a row id in [1, rows] (sysbench's get_id; uniform here).
func (w *workload) id() int64 { return 1 + rand.Int64N(int64(w.rows)) }

// ping is SELECT 1 in the text protocol, whatever the query mode: one
// round trip that reads no table.
func (s *session) ping(ctx context.Context) error {
	rows, err := s.dc.(sqldriver.QueryerContext).QueryContext(ctx, "SELECT 1", nil)
	if err != nil {
		return err
	}
	return s.read(rows)
}

// pointSelect is oltp_point_select's event: one row by primary key.
func (s *session) pointSelect(ctx context.Context) error {
	w := &s.d.work
	return s.query(ctx, w.queries[w.table()][0], w.id())
}

// readOnly is one oltp_read_only transaction: BEGIN, 10 point selects on
// one random table, then each range query on a random table of its own,
// COMMIT.
func (s *session) readOnly(ctx context.Context) error {
	w := &s.d.work
	if err := s.exec(ctx, sqlBegin); err != nil {
		return err
	}
	qs := w.queries[w.table()]
	for range pointSelects {
		if err := s.query(ctx, qs[0], w.id()); err != nil {
			return err
		}
	}
	for i := range rangeStatements {
		id := w.id()
		if err := s.query(ctx, w.queries[w.table()][1+i], id, id+rangeSize-1); err != nil {
			return err
		}
	}
	return s.exec(ctx, sqlCommit)
}

// stream reads the whole of sbtest1.
func (s *session) stream(ctx context.Context) error { return s.query(ctx, sqlStream) }

// query runs a statement and reads every row of its result.
func (s *session) query(ctx context.Context, q string, args ...int64) error {
	named := s.named[:0]
	if len(args) > len(s.named) {
		named = make([]sqldriver.NamedValue, 0, len(args))
	}
	named = named[:len(args)]
	for i, a := range args {
		named[i] = sqldriver.NamedValue{Ordinal: i + 1, Value: a}
	}
	var rows sqldriver.Rows
	if s.d.cfg.Workload.QueryMode == "simple" {
		// The driver interpolates the values: the text protocol.
		r, err := s.dc.(sqldriver.QueryerContext).QueryContext(ctx, q, named)
		if err != nil {
			return err
		}
		rows = r
	} else {
		st, err := s.prepared(ctx, q)
		if err != nil {
			return err
		}
		if rows, err = st.(sqldriver.StmtQueryContext).QueryContext(ctx, named); err != nil {
			return err
		}
	}
	return s.read(rows)
}

// read reads every row of a result.
func (s *session) read(rows sqldriver.Rows) error {
	n := len(rows.Columns())
	if cap(s.dest) < n {
		s.dest = make([]sqldriver.Value, n)
	}
	var err error
	for err == nil {
		err = rows.Next(s.dest[:n])
	}
	if err == io.EOF {
		err = nil
	}
	return errors.Join(err, rows.Close())
}

// exec runs a statement without a result (BEGIN, COMMIT), prepared as
// sysbench does in prepared mode.
func (s *session) exec(ctx context.Context, q string) error {
	if s.d.cfg.Workload.QueryMode == "simple" {
		_, err := s.dc.(sqldriver.ExecerContext).ExecContext(ctx, q, nil)
		return err
	}
	st, err := s.prepared(ctx, q)
	if err != nil {
		return err
	}
	_, err = st.(sqldriver.StmtExecContext).ExecContext(ctx, nil)
	return err
}

// prepared returns the session's prepared statement for q, preparing it
// on first use (one round trip more on that operation).
func (s *session) prepared(ctx context.Context, q string) (sqldriver.Stmt, error) {
	if st, ok := s.stmts[q]; ok {
		return st, nil
	}
	st, err := s.dc.(sqldriver.ConnPrepareContext).PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if s.stmts == nil {
		s.stmts = map[string]sqldriver.Stmt{}
	}
	s.stmts[q] = st
	return st, nil
}

// eachRow calls f for every row until the result ends.
func eachRow(rows sqldriver.Rows, f func([]sqldriver.Value)) error {
	dest := make([]sqldriver.Value, len(rows.Columns()))
	for {
		err := rows.Next(dest)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		f(dest)
	}
}
