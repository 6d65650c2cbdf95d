package report

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report/chart"
	"github.com/tlsbench/tlsbench/internal/result"
)

// Model is everything a report shows of one result, built once by Build:
// its methods Text, HTML, CSV and JSON render it, and none of them reads
// another's output.
type Model struct {
	Header Header
	Status Status
	Notes  []string
	// Preset is the table of the seed study a preset replays (--preset
	// mongodb-seed), nil without a preset: the text report prints it
	// first, as the run did, and the page shows it first among the tables.
	Preset *Table
	// PresetErr is why a preset's table is missing: the HdrHistograms it
	// merges do not decode (Read leaves them encoded). Text and HTML,
	// which show the table, return it; CSV, JSON and the findings render
	// the rest of the model.
	PresetErr error
	// Body is the tables of the run, in the text report's order, with the
	// lines of prose that go between them.
	Body []Block
	// Warnings are what the figures say about their own limits, as
	// sentences ("the client used 0.91 of 1 core in ...").
	Warnings []string
	// Findings are caveats, findings and recommendations, in that order;
	// Basis says in a sentence what they were computed from, for the kind
	// of run this is (trials paired by round, a capture's connections, a
	// crypto run's rates).
	Findings []Finding
	Basis    string
	// Comparable is set when the run measured two variants or more: with
	// no recommendation, the page says why.
	Comparable bool
	// Figures are the charts the result has data for, in the text
	// report's order (package chart draws them); Colors each measured
	// variant's colour in them, in variant order, for a page's key.
	Figures []chart.Figure
	Colors  []chart.Swatch
	// Cells summarize the trials cell by cell: the rows of the csv and
	// the elements of the json summary, whose Source says what they are of.
	Cells  []CellSummary
	Source Source
	// Quantities are every figure of every cell as numbers, with its
	// interval and its paired change against the baseline: what gates
	// judge (package gate). Gates are the verdicts the run recorded.
	Quantities []Quantity
	Gates      []result.Gate
}

// Header is what the run was: a title, then fields such as the date, the
// trials, the client machine and the server, in the text report's order.
// Tool, Command and Settings are shown on the page only.
type Header struct {
	Title    string // "tlsbench 0.1.0 — builtin (builtin)"
	Target   string // the title's target: "builtin (builtin)"
	Fields   []Field
	Tool     string   // "tlsbench 0.1.0"
	Command  []string // with secrets removed, as the result has it
	Settings []Field  // the server's, by name
}

// Field is one named value of a header.
type Field struct{ Key, Value string }

// Status says how the run ended, when not as planned.
type Status struct {
	Interrupted bool
	// Finished is how many trials finished; Planned how many the run
	// planned, 0 when its spec does not tell.
	Finished, Planned int
	// Error is what stopped the run, "" if nothing did.
	Error string
	// Empty is set when nothing was measured: no trial finished and no
	// crypto primitive was timed. The text report then shows a warning
	// and no findings.
	Empty bool
}

// Block is one part of a report's body: a table, or lines of prose.
type Block struct {
	Table *Table
	Prose []string
}

// body collects the blocks of a report's body in order.
type body struct{ blocks []Block }

func (b *body) table(t Table) { b.blocks = append(b.blocks, Block{Table: &t}) }

func (b *body) prose(lines ...string) { b.blocks = append(b.blocks, Block{Prose: lines}) }

// Build reads r into a Model, once per result: every rendering reads the
// same model. A preset's table that cannot be built leaves its error in
// PresetErr; the model is whole but for that table.
func Build(r *result.Result) *Model {
	ix := newIndex(r)
	preset, err := presetTable(r)
	m := &Model{
		Header:     ix.header(),
		Status:     ix.status(),
		Notes:      r.Notes,
		Preset:     preset,
		PresetErr:  err,
		Body:       ix.body(),
		Findings:   ix.findings(),
		Basis:      basis(r),
		Comparable: ix.comparable(),
		Figures:    ix.figures(),
		Colors:     ix.colorKey(),
		Cells:      ix.cellSummaries(),
		Quantities: ix.quantities(),
		Gates:      r.Gates,
		Source: Source{
			Target:   r.Target.URL,
			Kind:     r.Target.Kind,
			Workload: r.Spec.Workload,
			Started:  r.Started.UTC(),
			Tool:     r.Tool.Version,
		},
	}
	if !isCrypto(r) {
		m.Warnings = ix.warnings()
	}
	return m
}

// basis is what the findings of r were computed from, by its kind: a
// page's sentence above them.
func basis(r *result.Result) string {
	switch {
	case isCrypto(r):
		return "Computed from the rates of the primitives measured in this run, on this machine: each figure is one library's operations or bytes per second on one core (and on all, where measured); no trials are compared."
	case isAdvise(r):
		return "Computed from the connections the capture shows: round trips are the protocols' own counts, each at the connection's RTT at the capture point; intervals are over the connections (setup time) or over the calibration's trials (CPU). Predictions, not yet checked by a lab replay."
	case isWire(r) && !slices.ContainsFunc(r.Trials, func(t result.Trial) bool { return t.Experiment != plan.Wire }):
		return "Computed from the connections the capture shows: each figure is over a variant's connections as the packets timed them, not over repeated trials, so no difference here carries a confidence interval."
	}
	return "Computed from the figures of this run. A difference counts only when its 95% confidence interval (trials paired by round) excludes zero; otherwise it is reported as no measurable difference."
}

// shownTarget is a target URL the way a person reads it: scheme, user,
// host, database and the parameters that change what is measured
// (sslmode, tls, authMechanism ...), in the order given, without those
// that name a local file (plan.LocalFileParams: passfile=, sslrootcert=
// ...). The result's spec keeps the whole URL.
func shownTarget(raw string) string {
	rest, frag, hasFrag := strings.Cut(raw, "#")
	base, query, ok := strings.Cut(rest, "?")
	if !ok {
		return raw
	}
	var kept []string
	for p := range strings.SplitSeq(query, "&") {
		name, _, _ := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if !slices.ContainsFunc(plan.LocalFileParams, func(f string) bool { return strings.EqualFold(f, name) }) {
			kept = append(kept, p)
		}
	}
	shown := base
	if len(kept) > 0 {
		shown += "?" + strings.Join(kept, "&")
	}
	if hasFrag {
		shown += "#" + frag
	}
	return shown
}

// header is the title and facts of r.
func (ix *index) header() Header {
	r := ix.r
	var h Header
	h.Title = "tlsbench"
	if r.Tool.Version != "" {
		h.Title += " " + r.Tool.Version
	}
	target := shownTarget(r.Target.URL)
	if r.Target.Kind != "" && r.Target.Kind != r.Target.URL {
		target += " (" + r.Target.Kind + ")"
	}
	h.Title += " — " + target
	h.Target = target
	field := func(key, val string) { h.Fields = append(h.Fields, Field{key, val}) }
	if !r.Started.IsZero() {
		field("date", r.Started.UTC().Format(time.RFC3339))
	}
	switch {
	case r.Capture != nil:
		h.Fields = append(h.Fields, captureFields(r.Capture)...)
	case isCrypto(r):
		field("timing", cryptoBounds(r))
	case len(r.Spec.Experiments) == 1 && r.Spec.Experiments[0] == plan.Storm:
		// -d does not apply: a storm lasts until its last client is back.
		field("trials", fmt.Sprintf("%d × one storm, until the last client is back (each step bounded by --timeout %s)", r.Spec.Trials, r.Spec.Timeout))
	case r.Spec.Count > 0:
		field("trials", fmt.Sprintf("%d × %d operations (at most %s)", r.Spec.Trials, r.Spec.Count, r.Spec.Duration))
	default:
		field("trials", fmt.Sprintf("%d × %s", r.Spec.Trials, r.Spec.Duration))
	}
	client := []string{r.Env.OS + "/" + r.Env.Arch}
	if r.Env.Kernel != "" {
		client = append(client, "kernel "+r.Env.Kernel)
	}
	client = append(client, plural(r.Env.Cores, "core"))
	if r.Env.CPUModel != "" {
		client = append(client, r.Env.CPUModel)
	}
	if r.Env.AESNI {
		client = append(client, "AES-NI")
	} else {
		client = append(client, "no AES-NI")
	}
	field("client", strings.Join(client, ", "))
	// A run split over client machines (--shard; tlsbench merge).
	if n := len(r.Shards); n > 0 {
		late, over := 0, 0
		for _, sh := range r.Shards {
			l, o := sh.Missed()
			late, over = late+l, over+o
		}
		val := fmt.Sprintf("%d client machines, merged: %d trials started late, %d overran their slots", n, late, over)
		if s := r.Skew; s != nil {
			val += fmt.Sprintf("; trials started up to %s apart", s.StartSpread.Round(time.Microsecond))
		}
		field("shards", val+"; server CPU measured only where tlsbench started the server")
	} else if sh := r.Shard; sh != nil {
		late, over := sh.Missed()
		field("shard", fmt.Sprintf("%d of %d (index %d), from %s: %d trials started late, %d overran their slots", sh.Index+1, sh.Count, sh.Index, sh.StartAt.Format(time.RFC3339), late, over))
	}
	if c := r.Env.CPUs; c != nil {
		field("CPUs", cpusLine(c))
	}
	if r.Capture == nil { // a capture's client is not tlsbench's Go
		field("Go/TLS", r.Tool.Go+", "+r.Tool.TLSLibrary)
	}
	switch servers := r.Target.Servers; {
	case len(servers) > 0:
		for _, s := range servers {
			field("server", serverLine(s))
		}
	case r.Target.Server != nil:
		field("server", serverLine(*r.Target.Server))
	}

	h.Tool = strings.TrimSpace(r.Tool.Name + " " + r.Tool.Version)
	if h.Tool == "" {
		h.Tool = "tlsbench"
	}
	h.Command = r.Command
	if s := r.Target.Server; s != nil {
		keys := make([]string, 0, len(s.Settings))
		for k := range s.Settings {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			h.Settings = append(h.Settings, Field{k, s.Settings[k]})
		}
	}
	return h
}

// serverLine names a server tlsbench started: its lab name when a run
// compares several, software, version and the TLS library it is linked
// with, where known.
func serverLine(s result.Server) string {
	line := strings.TrimSpace(s.Software + " " + s.Version)
	if s.Lab != "" {
		line = s.Lab + ": " + line
	}
	if lib := s.Settings["tls_library"]; lib != "" {
		line += ", " + lib
	}
	return line
}

// status is how r ended.
func (ix *index) status() Status {
	r := ix.r
	planned := r.PlannedTrials
	if planned == 0 {
		// Results written before planned_trials: the plan's product,
		// which is what those runs planned (no preset had its own).
		planned = len(r.Spec.Experiments) * len(r.Variants) * len(r.Spec.Concurrency) * r.Spec.Trials
	}
	return Status{
		Interrupted: r.Interrupted,
		Finished:    len(r.Trials),
		Planned:     planned,
		Error:       r.Error,
		Empty:       len(r.Trials) == 0 && len(r.Crypto) == 0 && len(r.Advise) == 0,
	}
}

// lines are the status in words: "interrupted: 7 of 12 trials finished",
// "error: ...".
func (s Status) lines() []string {
	var out []string
	if s.Interrupted {
		if s.Planned > 0 {
			out = append(out, fmt.Sprintf("interrupted: %d of %d trials finished", s.Finished, s.Planned))
		} else {
			out = append(out, fmt.Sprintf("interrupted: %s finished", plural(s.Finished, "trial")))
		}
	}
	if s.Error != "" {
		out = append(out, "error: "+s.Error)
	}
	return out
}

// body is the tables of r, with the prose between them.
func (ix *index) body() []Block {
	var b body
	if isCrypto(ix.r) {
		ix.crypto(&b)
		return b.blocks
	}
	if isAdvise(ix.r) {
		ix.adviseTables(&b)
		ix.gates(&b)
		return b.blocks
	}
	if isReplicate(ix.r) {
		ix.replicateTables(&b)
		ix.gates(&b)
		return b.blocks
	}
	for _, e := range ix.experiments {
		switch e {
		case plan.Storm:
			ix.stormTables(&b)
			continue
		case plan.Wire:
			ix.wireTables(&b)
			if len(ix.conc[plan.Connect]) == 0 {
				ix.rttModel(&b)
			}
			continue
		}
		ix.throughput(&b, e)
		switch e {
		case plan.Connect:
			ix.phases(&b, e)
			ix.ceilings(&b)
			ix.rttModel(&b)
			ix.wireCheckTable(&b)
		case plan.Pool, plan.Stream:
			ix.p95(&b, e)
		}
	}
	ix.stackTables(&b)
	ix.perConnTables(&b)
	ix.memoryTable(&b)
	ix.rateTables(&b)
	ix.negotiated(&b)
	ix.tunnels(&b)
	ix.cpu(&b)
	ix.gates(&b)
	return b.blocks
}
