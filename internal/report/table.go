package report

import (
	"math"
	"strings"
	"unicode/utf8"
)

// Table is a titled grid of cells: the first Left columns are names, the
// rest figures. The text report lays it out in aligned columns, names
// flush left and figures flush right, two spaces apart; the page as an
// HTML table.
type Table struct {
	Title  string
	Left   int
	Header []string
	Rows   [][]Cell
	// Foot lines are printed under the rows.
	Foot []string
}

// Cell is one cell of a table: its text as the report shows it and, for a
// figure, the number behind the text.
type Cell struct {
	Text string
	// Unit names what Value counts ("connections/s", "ms", "%"); it is ""
	// for a cell of words (a name, a version, "-"), whose numbers are unset.
	Unit string
	// Value is the figure: a mean over trials, a change in percent.
	// StdDev is its standard deviation over trials and CI the half-width
	// of its 95% confidence interval, NaN where unknown.
	Value, StdDev, CI float64
}

// Figure reports whether c holds a number.
func (c Cell) Figure() bool { return c.Unit != "" }

// textCell is a cell of words only.
func textCell(s string) Cell {
	return Cell{Text: s, Value: math.NaN(), StdDev: math.NaN(), CI: math.NaN()}
}

// add appends a row of text cells.
func (t *Table) add(cells ...string) {
	row := make([]Cell, len(cells))
	for i, c := range cells {
		row[i] = textCell(c)
	}
	t.Rows = append(t.Rows, row)
}

// addCells appends a row of typed cells.
func (t *Table) addCells(cells ...Cell) { t.Rows = append(t.Rows, cells) }

// texts are the header and the rows' texts, the lines of the layout.
func (t *Table) texts() [][]string {
	out := [][]string{t.Header}
	for _, row := range t.Rows {
		line := make([]string, len(row))
		for i, c := range row {
			line[i] = c.Text
		}
		out = append(out, line)
	}
	return out
}

// write appends the table and a blank line to b.
func (t *Table) write(b *strings.Builder) {
	lines := t.texts()
	var widths []int
	for _, row := range lines {
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			// Runes, not bytes: cells may hold "±" or "µ".
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	b.WriteString(t.Title + "\n")
	for _, row := range lines {
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
