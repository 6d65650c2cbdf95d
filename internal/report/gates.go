package report

import (
	"io"
	"strings"

	"github.com/tlsbench/tlsbench/internal/result"
)

// gates is the table of the run's gate verdicts (--gate), if it has any.
func (ix *index) gates(b *body) {
	if len(ix.r.Gates) > 0 {
		b.table(gateTable(ix.r.Gates))
	}
}

// gateTable lists gate verdicts: a run's, or a comparison's.
func gateTable(gs []result.Gate) Table {
	t := Table{Title: "gates (--gate)", Left: 1, Header: []string{"gate", "verdict", "cell", "measured"}}
	failed := 0
	for _, g := range gs {
		verdict := "pass"
		if !g.Pass {
			verdict = "FAIL"
			failed++
		}
		t.Rows = append(t.Rows, []Cell{{Text: g.Name}, {Text: verdict}, {Text: g.Cell}, {Text: g.Measured()}})
	}
	t.Foot = append(t.Foot, itoa(failed)+" of "+plural(len(gs), "gate")+" failed; with @ci95 the far end of the 95% interval is compared with the bound, else the mean")
	if note := result.RoundsNote(gs); note != "" {
		t.Foot = append(t.Foot, note)
	}
	return t
}

// GatesText writes gate verdicts as the text report's table (compare's).
func GatesText(w io.Writer, gs []result.Gate) error {
	var b strings.Builder
	t := gateTable(gs)
	t.write(&b)
	_, err := io.WriteString(w, b.String())
	return err
}
