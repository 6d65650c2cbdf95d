package report

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/tlsbench/tlsbench/internal/result"
)

// CSV writes one row per experiment, variant and concurrency of r, under a
// header row naming the columns (see CellSummary and docs/result.md).
func CSV(w io.Writer, r *result.Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(columns); err != nil {
		return err
	}
	m, _ := Build(r) // the preset's table is not a row
	for _, c := range m.Cells {
		if err := cw.Write(c.record()); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func itoa(n int) string { return strconv.Itoa(n) }
