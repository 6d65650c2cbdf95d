package report

import (
	"strings"
	"unicode/utf8"
)

// Table lays out cells in aligned columns: the first left columns (names) flush
// left, the rest (figures) flush right, two spaces apart.
type Table struct {
	Title  string
	Left   int
	Header []string
	Rows   [][]string
	// Foot lines are printed under the rows.
	Foot []string
}

func (t *Table) add(cells ...string) { t.Rows = append(t.Rows, cells) }

// write appends the table and a blank line to b.
func (t *Table) write(b *strings.Builder) {
	var widths []int
	for _, row := range append([][]string{t.Header}, t.Rows...) {
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			// Runes, not bytes: cells may hold "±" or "µ".
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	b.WriteString(t.Title + "\n")
	for _, row := range append([][]string{t.Header}, t.Rows...) {
		var line strings.Builder
		for i, c := range row {
			if i > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i < t.Left {
				line.WriteString(c + pad)
			} else {
				line.WriteString(pad + c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	for _, f := range t.Foot {
		b.WriteString(f + "\n")
	}
	b.WriteString("\n")
}
