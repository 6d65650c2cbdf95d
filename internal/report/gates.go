package report

// gates is the table of the run's gate verdicts (--gate), if it has any.
func (ix *index) gates(b *body) {
	gs := ix.r.Gates
	if len(gs) == 0 {
		return
	}
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
	t.Foot = append(t.Foot, plural(failed, "gate")+" of "+itoa(len(gs))+" failed; with @ci95 the far end of the 95% interval is compared with the bound, else the mean")
	b.table(t)
}
