package pgdrv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// sysbench 1.0.20's oltp_read_only defaults: statements of each kind in
// one transaction, and the number of rows a range covers.
const (
	pointSelects = 10
	rangeSize    = 100
)

// workload is what one operation does on a session. ctx is Do's: the
// statements themselves run under the connection's deadline.
type workload struct {
	run        func(ctx context.Context, s *session) error
	statements int // per operation, for queries per second
}

// onConn runs f on the session's connection with a ctx that is never
// cancelled (see session.Do).
func onConn(f func(ctx context.Context, c *pgx.Conn) error) func(context.Context, *session) error {
	return func(_ context.Context, s *session) error { return f(context.Background(), s.pg) }
}

// sbtest holds each statement's SQL for tables sbtest1..N, built once.
type sbtest struct {
	tables, rows int
	simple       bool // --query-mode simple: no prepared statements
	point        []string
	pointName    []string // the prepared statement of point, per table
	simpleRange  []string
	sumRange     []string
	orderRange   []string
	distinct     []string
}

func newWorkload(w driver.Workload) (workload, error) {
	if w.Scripts != nil {
		return scriptWorkload(w), nil
	}
	if w.Name == plan.WorkloadPing {
		return workload{run: onConn(ping), statements: 1}, nil
	}
	if w.Name != "stream" && (w.Tables < 1 || w.Rows < 1) {
		return workload{}, fmt.Errorf("postgres: workload %q needs the size of the sbtest data (tables %d, rows %d)", w.Name, w.Tables, w.Rows)
	}
	sb := &sbtest{tables: w.Tables, rows: w.Rows, simple: w.QueryMode == "simple"}
	for n := 1; n <= w.Tables; n++ {
		sb.point = append(sb.point, fmt.Sprintf("SELECT c FROM sbtest%d WHERE id=$1", n))
		sb.pointName = append(sb.pointName, fmt.Sprintf("tlsbench_point_sbtest%d", n))
		sb.simpleRange = append(sb.simpleRange, fmt.Sprintf("SELECT c FROM sbtest%d WHERE id BETWEEN $1 AND $2", n))
		sb.sumRange = append(sb.sumRange, fmt.Sprintf("SELECT SUM(k) FROM sbtest%d WHERE id BETWEEN $1 AND $2", n))
		sb.orderRange = append(sb.orderRange, fmt.Sprintf("SELECT c FROM sbtest%d WHERE id BETWEEN $1 AND $2 ORDER BY c", n))
		sb.distinct = append(sb.distinct, fmt.Sprintf("SELECT DISTINCT c FROM sbtest%d WHERE id BETWEEN $1 AND $2 ORDER BY c", n))
	}
	switch w.Name {
	case "", "point-select":
		return workload{run: onConn(sb.pointSelect), statements: 1}, nil
	case "read-only":
		return workload{run: onConn(sb.readOnly), statements: 1 + pointSelects + 4 + 1}, nil
	case "stream":
		return workload{run: onConn(stream), statements: 1}, nil
	}
	return workload{}, fmt.Errorf("postgres: unknown workload %q: use point-select, read-only, stream or ping", w.Name)
}

// ping is SELECT 1 in the simple query protocol: one round trip that
// reads no table.
func ping(ctx context.Context, c *pgx.Conn) error {
	_, err := c.PgConn().Exec(ctx, "SELECT 1").ReadAll()
	return err
}

// table and id draw uniformly, as sysbench does with --rand-type=uniform
// (its default, "special", favours a few ids).
func (sb *sbtest) table() int { return rand.IntN(sb.tables) }
func (sb *sbtest) id() int    { return 1 + rand.IntN(sb.rows) }

// pointSelect is sysbench's oltp_point_select: one row by primary key.
// Prepared, it runs at pgconn's level, as pgbench -M prepared does on
// libpq's: the statement prepared once per connection (pgx's Prepare
// returns it from the connection's own map after that), the id written
// as text into a buffer on the stack, the row read off the wire in the
// connection's own result reader; no per-query arguments, rows or
// statement-cache lookups to allocate.
func (sb *sbtest) pointSelect(ctx context.Context, c *pgx.Conn) error {
	t := sb.table()
	if sb.simple { // not c.Config(): that copies the whole configuration
		return query(ctx, c, sb.point[t], sb.id())
	}
	sd, err := c.Prepare(ctx, sb.pointName[t], sb.point[t])
	if err != nil {
		return err
	}
	var id [20]byte
	params := [1][]byte{strconv.AppendInt(id[:0], int64(sb.id()), 10)}
	rr := c.PgConn().ExecPrepared(ctx, sd.Name, params[:], nil, nil)
	for rr.NextRow() {
		// NextRow has read the row; nothing to decode.
	}
	_, err = rr.Close()
	return err
}

// readOnly is one sysbench oltp_read_only transaction. As in
// oltp_common.lua, each group of statements picks its own table.
func (sb *sbtest) readOnly(ctx context.Context, c *pgx.Conn) error {
	if _, err := c.Exec(ctx, "BEGIN"); err != nil {
		return err
	}
	t := sb.table()
	for range pointSelects {
		if err := query(ctx, c, sb.point[t], sb.id()); err != nil {
			return err
		}
	}
	for _, stmts := range [][]string{sb.simpleRange, sb.sumRange, sb.orderRange, sb.distinct} {
		id := sb.id()
		if err := query(ctx, c, stmts[sb.table()], id, id+rangeSize-1); err != nil {
			return err
		}
	}
	_, err := c.Exec(ctx, "COMMIT")
	return err
}

// stream reads the whole of sbtest1.
func stream(ctx context.Context, c *pgx.Conn) error {
	return query(ctx, c, "SELECT * FROM sbtest1")
}

// query runs sql and reads every row of its result off the wire, without
// decoding it: the client's work stays the protocol's.
func query(ctx context.Context, c *pgx.Conn, sql string, args ...any) error {
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		// Next has read the row; nothing to decode.
	}
	rows.Close()
	return rows.Err()
}
