package report

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Table is a titled grid of cells: the first Left columns are names, the
// rest figures. The text report lays it out in aligned columns, names
// flush left and figures flush right, two spaces apart; the page as an
// HTML table.
type Table struct {
	Title  string   `json:"title"`
	Left   int      `json:"names"` // the columns of names, at the left
	Header []string `json:"header"`
	Rows   [][]Cell `json:"rows"`
	// Foot lines are printed under the rows.
	Foot []string `json:"foot,omitempty"`
}

// Cell is one cell of a table: its text as the report shows it and, for a
// figure, the number behind the text. Every rendering reads the same
// cell: the text report and the page its Text, the page's alignment and
// the json summary's tables its Unit and numbers.
type Cell struct {
	Text string
	// Unit names what Value counts ("connections/s", "ms", "%"); it is ""
	// for a cell of words (a name, a version, "-"), whose numbers are unset.
	Unit string
	// Value is the figure: a mean over trials, a change in percent, a
	// count. A cell that shows several figures of one kind ("p50 / p99 /
	// max", "0.052 [1]": a time and its round trips) carries the first.
	// StdDev is its standard deviation over trials and CI the half-width
	// of its 95% confidence interval, NaN where unknown.
	Value, StdDev, CI float64
}

// MarshalJSON writes a cell of words as {"text": ...} and a figure with
// its numbers, null where unknown: {"text", "unit", "value", "stddev",
// "ci95"}.
func (c Cell) MarshalJSON() ([]byte, error) {
	if !c.Figure() {
		return json.Marshal(struct {
			Text string `json:"text"`
		}{c.Text})
	}
	return json.Marshal(struct {
		Text   string `json:"text"`
		Unit   string `json:"unit"`
		Value  number `json:"value"`
		StdDev number `json:"stddev"`
		CI     number `json:"ci95"`
	}{c.Text, c.Unit, number(c.Value), number(c.StdDev), number(c.CI)})
}

// Figure reports whether c holds a number.
func (c Cell) Figure() bool { return c.Unit != "" }

// textCell is a cell of words only.
func textCell(s string) Cell {
	return Cell{Text: s, Value: math.NaN(), StdDev: math.NaN(), CI: math.NaN()}
}

// numCell is the figure v in unit, written as num writes it at precision
// p; "-", a cell of words, when v is not a number.
func numCell(v float64, p precision, unit string) Cell {
	if !finite(v) {
		return textCell(num(v, p))
	}
	return Cell{Text: num(v, p), Unit: unit, Value: v, StdDev: math.NaN(), CI: math.NaN()}
}

// countCell is a count of unit.
func countCell(n int64, unit string) Cell {
	return Cell{Text: strconv.FormatInt(n, 10), Unit: unit, Value: float64(n), StdDev: math.NaN(), CI: math.NaN()}
}

// shareCell is part of whole in percent, as percent writes it.
func shareCell(part, whole int64) Cell {
	if whole <= 0 {
		return textCell(percent(part, whole))
	}
	return Cell{Text: percent(part, whole), Unit: "%", Value: 100 * float64(part) / float64(whole), StdDev: math.NaN(), CI: math.NaN()}
}

// shown is c with the text s: a figure written with more than its number
// ("300/300", "0.052 [1]", "yes"), the number unchanged.
func (c Cell) shown(s string) Cell {
	c.Text = s
	return c
}

// unit is c counting unit instead, a figure's only.
func (c Cell) unit(unit string) Cell {
	if c.Figure() {
		c.Unit = unit
	}
	return c
}

// words are a figure's number, unit and interval: "4134.2 connections/s
// ±1355.7 (95% CI)".
func (c Cell) words() string {
	s := number(c.Value).String() + " " + c.Unit
	if finite(c.CI) {
		s += " ±" + number(c.CI).String() + " (95% CI)"
	}
	return s
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
