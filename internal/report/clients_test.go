package report

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// The client-stack cases model PostgreSQL 15 in the lab on the 2-core VM
// (docs/studies.md, "The client stack matters"): a plain pgx connection
// costs ~6.4 ms, 2.1 ms of it client CPU (SCRAM) and 7.7 ms of server CPU
// (the backend's fork); TLS 1.3 adds 1.1 ms of client CPU with pgx, 2.1
// with psycopg (its bundled libpq and OpenSSL 3, whose SCRAM login alone
// costs ~7 ms), 1.65 with pgjdbc; the server's share is alike. Over a
// -c sweep on 2 cores psycopg's TLS connections cost more client CPU as
// its threads contend (OpenSSL 3), Go's and pgjdbc's hardly.

// stackFigure is one stack's variant at one concurrency: connections/s,
// client and server CPU per connection (ms), and the phases at c=1.
type stackFigure struct {
	rate, client, server float64
	phases               []phase
	neg                  *result.Negotiated
}

// figure is s as the cases' figure at concurrency c, whose time per
// connection (c/rate) stretches the phases of c=1 alike.
func (s stackFigure) figure(c int, base float64) figure {
	lat := float64(c) / s.rate * 1000
	f := figure{
		rate:   s.rate,
		lat:    result.Hist{Mean: lat, StdDev: lat * 0.3, P50: lat * 0.95, P95: lat * 1.45, P99: lat * 1.9, Max: lat * 4},
		client: s.rate * s.client / 1000, server: s.rate * s.server / 1000,
		sent: 1200, recv: 1900, neg: s.neg,
	}
	for _, p := range s.phases {
		f.phases = append(f.phases, phase{p.name, round3(p.ms * lat / base), p.rt})
	}
	return f
}

var (
	pgTLS13HRR = &result.Negotiated{Version: "TLS 1.3", Suite: "TLS_AES_256_GCM_SHA384", Group: "P-256", HelloRetry: true, PeerKey: "RSA-2048"}
	pgTLS13    = &result.Negotiated{Version: "TLS 1.3", Suite: "TLS_AES_256_GCM_SHA384", Group: "P-256", PeerKey: "RSA-2048"}
)

// stackPhases are a connection's phases at c=1: tcp, then with TLS the
// SSLRequest and the handshake (2 round trips after a HelloRetryRequest),
// then the login (SCRAM, 3 round trips), the query and the close.
func stackPhases(auth, handshake float64, hrr bool) []phase {
	ps := []phase{{"tcp", 0.41, 1}}
	if handshake > 0 {
		rt := 1
		if hrr {
			rt = 2
		}
		ps = append(ps, phase{"tls-negotiation", 1.80, 1}, phase{"tls-handshake", handshake, rt})
	}
	return append(ps, phase{"auth", auth, 3}, phase{"query", 1.52, 2}, phase{"close", 0.11, 0})
}

// stackConnect is each stack's plain and TLS 1.3 variant at c=1, 4, 16:
// rate, client CPU and server CPU per connection.
var stackConnect = map[string]map[int]stackFigure{
	"go plain": {
		1: {rate: 156, client: 2.06, server: 7.68, phases: stackPhases(4.38, 0, false)},
		4: {rate: 190, client: 2.10, server: 7.70}, 16: {rate: 185, client: 2.15, server: 7.72}},
	"go tls1.3 rsa2048": {
		1: {rate: 108, client: 3.16, server: 9.98, phases: stackPhases(3.40, 1.95, true), neg: pgTLS13HRR},
		4: {rate: 150, client: 3.20, server: 10.0, neg: pgTLS13HRR}, 16: {rate: 145, client: 3.25, server: 10.0, neg: pgTLS13HRR}},
	"psycopg plain": {
		1: {rate: 88, client: 7.90, server: 7.70, phases: stackPhases(8.95, 0, false)},
		4: {rate: 115, client: 8.20, server: 7.70}, 16: {rate: 108, client: 8.60, server: 7.75}},
	"psycopg tls1.3 rsa2048": {
		1: {rate: 63, client: 10.0, server: 10.0, phases: stackPhases(8.95, 2.35, true), neg: pgTLS13HRR},
		4: {rate: 84, client: 11.4, server: 10.0, neg: pgTLS13HRR}, 16: {rate: 71, client: 13.6, server: 10.1, neg: pgTLS13HRR}},
	"pgjdbc plain": {
		1: {rate: 120, client: 3.20, server: 7.70, phases: stackPhases(5.96, 0, false)},
		4: {rate: 170, client: 3.30, server: 7.70}, 16: {rate: 165, client: 3.40, server: 7.72}},
	"pgjdbc tls1.3 rsa2048": {
		1: {rate: 78, client: 4.85, server: 10.0, phases: stackPhases(6.05, 2.90, false), neg: pgTLS13},
		4: {rate: 135, client: 5.00, server: 10.0, neg: pgTLS13}, 16: {rate: 128, client: 5.20, server: 10.0, neg: pgTLS13}},
}

// pgStacks are what the programs of psycopg, pgjdbc and node-postgres
// said of themselves.
var pgStacks = []result.ClientStack{
	{Name: "psycopg", Library: "psycopg 3 with its bundled libpq and OpenSSL", Driver: "psycopg/3.2.3", TLS: "OpenSSL/3.3.2", Runtime: "CPython/3.11.2", Model: "threads"},
	{Name: "pgjdbc", Library: "pgjdbc over the JDK's JSSE", Driver: "pgjdbc/42.7.4", TLS: "JSSE/17.0.15", Runtime: "OpenJDK/17.0.15", Model: "threads"},
	{Name: "node-postgres", Library: "node-postgres over Node's OpenSSL", Driver: "pg/8.13.1", TLS: "OpenSSL/3.0.15+quic", Runtime: "Node/20.19.2", Model: "event-loop"},
}

// stackRun builds a run of spec through stacks (Go's first) whose
// variants are the spec's with the stack first ("psycopg tls1.3
// rsa2048"), trials interleaved as tlsbench runs them; baselines marks
// which plain variants are baselines (every stack's, or Go's alone).
func stackRun(raw plan.Spec, stacks []string, every bool, fig func(variant string, c int) figure, limit int) *result.Result {
	raw.ClientStacks = stacks
	spec, err := plan.New(raw)
	if err != nil {
		panic(err)
	}
	r := result.New()
	r.Tool = result.Tool{Name: "tlsbench", Version: "0.1.0", Go: "go1.26.8", TLSLibrary: "crypto/tls (Go 1.26.8)"}
	r.Env = result.Env{OS: "linux", Arch: "amd64", Kernel: "6.1.0-40-cloud-amd64", CPUModel: "AMD EPYC 7B13", Cores: 2, AESNI: true, Hostname: "bench-1"}
	r.Command = []string{"tlsbench", string(raw.Experiments[0]), "--lab", "postgres", "--client", strings.Join(stacks, ","), "--tls", "off,1.3",
		"-c", strings.Trim(strings.ReplaceAll(fmt.Sprint(raw.Concurrency), " ", ","), "[]"), "--trials", fmt.Sprint(raw.Trials)}
	r.Started = started
	r.Spec = spec
	for _, v := range spec.Variants() {
		if v.Client != "" {
			v.Baseline = v.Baseline && every
		}
		r.Variants = append(r.Variants, v)
		if v.Plain() {
			r.Checks = append(r.Checks, result.Check{Variant: v.ID, Server: &result.ServerView{}})
		} else {
			r.Checks = append(r.Checks, result.Check{Variant: v.ID, Server: &result.ServerView{TLS: true, Version: "TLSv1.3", Cipher: "TLS_AES_256_GCM_SHA384"}})
		}
	}
	for _, s := range stacks {
		for _, c := range pgStacks {
			if c.Name == s {
				r.Clients = append(r.Clients, c)
			}
		}
	}
	r.Target = result.Target{URL: "lab:postgres", Kind: "lab", Server: &result.Server{Software: "PostgreSQL", Version: "15.14 (Debian 15.14-0+deb12u1)", Settings: map[string]string{"tls_library": "OpenSSL 3.0.17"}}}
	return interleave(r, func(_ plan.Experiment, v string, c int) figure { return fig(v, c) }, limit)
}

// stackConnectRun is the threads study: connect --client go,psycopg,pgjdbc
// --tls off,1.3 -c 1,4,16, 3 rounds.
func stackConnectRun() *result.Result {
	s := plan.Spec{Target: "lab:postgres", Experiments: []plan.Experiment{plan.Connect}, TLS: []string{"off", "1.3"}, Concurrency: []int{1, 4, 16}, Trials: 3}
	return stackRun(s, []string{"go", "psycopg", "pgjdbc"}, true, func(v string, c int) figure {
		sf := stackConnect[v][c]
		if sf.phases == nil {
			sf.phases = stackConnect[v][1].phases
		}
		if !strings.HasPrefix(v, "go ") {
			sf.phases = nil // a stack reports each connection's start and end only
		}
		return sf.figure(c, 1000/stackConnect[v][1].rate)
	}, -1)
}

// stackWireRun is connect --client go,psycopg,pgjdbc --tls off,1.3 --wire
// at c=1, 2 rounds: Go's phases beside the wire's, the stacks' from the
// wire alone (figures as measured here), and what the wire shows each
// stack negotiated; pgjdbc's plain connections one short of its count.
func stackWireRun() *result.Result {
	s := plan.Spec{Target: "lab:postgres", Experiments: []plan.Experiment{plan.Connect}, TLS: []string{"off", "1.3"}, Concurrency: []int{1}, Trials: 2}
	r := stackRun(s, []string{"go", "psycopg", "pgjdbc"}, true, func(v string, c int) figure {
		sf := stackConnect[v][1]
		if !strings.HasPrefix(v, "go ") {
			sf.phases = nil
		}
		return sf.figure(c, 1000/sf.rate)
	}, -1)
	r.Command = append(r.Command, "--wire")
	type ph struct {
		name                  string
		tool, wire            float64
		toolRT, wireRT        float64
		client, server, netwk float64
	}
	add := func(variant, client string, conns int64, phases ...ph) {
		for _, p := range phases {
			r.WireChecks = append(r.WireChecks, result.WireCheck{Variant: variant, Phase: p.name, Conns: conns, Tool: p.tool, Wire: p.wire,
				ToolRoundTrips: p.toolRT, WireRoundTrips: p.wireRT, Client: client,
				Split: &result.PhaseSplit{Phase: p.name, Client: p.client, Server: p.server, Network: p.netwk}})
		}
	}
	add("go plain", "", 312,
		ph{"tcp", 0.035, 0.014, 1, 1, 0, 0, 0.014}, ph{"startup", 4.32, 4.20, 1, 1, 0.465, 3.72, 0.014},
		ph{"auth", 3.74, 3.77, 2, 2, 1.03, 2.71, 0.028}, ph{"query", 1.52, 1.50, 2, 2, 0.311, 1.16, 0.028}, ph{"close", 0.110, 0.048, 0, 0, 0.048, 0, 0})
	add("go tls1.3 rsa2048", "", 216,
		ph{"tcp", 0.031, 0.016, 1, 1, 0, 0, 0.016}, ph{"startup", 1.90, 1.68, 1, 1, 0.366, 1.30, 0.016},
		ph{"tls-handshake", 2.39, 2.55, 2, 2, 0.531, 1.99, 0.031}, ph{"close", 0.110, 0.080, 0, 0, 0.080, 0, 0},
		ph{"encrypted", 4.95, 4.98, 5, 5, 1.03, 3.87, 0.078})
	add("psycopg plain", "psycopg", 176,
		ph{"tcp", 0, 0.013, 0, 1, 0, 0, 0.013}, ph{"startup", 0, 5.12, 0, 1, 0.159, 4.95, 0.013},
		ph{"auth", 0, 4.52, 0, 2, 2.10, 2.40, 0.026}, ph{"query", 0, 1.61, 0, 2, 0.58, 1.00, 0.026}, ph{"close", 0, 0.022, 0, 0, 0.022, 0, 0})
	add("psycopg tls1.3 rsa2048", "psycopg", 126,
		ph{"tcp", 0, 0.013, 0, 1, 0, 0, 0.013}, ph{"startup", 0, 2.98, 0, 1, 0.802, 2.16, 0.013},
		ph{"tls-handshake", 0, 3.26, 0, 2, 1.51, 1.73, 0.026}, ph{"encrypted", 0, 9.02, 0, 5, 3.70, 5.25, 0.065}, ph{"close", 0, 0.166, 0, 0, 0.166, 0, 0})
	add("pgjdbc plain", "pgjdbc", 239,
		ph{"tcp", 0, 0.014, 0, 1, 0, 0, 0.014}, ph{"startup", 0, 5.33, 0, 1, 1.03, 4.29, 0.014},
		ph{"auth", 0, 1.59, 0, 2, 0.97, 0.59, 0.029}, ph{"query", 0, 1.32, 0, 2, 0.69, 0.60, 0.029}, ph{"close", 0, 0.041, 0, 0, 0.041, 0, 0})
	add("pgjdbc tls1.3 rsa2048", "pgjdbc", 156,
		ph{"tcp", 0, 0.012, 0, 1, 0, 0, 0.012}, ph{"startup", 0, 1.61, 0, 1, 0.52, 1.08, 0.012},
		ph{"tls-handshake", 0, 1.86, 0, 1, 1.42, 0.43, 0.012}, ph{"encrypted", 0, 9.83, 0, 5.5, 5.50, 4.32, 0.067}, ph{"close", 0, 0.087, 0, 0, 0.087, 0, 0})
	tls13 := func(group string, hrr bool, hello int) *result.Negotiated {
		return &result.Negotiated{Version: "TLS 1.3", Suite: "TLS_AES_256_GCM_SHA384", Group: group, HelloRetry: hrr, ClientHelloBytes: hello}
	}
	r.WireStacks = []result.WireNegotiated{
		{Variant: "psycopg plain", Client: "psycopg", Conns: 176},
		{Variant: "psycopg tls1.3 rsa2048", Client: "psycopg", Conns: 126, TLS: 126, Negotiated: tls13("P-256", true, 1475), HelloRetries: 126, ClientCert: "hidden"},
		{Variant: "pgjdbc plain", Client: "pgjdbc", Conns: 239},
		{Variant: "pgjdbc tls1.3 rsa2048", Client: "pgjdbc", Conns: 156, TLS: 156, Negotiated: tls13("P-256", false, 323), ClientCert: "hidden"},
	}
	r.Notes = append(r.Notes,
		"--wire: the run's connections were captured on loopback with tcpdump (48210 packets, 0 dropped by the kernel); each trial's are those the capture shows starting within its time",
		"--wire: go tls1.3 rsa2048: the wire cannot see inside the encrypted flights after the handshake; tlsbench's auth, query are summed beside them as encrypted",
		"--wire: pgjdbc plain opened 240 connections in its trials, the capture shows 239 starting within them")
	return r
}

// stackPoolRun is pool --client go,node-postgres --tls off,1.3 -c 1,4:
// node-postgres's one event loop is busy at c=4 (~100 µs of client CPU
// per query against Go's 12), so there it measures itself; only Go's
// plain is marked the baseline, node-postgres's is found as its sibling.
func stackPoolRun() *result.Result {
	s := plan.Spec{Target: "lab:postgres", Experiments: []plan.Experiment{plan.Pool}, TLS: []string{"off", "1.3"}, Concurrency: []int{1, 4}, Trials: 3}
	figs := map[string]map[int][2]float64{ // queries/s, client µs per query
		"go plain":                     {1: {5200, 12.1}, 4: {14000, 11.0}},
		"go tls1.3 rsa2048":            {1: {4800, 13.4}, 4: {12500, 12.6}},
		"node-postgres plain":          {1: {4100, 101}, 4: {9000, 103}},
		"node-postgres tls1.3 rsa2048": {1: {3600, 112}, 4: {7600, 121}},
	}
	return stackRun(s, []string{"go", "node-postgres"}, false, func(v string, c int) figure {
		f := figs[v][c]
		lat := float64(c) / f[0] * 1000
		neg := pgTLS13HRR
		if strings.HasSuffix(v, "plain") {
			neg = nil
		}
		return figure{
			rate:   f[0],
			lat:    result.Hist{Mean: lat, StdDev: lat * 0.25, P50: lat * 0.9, P95: lat * 1.6, P99: lat * 2.3, Max: lat * 25},
			client: f[0] * f[1] / 1e6, server: f[0] * 38 / 1e6 * float64(min(c, 2)) / float64(c) * 1.1,
			sent: 90, recv: 260, conns: int64(c), neg: neg,
		}
	}, -1)
}

// TestStackBaselines checks that every change of a stack's variant is
// against the same stack's plain, wherever the report states one, and
// that a stack without its own plain is set against no other's.
func TestStackBaselines(t *testing.T) {
	for name, r := range map[string]*result.Result{"connect": stackConnectRun(), "pool": stackPoolRun()} {
		ix := newIndex(r)
		e := ix.experiments[0]
		for _, v := range r.Variants {
			stack := ix.stackOf(v.ID)
			base := ix.baselineOf(v.ID)
			if want := stack + " plain"; base != want {
				t.Errorf("%s: baselineOf(%q) = %q, want %q", name, v.ID, base, want)
			}
			k := cellKey{e, v.ID, ix.conc[e][0]}
			got := ix.deltaCell(k)
			if v.Plain() {
				if got.Text != "baseline" {
					t.Errorf("%s: %s's change = %q, want baseline", name, v.ID, got.Text)
				}
				continue
			}
			want := deltaCell(ix.pairedWith(e, base, v.ID, k.c))
			if got.Text != want.Text {
				t.Errorf("%s: %s's change = %q, want %q (against %s)", name, v.ID, got.Text, want.Text, base)
			}
		}
	}
	// Without psycopg's plain, its TLS variant has no baseline: never Go's.
	r := stackConnectRun()
	r.Variants = slices.DeleteFunc(r.Variants, func(v plan.Variant) bool { return v.ID == "psycopg plain" })
	r.Trials = slices.DeleteFunc(r.Trials, func(t result.Trial) bool { return t.Variant == "psycopg plain" })
	ix := newIndex(r)
	if b := ix.baselineOf("psycopg tls1.3 rsa2048"); b != "" {
		t.Errorf("baselineOf without psycopg plain = %q, want none", b)
	}
	if c := ix.deltaCell(cellKey{plan.Connect, "psycopg tls1.3 rsa2048", 1}); c.Text != "-" {
		t.Errorf("change without psycopg plain = %q, want -", c.Text)
	}
	for _, s := range ix.cellSummaries() {
		if s.Variant == "psycopg tls1.3 rsa2048" && !math.IsNaN(float64(s.DeltaPct)) {
			t.Errorf("csv row %s %s has a change %v without its stack's plain", s.Variant, s.Metric, s.DeltaPct)
		}
	}
}

// TestStackFindings checks the client stacks' sentences: the stacks'
// TLS client CPU with their ratio only where the interval says they
// differ, the stack that loses most, a client that set the pace, and no
// ratio from one round.
func TestStackFindings(t *testing.T) {
	texts := func(r *result.Result) string {
		var out []string
		for _, f := range Findings(r) {
			if f.Topic == TopicClients {
				out = append(out, f.Text)
			}
		}
		return strings.Join(out, "\n")
	}
	connect := texts(stackConnectRun())
	for _, want := range []string{
		"TLS 1.3 rsa2048 adds 2.", "of client CPU to each psycopg connection",
		"psycopg's TLS handshake costs its client 1.89× what go's does",
		"no stack measurably loses more connections per second to TLS than the next (pgjdbc and go differ",
		"psycopg tls1.3 rsa2048 made 1.13× the connections per second and its client CPU per connection rose 35.6%",
		"go tls1.3 rsa2048 made 1.35× the connections per second and its client CPU per connection rose 2.4%",
		"The psycopg client kept 0.94-0.97 of its 1 core busy (CPython's threads take turns on one interpreter lock) in connect psycopg plain c=4",
	} {
		if !strings.Contains(connect, want) {
			t.Errorf("connect findings lack %q:\n%s", want, connect)
		}
	}
	if strings.Contains(connect, "The go client kept") || strings.Contains(connect, "The pgjdbc client kept") {
		t.Errorf("connect findings call a client busy that was not:\n%s", connect)
	}
	pool := texts(stackPoolRun())
	if want := "The node-postgres client kept 0.9"; !strings.Contains(pool, want) {
		t.Errorf("pool findings lack %q:\n%s", want, pool)
	}
	if strings.Contains(pool, "The go client kept") {
		t.Errorf("pool findings call Go's client busy:\n%s", pool)
	}
	// A stack that loses measurably more than the next is named.
	slow := stackConnectRun()
	for i, t := range slow.Trials {
		if t.Variant == "psycopg tls1.3 rsa2048" {
			slow.Trials[i].Ops = t.Ops * 8 / 10
		}
	}
	if got, want := texts(slow), "With TLS 1.3 rsa2048, psycopg loses the most connections per second to TLS against its own plain: 42."; !strings.Contains(got, want) {
		t.Errorf("findings lack %q:\n%s", want, got)
	}
	// One round: figures, never a ratio or a verdict.
	one := stackConnectRun()
	one.Trials = slices.DeleteFunc(one.Trials, func(t result.Trial) bool { return t.Round > 0 })
	got := texts(one)
	if !strings.Contains(got, "one round, so no interval tells these apart") || strings.Contains(got, "×") || strings.Contains(got, "loses the most") {
		t.Errorf("one-round findings overstate:\n%s", got)
	}
	// Go's alone: no client stack section, no such finding.
	var b bytes.Buffer
	if err := Build(connectRun()).Text(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "client stack") {
		t.Errorf("a run of Go's alone mentions client stacks:\n%s", b.String())
	}
}
