package mysqldrv

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// sysbench 1.0.20's oltp_common.lua table, index created after the rows.
const (
	sqlCreateTable = `CREATE TABLE sbtest%d (
  id INTEGER NOT NULL AUTO_INCREMENT,
  k INTEGER DEFAULT '0' NOT NULL,
  c CHAR(120) DEFAULT '' NOT NULL,
  pad CHAR(60) DEFAULT '' NOT NULL,
  PRIMARY KEY (id)
) ENGINE = InnoDB`
	sqlCreateIndex = "CREATE INDEX k_%d ON sbtest%d(k)"
	// insertBatch is how many rows one INSERT carries (~190 kB).
	insertBatch = 1000
)

// errNoSuchTable is MySQL's ER_NO_SUCH_TABLE.
const errNoSuchTable = 1146

// Prepare implements driver.Preparer: sbtest1..tables of rows rows each,
// as sysbench's prepare makes them. A table that already has exactly rows
// rows is kept; any other is dropped and made anew.
func (d *mysqlDriver) Prepare(ctx context.Context, tables, rows int, progress func(done, total int64)) error {
	if tables < 1 || rows < 1 {
		return fmt.Errorf("mysql: prepare %d tables of %d rows: use at least one of each", tables, rows)
	}
	ds, err := d.Open(ctx)
	if err != nil {
		return err
	}
	s := ds.(*session)
	defer s.Close()
	total := int64(tables) * int64(rows)
	var done int64
	report := func() {
		if progress != nil {
			progress(done, total)
		}
	}
	report()
	for t := 1; t <= tables; t++ {
		n, err := s.count(ctx, t)
		if err != nil {
			return err
		}
		if n == int64(rows) {
			done += int64(rows)
			report()
			continue
		}
		stmts := []string{fmt.Sprintf("DROP TABLE IF EXISTS sbtest%d", t), fmt.Sprintf(sqlCreateTable, t)}
		for _, q := range stmts {
			if err := s.run(ctx, q); err != nil {
				return fmt.Errorf("mysql: creating sbtest%d: %w", t, err)
			}
		}
		var sb strings.Builder
		for first := 1; first <= rows; first += insertBatch {
			last := min(first+insertBatch-1, rows)
			if err := s.run(ctx, insertRows(&sb, t, first, last, rows)); err != nil {
				return fmt.Errorf("mysql: filling sbtest%d: %w", t, err)
			}
			done += int64(last - first + 1)
			report()
		}
		if err := s.run(ctx, fmt.Sprintf(sqlCreateIndex, t, t)); err != nil {
			return fmt.Errorf("mysql: indexing sbtest%d: %w", t, err)
		}
	}
	return nil
}

// count is how many rows sbtestN has, -1 if there is no such table.
func (s *session) count(ctx context.Context, table int) (int64, error) {
	return s.tableFigure(ctx, "SELECT COUNT(*) FROM sbtest%d", table)
}

// tableFigure runs a query (with %d for the table's number) that returns
// one number about sbtestN; -1 if there is no such table.
func (s *session) tableFigure(ctx context.Context, query string, table int) (int64, error) {
	s.conn.SetDeadline(deadline(s.d.cfg.Timeout))
	rows, err := s.dc.(sqldriver.QueryerContext).QueryContext(ctx, fmt.Sprintf(query, table), nil)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == errNoSuchTable {
		return -1, nil
	}
	if err != nil {
		return 0, &driver.OpError{Phase: PhaseQuery, Err: s.o.cause(err)}
	}
	defer rows.Close()
	var n int64 = -1
	err = eachRow(rows, func(row []sqldriver.Value) {
		n, _ = strconv.ParseInt(asString(row[0]), 10, 64)
	})
	if err != nil {
		return 0, &driver.OpError{Phase: PhaseQuery, Err: s.o.cause(err)}
	}
	return n, nil
}

// run executes a statement in the text protocol.
func (s *session) run(ctx context.Context, q string) error {
	s.conn.SetDeadline(deadline(s.d.cfg.Timeout))
	if _, err := s.dc.(sqldriver.ExecerContext).ExecContext(ctx, q, nil); err != nil {
		return &driver.OpError{Phase: PhaseQuery, Err: s.o.cause(err)}
	}
	return nil
}

// insertRows builds one multi-row INSERT of rows first..last, valued as
// sysbench's: k uniform in [1, tableRows], c ten and pad five groups of
// 11 random digits joined by '-'.
func insertRows(sb *strings.Builder, table, first, last, tableRows int) string {
	sb.Reset()
	fmt.Fprintf(sb, "INSERT INTO sbtest%d (id, k, c, pad) VALUES ", table)
	for id := first; id <= last; id++ {
		if id > first {
			sb.WriteByte(',')
		}
		sb.WriteByte('(')
		sb.WriteString(strconv.Itoa(id))
		sb.WriteByte(',')
		sb.WriteString(strconv.Itoa(1 + rand.IntN(tableRows)))
		sb.WriteString(",'")
		digitGroups(sb, 10)
		sb.WriteString("','")
		digitGroups(sb, 5)
		sb.WriteString("')")
	}
	return sb.String()
}

// digitGroups writes n groups of 11 random digits joined by '-'.
func digitGroups(sb *strings.Builder, n int) {
	for g := range n {
		if g > 0 {
			sb.WriteByte('-')
		}
		for range 11 {
			sb.WriteByte(byte('0' + rand.IntN(10)))
		}
	}
}

// CheckData implements driver.DataChecker: every table the workload reads
// exists and has its ids (a point select of a missing id finds no row and
// fails nothing, so a short table would go unnoticed).
func (s *session) CheckData(ctx context.Context) error {
	w := s.d.cfg.Workload
	if w.Scripts != nil || w.Name == plan.WorkloadPing {
		return nil // a script reads the user's tables, whatever they are; a ping none
	}
	tables := w.Tables
	if w.Name == "stream" {
		tables = 1 // it reads sbtest1 whole, however many rows
	}
	for n := 1; n <= tables; n++ {
		maxID, err := s.tableFigure(ctx, "SELECT COALESCE(MAX(id), 0) FROM sbtest%d", n)
		if err != nil {
			return err
		}
		if maxID < 0 || (w.Name != "stream" && maxID < int64(w.Rows)) {
			return &driver.MissingData{Table: fmt.Sprintf("sbtest%d", n), MaxID: maxID, Rows: int64(w.Rows)}
		}
	}
	return nil
}
