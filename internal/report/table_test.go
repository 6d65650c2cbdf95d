package report

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/result"
)

// figureText is how a figure's text begins: a number, signed or not.
var figureText = regexp.MustCompile(`^[-+]?[0-9]`)

// TestTablesTyped checks every table of every page case: a cell right of
// the names that shows a number is a figure, with a unit and its number,
// and a cell of words has no number; so the page, which aligns and tags
// cells by their kind, and the json tables read what the text shows.
func TestTablesTyped(t *testing.T) {
	for name, r := range pageCases(t) {
		m := Build(r)
		blocks := m.Body
		if m.Preset != nil {
			blocks = append([]Block{{Table: m.Preset}}, blocks...)
		}
		for _, bl := range blocks {
			tb := bl.Table
			if tb == nil {
				continue
			}
			for i, row := range tb.Rows {
				for j, c := range row {
					switch {
					case j >= tb.Left && figureText.MatchString(c.Text) && !c.Figure():
						t.Errorf("%s: %q row %d column %q: %q is a number written as words", name, tb.Title, i, tb.Header[j], c.Text)
					case c.Figure() && math.IsNaN(c.Value):
						t.Errorf("%s: %q row %d column %q: %q has a unit and no value", name, tb.Title, i, tb.Header[j], c.Text)
					case !c.Figure() && !math.IsNaN(c.Value):
						t.Errorf("%s: %q row %d column %q: %q has a value and no unit", name, tb.Title, i, tb.Header[j], c.Text)
					}
				}
			}
		}
	}
}

// TestTunnelSetupTyped: a tunnel's setup ("tcp 4.86 [1], ssh-kex 7.83
// [3], ssh-auth 68.3 [5]: 81.0") is a figure, its sum in ms, as the
// json tables carry it; a tunnel that set up nothing is "-", words.
func TestTunnelSetupTyped(t *testing.T) {
	r, err := result.Read(filepath.Join("testdata", "measured-tunnels.json"))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, bl := range Build(r).Body {
		tb := bl.Table
		if tb == nil || !strings.HasPrefix(tb.Title, "tunnels") && !strings.HasPrefix(tb.Title, "intermediaries") {
			continue
		}
		col := len(tb.Header) - 1
		for _, row := range tb.Rows {
			c := row[col]
			seen++
			if c.Text == "-" {
				if c.Figure() {
					t.Errorf("%q: \"-\" is a figure", tb.Title)
				}
				continue
			}
			_, total, _ := strings.Cut(c.Text, ": ")
			if !c.Figure() || c.Unit != "ms" || num(c.Value, millis) != total {
				t.Errorf("%q: setup %q is %+v, want the figure %s ms", tb.Title, c.Text, c, total)
			}
		}
	}
	if seen == 0 {
		t.Fatal("measured-tunnels shows no tunnel's setup")
	}
}

// TestJSONTables checks that the json summary carries the model's tables
// cell for cell: the text as shown, and each figure's number and unit.
func TestJSONTables(t *testing.T) {
	r, err := result.Read(filepath.Join("testdata", "measured-postgres-storm.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := Build(r)
	var b bytes.Buffer
	if err := m.JSON(&b); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tables []struct {
			Title string
			Rows  [][]struct {
				Text  string
				Unit  string
				Value *float64
			}
		}
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	var want []*Table
	for _, bl := range m.Body {
		if bl.Table != nil {
			want = append(want, bl.Table)
		}
	}
	if len(got.Tables) != len(want) || len(want) == 0 {
		t.Fatalf("%d tables in the json, %d in the model", len(got.Tables), len(want))
	}
	figures := 0
	for i, w := range want {
		g := got.Tables[i]
		if g.Title != w.Title || len(g.Rows) != len(w.Rows) {
			t.Fatalf("table %d: %q with %d rows, want %q with %d", i, g.Title, len(g.Rows), w.Title, len(w.Rows))
		}
		for j, row := range w.Rows {
			for k, c := range row {
				gc := g.Rows[j][k]
				if gc.Text != c.Text || gc.Unit != c.Unit || (gc.Value != nil) != c.Figure() {
					t.Errorf("%q row %d cell %d: %+v, want %q %q", w.Title, j, k, gc, c.Text, c.Unit)
				}
				if gc.Value != nil {
					figures++
					if math.Abs(*gc.Value-c.Value) > 1e-4*math.Abs(c.Value) {
						t.Errorf("%q row %d cell %d: value %v, want %v", w.Title, j, k, *gc.Value, c.Value)
					}
				}
			}
		}
	}
	if figures == 0 {
		t.Error("no figure in the json tables")
	}
}

// TestBasis: the sentence above the findings says what this kind of run
// computed them from; paired trials only where trials were paired.
func TestBasis(t *testing.T) {
	cases := pageCases(t)
	for name, want := range map[string]string{
		"measured-connect": "trials paired by round",
		"crypto":           "rates of the primitives",
		"measured-crypto":  "rates of the primitives",
		"wire-pgbench":     "connections the capture shows",
		"wire-https":       "connections the capture shows",
	} {
		page := string(renderHTML(t, cases[name]))
		if !strings.Contains(page, want) {
			t.Errorf("%s: the page does not say %q", name, want)
		}
		if want != "trials paired by round" && strings.Contains(page, "paired by round") {
			t.Errorf("%s: the page speaks of trials paired by round", name)
		}
	}
}
