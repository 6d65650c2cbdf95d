package pgdrv

import (
	"testing"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/drivertest"
)

// A workload that reads a table tlsbench prepare did not make fails with
// the kind driver.ErrMissingData, from the server's SQLSTATE.
func TestMissingTableKind(t *testing.T) {
	cfg := mustConfig(t, "", "off", driver.Workload{Tables: testTables + 8, Rows: testRows})
	s := open(t, cfg)
	defer s.Close()
	drivertest.MissingTable(t, s) // 8 tables in 10 are missing
}
