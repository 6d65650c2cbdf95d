// Package report turns result files into reports; it never runs anything.
//
// Build reads a result into a Model (model.go), once: the run's header and
// status, its notes, a preset's own table (mongoseed.go), the body's tables
// of typed cells (table.go), the figures (figures.go, drawn by package
// chart), warnings (warnings.go), the cell summaries (summary.go, csv.go)
// and the findings (findings.go). The Model's methods render it: Text
// (report.go), HTML (html.go, html.tmpl), CSV and JSON, none of them from
// another's output. Compare and CompareText set two results side by side.
//
// The cut is by topic. index.go indexes the trials by cell and
// analysis.go holds the statistics every topic uses. A topic's file holds
// all of it: its facts, the rule that decides to state them, their words,
// and its tables and figures. perconn.go, rate.go, storm.go and
// wirecheck.go are such files; so are the rules_*.go files (key-exchange
// groups, client certificates, negotiation, paths, captures), whose
// tables are in wire.go for captures. The comparisons every run makes
// (connection cost, hello retries, versions, keys, resumption, auth,
// tunnels, persistent connections, RTT, pooling, ceilings, crypto)
// predate the cut: their facts are in facts.go, their rules in rules.go
// and their words in wording.go, beside the machinery every topic shares
// (rules.add, index.phrase and the word helpers); their tables are in
// tables.go, rttmodel.go, tunnels.go and crypto.go. A new topic gets a
// file of its own; an old one moves to its own file when it changes.
package report

import (
	"fmt"
	"io"
	"strings"
)

// Text writes the seed-style tables to w: a preset's own table first,
// then throughput per variant and concurrency with the change against the
// baseline, latency, connection phases, what was negotiated, CPU, and
// warnings and findings drawn from the figures. Output is deterministic:
// the same result renders byte for byte the same, which is what lets
// `tlsbench report` re-render a run's output. It writes nothing and
// returns PresetErr when the preset's table is missing.
func (m *Model) Text(w io.Writer) error {
	if m.PresetErr != nil {
		return m.PresetErr
	}
	_, err := io.WriteString(w, m.text())
	return err
}

// text renders the model as the text report: the preset's table, the
// header, the tables, the warnings, then the findings wrapped for a
// terminal.
func (m *Model) text() string {
	var b strings.Builder
	if m.Preset != nil {
		m.Preset.write(&b)
	}
	b.WriteString(m.Header.Title + "\n")
	for _, f := range m.Header.Fields {
		fmt.Fprintf(&b, "%-8s%s\n", f.Key+":", f.Value)
	}
	for _, s := range m.Status.lines() {
		b.WriteString(s + "\n")
	}
	for _, n := range m.Notes {
		b.WriteString("note: " + n + "\n")
	}
	b.WriteString("\n")
	for _, bl := range m.Body {
		bl.write(&b)
	}
	for _, w := range m.Warnings {
		b.WriteString("warning: " + w + "\n")
	}
	if !m.Status.Empty && len(m.Findings) > 0 {
		if !strings.HasSuffix(b.String(), "\n\n") {
			b.WriteString("\n")
		}
		writeFindings(&b, m.Findings)
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// write appends a block and a blank line to b.
func (bl Block) write(b *strings.Builder) {
	if bl.Table != nil {
		bl.Table.write(b)
		return
	}
	for _, l := range bl.Prose {
		b.WriteString(l + "\n")
	}
	b.WriteString("\n")
}
