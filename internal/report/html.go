package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/tlsbench/tlsbench/internal/result"
)

//go:embed html.tmpl
var pageSource string

var pageTemplate = template.Must(template.New("page").Parse(pageSource))

// page is what html.tmpl renders.
type page struct {
	Title string
	// Facts are the header lines of the text report (date, trials,
	// client, ...); Status its interrupted and error lines.
	Facts  []fact
	Status []string
	Notes  []string

	Caveats, Findings, Recommendations []string
	Warnings                           []string
	Comparable                         bool

	Variants []struct{ Name, Color string }
	Charts   []pageChart
	Tables   []pageTable

	Command  string
	Settings []fact
	Tool     string
}

type fact struct{ Key, Value string }

type pageChart struct {
	ID, Title, Caption string
	SVG                template.HTML
}

// pageTable is one table of the text report: Table is false for lines of
// prose between tables, which get no heading.
type pageTable struct {
	Text  string
	Table bool
}

// HTML writes r as one self-contained page: findings in plain words at the
// top, then every chart (inline SVG), the text report's tables, the notes,
// warnings and the environment. It loads nothing (no script, font or
// image from anywhere), so it opens offline, and it prints chart by chart.
// Output is deterministic, like Text's.
func HTML(w io.Writer, r *result.Result) error {
	v := newIndex(r)
	p := page{Tool: strings.TrimSpace(r.Tool.Name + " " + r.Tool.Version)}
	if p.Tool == "" {
		p.Tool = "tlsbench"
	}

	// The header of the text report, line by line: "title", then "key: value".
	var hb strings.Builder
	v.header(&hb)
	for i, line := range strings.Split(strings.TrimSpace(hb.String()), "\n") {
		if i == 0 {
			p.Title = line
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		val = strings.TrimSpace(val)
		switch {
		case !ok:
			p.Facts = append(p.Facts, fact{"", line})
		case key == "note":
			p.Notes = append(p.Notes, val)
		case key == "interrupted" || key == "error":
			p.Status = append(p.Status, key+": "+val)
		default:
			p.Facts = append(p.Facts, fact{key, val})
		}
	}

	for _, f := range v.findingsList() {
		switch f.Kind {
		case KindCaveat:
			p.Caveats = append(p.Caveats, f.Text)
		case KindRecommendation:
			p.Recommendations = append(p.Recommendations, f.Text)
		default:
			p.Findings = append(p.Findings, f.Text)
		}
	}
	p.Comparable = (&finder{ix: v}).comparable()
	if !isCrypto(r) {
		var wb strings.Builder
		v.warnings(&wb)
		for _, line := range strings.Split(strings.TrimSpace(wb.String()), "\n") {
			if s, ok := strings.CutPrefix(line, "warning: "); ok {
				p.Warnings = append(p.Warnings, s)
			}
		}
	}

	for _, c := range Charts(r) {
		svg, err := c.SVG()
		if err != nil {
			return err
		}
		p.Charts = append(p.Charts, pageChart{ID: c.ID, Title: c.Title, Caption: c.Caption, SVG: template.HTML(inlineSVG(svg, c.Title))})
	}
	if len(r.Trials) > 0 {
		for _, vc := range variantColors(v) {
			if slices.ContainsFunc(r.Trials, func(t result.Trial) bool { return t.Variant == vc.Name }) {
				p.Variants = append(p.Variants, vc)
			}
		}
	}

	var tb strings.Builder
	v.tables(&tb)
	for _, block := range strings.Split(strings.TrimSpace(tb.String()), "\n\n") {
		if block = strings.Trim(block, "\n"); block != "" {
			lines := strings.Split(block, "\n")
			p.Tables = append(p.Tables, pageTable{Text: block, Table: len(lines) > 1 && tableHeader.MatchString(lines[1])})
		}
	}

	p.Command = strings.Join(r.Command, " ")
	if s := r.Target.Server; s != nil {
		keys := make([]string, 0, len(s.Settings))
		for k := range s.Settings {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p.Settings = append(p.Settings, fact{k, s.Settings[k]})
		}
	}

	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return fmt.Errorf("rendering the HTML report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteHTMLFile writes the HTML page of r to path, whole or not at all, and
// only over a regular file (see result.WriteFile).
func WriteHTMLFile(path string, r *result.Result) error {
	var buf bytes.Buffer
	if err := HTML(&buf, r); err != nil {
		return err
	}
	return result.WriteFile(path, buf.Bytes(), "the HTML report")
}

// tableHeader matches the column header under a table's title: names two
// spaces or more apart, which prose never has.
var tableHeader = regexp.MustCompile(`^\S.*\S {2,}\S`)

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
