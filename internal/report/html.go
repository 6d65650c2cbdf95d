package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/tlsbench/tlsbench/internal/report/chart"
	"github.com/tlsbench/tlsbench/internal/result"
)

//go:embed html.tmpl
var pageSource string

var pageTemplate = template.Must(template.New("page").Parse(pageSource))

// page is what html.tmpl renders.
type page struct {
	// Title is the window's; the heading shows Target under Tool.
	Title, Target string
	// Facts are the header's (date, trials, client, ...); Status its
	// interrupted and error lines.
	Facts  []Field
	Status []string
	Notes  []string

	Basis                              string
	Caveats, Findings, Recommendations []string
	Warnings                           []string
	Comparable                         bool

	Variants []struct{ Name, Color string }
	Charts   []pageChart
	Tables   []pageTable

	Command  string
	Settings []Field
	Tool     string
}

type pageChart struct {
	ID, Title, Caption string
	SVG                template.HTML
}

// pageTable is one block of the report's body: a table, or lines of
// prose between tables (Prose, with no heading).
type pageTable struct {
	Title  string
	Header []pageCell
	Rows   [][]pageCell
	Foot   []string
	Prose  []string
}

// pageCell is a cell of a page's table: Num aligns it right, as the
// column of figures it is in; a figure carries its number (Value, as the
// csv writes it) and its unit and interval in words (Title, shown on
// hover).
type pageCell struct {
	Text         string
	Num          bool
	Value, Title string
	// Wrap lets a long text (a list of suites, what the server says)
	// break over lines, so that its table fits the page.
	Wrap bool
}

// wrapAt is the length of a text cell beyond which it may wrap.
const wrapAt = 28

// HTML writes the model as one self-contained page: findings in plain
// words at the top, then every chart (inline SVG), the tables (a preset's
// own first), the notes, warnings and the environment. It loads nothing
// (no script, font or image from anywhere), so it opens offline, and it
// prints chart by chart. Output is deterministic, like Text's; like Text,
// it returns PresetErr when the preset's table is missing.
func (m *Model) HTML(w io.Writer) error {
	if m.PresetErr != nil {
		return m.PresetErr
	}
	p := page{
		Title:      m.Header.Title,
		Target:     m.Header.Target,
		Comparable: m.Comparable,
		Basis:      m.Basis,
		Warnings:   m.Warnings,
		Command:    strings.Join(m.Header.Command, " "),
		Settings:   m.Header.Settings,
		Tool:       m.Header.Tool,
	}
	for _, f := range m.Header.Fields {
		p.Facts = append(p.Facts, Field{f.Key, strings.TrimSpace(f.Value)})
	}
	for _, s := range m.Status.lines() {
		p.Status = append(p.Status, strings.TrimSpace(s))
	}
	for _, n := range m.Notes {
		p.Notes = append(p.Notes, strings.TrimSpace(n))
	}
	for _, f := range m.Findings {
		switch f.Kind {
		case KindCaveat:
			p.Caveats = append(p.Caveats, f.Text)
		case KindRecommendation:
			p.Recommendations = append(p.Recommendations, f.Text)
		default:
			p.Findings = append(p.Findings, f.Text)
		}
	}

	for _, f := range m.Figures {
		svg, err := chart.SVG(f)
		if err != nil {
			return err
		}
		p.Charts = append(p.Charts, pageChart{ID: f.ID, Title: f.Title, Caption: f.Caption, SVG: template.HTML(inlineSVG(svg, f.Title))})
	}
	for _, c := range m.Colors {
		p.Variants = append(p.Variants, struct{ Name, Color string }{c.Name, chart.Hex(c.Color)})
	}

	blocks := m.Body
	if m.Preset != nil {
		blocks = append([]Block{{Table: m.Preset}}, blocks...)
	}
	for _, bl := range blocks {
		if bl.Table != nil {
			p.Tables = append(p.Tables, tableOf(bl.Table))
		} else {
			p.Tables = append(p.Tables, pageTable{Prose: bl.Prose})
		}
	}

	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return fmt.Errorf("rendering the HTML report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// tableOf is t as a page shows it: a column that holds a figure is a
// column of figures, aligned right with its header; words ("-",
// "baseline") in it too.
func tableOf(t *Table) pageTable {
	pt := pageTable{Title: t.Title, Foot: t.Foot}
	num := make([]bool, len(t.Header))
	for _, row := range t.Rows {
		for i, c := range row {
			if i < len(num) && c.Figure() {
				num[i] = true
			}
		}
	}
	for i, h := range t.Header {
		pt.Header = append(pt.Header, pageCell{Text: h, Num: num[i]})
	}
	for _, row := range t.Rows {
		cells := make([]pageCell, len(row))
		for i, c := range row {
			cells[i] = pageCell{Text: c.Text, Num: i < len(num) && num[i]}
			cells[i].Wrap = !cells[i].Num && i > 0 && utf8.RuneCountInString(c.Text) > wrapAt && strings.Contains(c.Text, " ")
			if c.Figure() {
				cells[i].Value, cells[i].Title = number(c.Value).String(), c.words()
			}
		}
		pt.Rows = append(pt.Rows, cells)
	}
	return pt
}

// WriteHTMLFile writes the HTML page to path, whole or not at all, and
// only over a regular file (see result.WriteFile).
func (m *Model) WriteHTMLFile(path string) error {
	var buf bytes.Buffer
	if err := m.HTML(&buf); err != nil {
		return err
	}
	return result.WriteFile(path, buf.Bytes(), "the HTML report")
}

// svgProlog is what a standalone SVG file starts with and an inline one
// does without.
var svgProlog = regexp.MustCompile(`(?s)^<\?xml[^>]*>\s*(<!--.*?-->\s*)?`)

// inlineSVG prepares a chart's SVG for the page: no XML prolog, and a role
// and title that name it for screen readers.
func inlineSVG(svg []byte, title string) string {
	s := svgProlog.ReplaceAllString(string(svg), "")
	s = strings.Replace(s, "<svg ", `<svg role="img" aria-label="`+template.HTMLEscapeString(title)+`" `, 1)
	return s
}
