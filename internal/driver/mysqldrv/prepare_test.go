package mysqldrv

import (
	"context"
	sqldriver "database/sql/driver"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/driver"
)

// sqlRows runs a text-protocol query on a new session and returns its rows
// as strings.
func sqlRows(t *testing.T, d driver.Driver, q string) [][]string {
	t.Helper()
	ds, err := d.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	rows, err := ds.(*session).dc.(sqldriver.QueryerContext).QueryContext(context.Background(), q, nil)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out [][]string
	err = eachRow(rows, func(row []sqldriver.Value) {
		var r []string
		for _, v := range row {
			r = append(r, asString(v))
		}
		out = append(out, r)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPrepare: tables are made as sysbench makes them, a table with the
// right row count is kept, any other is made anew.
func TestPrepare(t *testing.T) {
	srv := server(t)
	d, err := driver.New("mysql", config(t, srv, "1.3", "", "point-select", "simple"))
	if err != nil {
		t.Fatal(err)
	}
	p := d.(driver.Preparer)
	ctx := context.Background()
	const tables = testTables + 1 // the shared ones and one of this test's
	checksum := func(table int) string {
		return sqlRows(t, d, fmt.Sprintf("CHECKSUM TABLE sbtest%d", table))[0][1]
	}
	kept := checksum(1)

	var calls [][2]int64
	progress := func(done, total int64) { calls = append(calls, [2]int64{done, total}) }
	if err := p.Prepare(ctx, tables, testRows, progress); err != nil {
		t.Fatal(err)
	}
	last := calls[len(calls)-1]
	if last != [2]int64{tables * testRows, tables * testRows} {
		t.Errorf("last progress %v", last)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i][0] < calls[i-1][0] {
			t.Errorf("progress went back: %v", calls)
		}
	}

	for table := 1; table <= tables; table++ {
		got := sqlRows(t, d, fmt.Sprintf("SELECT COUNT(*), MIN(id), MAX(id), MIN(k) >= 1, MAX(k) <= %d FROM sbtest%d", testRows, table))[0]
		if want := []string{fmt.Sprint(testRows), "1", fmt.Sprint(testRows), "1", "1"}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("sbtest%d: count, ids, k bounds %v, want %v", table, got, want)
		}
	}
	row := sqlRows(t, d, "SELECT c, pad FROM sbtest3 WHERE id = 7")[0]
	if c := regexp.MustCompile(`^(\d{11}-){9}\d{11}$`); !c.MatchString(row[0]) {
		t.Errorf("c = %q", row[0])
	}
	if pad := regexp.MustCompile(`^(\d{11}-){4}\d{11}$`); !pad.MatchString(row[1]) {
		t.Errorf("pad = %q", row[1])
	}
	if idx := sqlRows(t, d, "SHOW INDEX FROM sbtest3 WHERE Key_name = 'k_3'"); len(idx) != 1 {
		t.Errorf("index k_3: %v", idx)
	}
	cols := sqlRows(t, d, "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, EXTRA FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'bench' AND TABLE_NAME = 'sbtest3' ORDER BY ORDINAL_POSITION")
	want := "id int(11) NO  auto_increment|k int(11) NO 0 |c char(120) NO '' |pad char(60) NO '' "
	var got []string
	for _, c := range cols {
		got = append(got, strings.Join(c, " "))
	}
	if strings.Join(got, "|") != want {
		t.Errorf("columns\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
	if engine := sqlRows(t, d, "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'bench' AND TABLE_NAME = 'sbtest3'"); engine[0][0] != "InnoDB" {
		t.Errorf("engine %v", engine)
	}

	// A table one row short is made anew; the others are kept as they are.
	before3 := checksum(3)
	sqlRows(t, d, "DELETE FROM sbtest3 WHERE id = 7")
	if err := p.Prepare(ctx, tables, testRows, nil); err != nil {
		t.Fatal(err)
	}
	if got := sqlRows(t, d, "SELECT COUNT(*) FROM sbtest3 WHERE id = 7")[0][0]; got != "1" {
		t.Error("sbtest3 was not made anew")
	}
	if checksum(3) == before3 {
		t.Error("sbtest3 holds the same data after it was made anew")
	}
	if checksum(1) != kept {
		t.Error("sbtest1 changed, though it had the right row count")
	}

	if err := p.Prepare(ctx, 0, testRows, nil); err == nil {
		t.Error("Prepare of 0 tables succeeded")
	}
}
