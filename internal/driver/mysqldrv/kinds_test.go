package mysqldrv

import (
	"testing"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/drivertest"
)

// A workload that reads a table tlsbench prepare did not make fails with
// the kind driver.ErrMissingData, from the server's error number.
func TestMissingTableKind(t *testing.T) {
	srv := server(t)
	cfg, err := drivertest.LabConfig(srv, config(t, srv, "off", "", "point-select", "simple").Variant,
		driver.Workload{Name: "point-select", QueryMode: "simple", Tables: testTables + 8, Rows: testRows})
	if err != nil {
		t.Fatal(err)
	}
	d, err := driver.New("mysql", cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, d)
	defer s.Close()
	drivertest.MissingTable(t, s) // 8 tables in 10 are missing
}
