package pgdrv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"

	"github.com/jackc/pgx/v5"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// prepareBatch is how many rows one COPY loads, and how often progress is
// reported.
const prepareBatch = 10000

// Prepare implements driver.Preparer: tables sbtest1..N as sysbench's
// oltp_common.lua makes them for PostgreSQL, each of rows rows, loaded with
// COPY. A table that already has exactly rows rows is left alone; any other
// is dropped and made again. Tables made are analyzed. The connection is
// plain unless the URL demands TLS (sslmode=require, verify-ca or
// verify-full); it is not measured.
func (d *pgDriver) Prepare(ctx context.Context, tables, rows int, progress func(done, total int64)) error {
	if tables < 1 || rows < 1 {
		return fmt.Errorf("postgres: cannot prepare %d tables of %d rows", tables, rows)
	}
	c, err := d.connectUnmeasured(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connecting to prepare the sbtest tables: %w", d.explain(err, nil))
	}
	defer c.Close(context.Background())

	total := int64(tables) * int64(rows)
	var done int64
	report := func(n int) {
		done += int64(n)
		if progress != nil {
			progress(done, total)
		}
	}
	var made []string
	for n := 1; n <= tables; n++ {
		table := fmt.Sprintf("sbtest%d", n)
		ok, err := hasRows(ctx, c, table, rows)
		if err != nil {
			return fmt.Errorf("postgres: checking %s: %w", table, err)
		}
		if ok {
			report(rows)
			continue
		}
		if err := createTable(ctx, c, n, rows, report); err != nil {
			return fmt.Errorf("postgres: preparing %s: %w", table, err)
		}
		made = append(made, table)
	}
	for _, table := range made {
		if _, err := c.Exec(ctx, "ANALYZE "+table); err != nil {
			return fmt.Errorf("postgres: analyzing %s: %w", table, err)
		}
	}
	return nil
}

// connectUnmeasured logs in as Open does, but over a plain net.Conn: bulk
// loading is no experiment, and pgx may read and write it at once.
func (d *pgDriver) connectUnmeasured(ctx context.Context) (*pgx.Conn, error) {
	cc := *d.base
	cc.TLSConfig = nil
	switch d.sslmode {
	case "require", "verify-ca", "verify-full":
		cc.TLSConfig = d.cfg.TLS
		if cc.TLSConfig == nil {
			cc.TLSConfig = d.urlTLS
		}
	}
	var nd net.Dialer
	cc.DialFunc = func(ctx context.Context, _, _ string) (net.Conn, error) {
		return nd.DialContext(ctx, "tcp", d.cfg.Addr)
	}
	if d.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.cfg.Timeout)
		defer cancel()
	}
	return pgx.ConnectConfig(ctx, &cc)
}

// hasRows reports whether table exists with exactly rows rows.
func hasRows(ctx context.Context, c *pgx.Conn, table string, rows int) (bool, error) {
	var exists bool
	if err := c.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil || !exists {
		return false, err
	}
	var n int64
	err := c.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n)
	return n == int64(rows), err
}

// createTable makes sbtestN anew and fills it: k uniform in [1,rows], c and
// pad random digits in sysbench's templates; ids 1..rows come from the
// sequence. The secondary index is built after the load, as sysbench does.
func createTable(ctx context.Context, c *pgx.Conn, n, rows int, report func(int)) error {
	table := fmt.Sprintf("sbtest%d", n)
	for _, q := range []string{
		"DROP TABLE IF EXISTS " + table,
		"CREATE TABLE " + table + " (id SERIAL PRIMARY KEY, k INTEGER NOT NULL DEFAULT 0, " +
			"c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '')",
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			return err
		}
	}
	buf := make([]byte, 0, 120)
	for left := rows; left > 0; {
		batch := min(left, prepareBatch)
		src := pgx.CopyFromSlice(batch, func(int) ([]any, error) {
			k := int32(1 + rand.IntN(rows))
			return []any{k, digitGroups(buf, 10), digitGroups(buf, 5)}, nil
		})
		if _, err := c.CopyFrom(ctx, pgx.Identifier{table}, []string{"k", "c", "pad"}, src); err != nil {
			return err
		}
		left -= batch
		report(batch)
	}
	_, err := c.Exec(ctx, fmt.Sprintf("CREATE INDEX k_%d ON %s (k)", n, table))
	return err
}

// digitGroups is sysbench's c and pad template: groups of 11 random digits
// joined by '-'.
func digitGroups(buf []byte, groups int) string {
	buf = buf[:0]
	for g := range groups {
		if g > 0 {
			buf = append(buf, '-')
		}
		for range 11 {
			buf = append(buf, byte('0'+rand.IntN(10)))
		}
	}
	return string(buf)
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
	ctx, cancel := context.WithTimeout(ctx, s.d.cfg.Timeout)
	defer cancel()
	for n := 1; n <= tables; n++ {
		table := fmt.Sprintf("sbtest%d", n)
		var maxID *int64
		var exists bool
		if err := s.pg.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", pgx.QueryExecModeSimpleProtocol, table).Scan(&exists); err != nil {
			return fmt.Errorf("checking %s: %w", table, err)
		}
		if !exists {
			return &driver.MissingData{Table: table, MaxID: -1, Rows: int64(w.Rows)}
		}
		if err := s.pg.QueryRow(ctx, "SELECT max(id) FROM "+table, pgx.QueryExecModeSimpleProtocol).Scan(&maxID); err != nil {
			return fmt.Errorf("checking %s: %w", table, err)
		}
		if w.Name != "stream" && (maxID == nil || *maxID < int64(w.Rows)) {
			have := int64(0)
			if maxID != nil {
				have = *maxID
			}
			return &driver.MissingData{Table: table, MaxID: have, Rows: int64(w.Rows)}
		}
	}
	return nil
}
