package report

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/result"
)

// readWire reads a wire fixture and lets change alter it.
func readWire(t *testing.T, name string, change func(*result.Result)) *result.Result {
	t.Helper()
	r, err := result.Read(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(r)
	}
	return r
}

// findingsText is every finding's text, one per line.
func findingsText(r *result.Result) string {
	var out []string
	for _, f := range Findings(r) {
		out = append(out, string(f.Kind)+": "+f.Text)
	}
	return strings.Join(out, "\n")
}

// TestWireFindings checks that the findings of a capture follow its
// figures: counts, groups, shares and splits come from the data.
func TestWireFindings(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		change  func(*result.Result)
		want    []string
		notWant []string
	}{
		{"every connection retried", "wire-pgbench.json", nil, []string{
			"Every TLS 1.3 connection in the capture (200) paid a HelloRetryRequest: the client offers X25519 first (its key share), the server takes P-256: one extra round trip, about 1.55 ms here",
			"recommendation: Have clients offer P-256 as their first key share",
			"None of the 200 TLS connections in the capture resumed a session, and no ClientHello offered a session ticket or PSK",
			"Per TLS handshake of tls1.3 P-256 (200 connections), the server took 1.50 ms, the client 1.56 ms and the network 0.0420 ms over 2 round trips",
			"the client is where most of it goes",
			"1 connection began before the capture, 1 connection was still open when it ended",
		}, []string{"Only one variant", "No plain variant"}},
		{"some connections retried", "wire-pgbench.json", func(r *result.Result) { r.Trials[0].Wire.HelloRetries = 37 }, []string{
			"37 of the 200 connections of tls1.3 P-256 paid a HelloRetryRequest",
		}, []string{"Every TLS 1.3 connection"}},
		{"tickets offered, not taken", "wire-pgbench.json", func(r *result.Result) { r.Trials[0].Wire.TicketsOffered = 12 }, []string{
			"though 12 of them offered a session ticket or PSK: the server did not take them",
		}, nil},
		{"nothing unseen", "wire-pgx.json", nil, nil, []string{"did not show everything"}},
		{"resumed share", "wire-https.json", nil, []string{
			"21% of the TLS connections in the capture resumed a session (21 of 100); a resumed connection (tls1.3 X25519 resumed) took 0.785 ms against 3.24 ms for a full one (tls1.3 X25519)",
			"Encryption hid what the 100 TLS connections carried after the handshake: their 2.50 encrypted flights",
			"Per connection of plain (50 connections), 0.281 ms on average",
			// The round-trip model: the capture's setup less its network's
			// round trips, plus the RTT's.
			"At 20ms RTT, the round-trip model predicts that TLS adds 41.9 ms with tls1.2 X25519 (2 more round trips), 22.9 ms with tls1.3 X25519 (1 more round trip)",
		}, []string{"HelloRetryRequest", "persistent connections"}},
		{"self-check parts", "wire-selfcheck.json", nil, []string{
			"For tls1.3 ecdsa-p256, tlsbench's request phase took 0.139 ms against 0.328 ms on the wire (-58%) over 1311 connections",
			"tlsbench's response phase took 0.212 ms against 0.0230 ms",
		}, []string{"tcp phase", "tls-handshake phase", "matched the wire"}},
		{"self-check agrees", "wire-selfcheck.json", func(r *result.Result) {
			for i := range r.WireChecks {
				r.WireChecks[i].Wire = r.WireChecks[i].Tool * 0.97
			}
		}, []string{"tlsbench's phases matched the wire's on the same 7639 connections: every one of the 9 phases checked within 3.1%"}, []string{"does not begin or end"}},
		{"self-check: round trips part", "wire-selfcheck.json", func(r *result.Result) {
			for i := range r.WireChecks {
				r.WireChecks[i].Wire = r.WireChecks[i].Tool
			}
			r.WireChecks[5].WireRoundTrips = 2
		}, []string{"tls-handshake phase took 0.982 ms against 0.982 ms on the wire (+0%) over 1311 connections, and 1 round trip against the wire's 2 round trips"}, nil},
		{"self-check: small difference on a short phase", "wire-selfcheck.json", func(r *result.Result) {
			for i := range r.WireChecks {
				r.WireChecks[i].Wire = r.WireChecks[i].Tool
			}
			r.WireChecks[0].Wire = 0.040 // 50% but 0.021 ms: below wireCheckMS
		}, []string{"matched the wire's"}, []string{"does not begin or end"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := findingsText(readWire(t, tc.file, tc.change))
			flat := strings.Join(strings.Fields(got), " ")
			for _, w := range tc.want {
				if !strings.Contains(flat, w) {
					t.Errorf("no %q in\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(flat, w) {
					t.Errorf("%q in\n%s", w, got)
				}
			}
		})
	}
}

// TestWireCompare checks that two captures compare phase by phase.
func TestWireCompare(t *testing.T) {
	c := Compare(Run{"a", readWire(t, "wire-pgbench.json", nil)}, Run{"b", readWire(t, "wire-pgx.json", nil)})
	var titles []string
	for _, f := range c.Tables {
		titles = append(titles, f.Title)
		if len(f.Rows) != 1 || f.Rows[0].Variant != "tls1.3 P-256" {
			t.Errorf("%s: rows %+v", f.Title, f.Rows)
		}
	}
	want := []string{"connection, ms (mean over each variant's connections)", "tcp, ms", "startup, ms", "tls-handshake, ms", "auth, ms", "query, ms", "close, ms", "round trips per connection"}
	if !slices.Equal(titles, want) {
		t.Errorf("figures %q, want %q", titles, want)
	}
}

// TestSummaryExtraRows checks the rows of storms, --per-conn and --rate
// cells: each figure once per cell, those of --per-conn and --rate cells
// with their parameter in its column.
func TestSummaryExtraRows(t *testing.T) {
	tests := []struct {
		file    string
		metrics []string
		param   func(CellSummary) number
	}{
		{"measured-knee.json", []string{"achieved/s", "service ms", "dropped %", "failed %"}, func(c CellSummary) number { return c.Offered }},
		{"measured-rate.json", []string{"achieved/s", "service ms", "dropped %", "failed %", "lag ms", "lag max ms", "late 1ms %", "late 10ms %"}, func(c CellSummary) number { return c.Offered }},
		{"measured-perconn.json", []string{"connections/s", "operations/s", "ms/op"}, func(c CellSummary) number { return c.PerConn }},
		{"measured-postgres-storm.json", []string{"connected", "all connected ms", "last first op ms", "listen overflows", "listen drops", "server CPU ms"}, nil},
	}
	for _, tc := range tests {
		r := readWire(t, tc.file, nil)
		count := map[string]int{}
		for _, c := range Build(r).Cells {
			// The closed-loop cells have no parameter (connect's
			// connections/s is per-conn 1's).
			if tc.param == nil || tc.param(c).known() {
				count[c.Metric]++
			}
		}
		n := count[tc.metrics[0]]
		if n == 0 {
			t.Errorf("%s: no %s rows", tc.file, tc.metrics[0])
		}
		for _, m := range tc.metrics {
			if count[m] != n {
				t.Errorf("%s: %d %s rows, %d %s rows", tc.file, count[m], m, n, tc.metrics[0])
			}
		}
	}
}

// TestWireCaptureFacts: the header says where a file was cut and that the
// decoder's cap was reached, and the phase table says when an old result's
// phases add up past the total (each a mean over other connections).
func TestWireCaptureFacts(t *testing.T) {
	r := readWire(t, "wire-pgbench.json", func(r *result.Result) {
		r.Capture.CutAt = 123456
		r.Capture.OpenCap = 20000
		r.Capture.Unseen["untracked"] = 7
		r.Capture.Unseen["cut-short"] = 1
		// An old result: startup a mean over half the connections.
		r.Trials[0].Phases[1].Latency.Mean += r.Trials[0].Latency.Mean
	})
	var b strings.Builder
	if err := Build(r).Text(&b); err != nil {
		t.Fatal(err)
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"cut short at byte 123456, at most 20000 connections followed at once",
		"7 connections not followed (too many open at once), 1 packet cut short where the file ends",
		"the phases of tls1.3 P-256 add up past the total: each is a mean over the connections that had it; decode the capture again with this tlsbench",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report does not say %q:\n%s", want, b.String())
		}
	}
	var whole strings.Builder
	if err := Build(readWire(t, "wire-pgbench.json", nil)).Text(&whole); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(whole.String(), "add up past the total") {
		t.Errorf("a result whose phases add up says they do not:\n%s", whole.String())
	}
}
