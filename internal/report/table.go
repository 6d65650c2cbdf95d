package report

import (
	"strings"
	"unicode/utf8"
)

// table lays out cells in aligned columns: the first left columns (names) flush
// left, the rest (figures) flush right, two spaces apart.
type table struct {
	title  string
	left   int
	header []string
	rows   [][]string
	// foot lines are printed under the rows.
	foot []string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write appends the table and a blank line to b.
func (t *table) write(b *strings.Builder) {
	var widths []int
	for _, row := range append([][]string{t.header}, t.rows...) {
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			// Runes, not bytes: cells may hold "±" or "µ".
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	b.WriteString(t.title + "\n")
	for _, row := range append([][]string{t.header}, t.rows...) {
		var line strings.Builder
		for i, c := range row {
			if i > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i < t.left {
				line.WriteString(c + pad)
			} else {
				line.WriteString(pad + c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	for _, f := range t.foot {
		b.WriteString(f + "\n")
	}
	b.WriteString("\n")
}
