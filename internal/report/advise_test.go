package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/result"
)

// TestAdviseRenderings renders a real advise result (pgbench -C over TLS
// 1.2 against the lab PostgreSQL, calibrated by a lab connect run) as csv
// and json, golden (its text and page are TestGoldenMeasured's and
// TestGoldenHTML's), and checks that its findings state only what was
// computed: every change that applies, CPU with its calibration named.
func TestAdviseRenderings(t *testing.T) {
	path := filepath.Join("testdata", "measured-advise-pgbench.json")
	r, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	m := Build(r)
	for _, f := range []struct {
		ext    string
		render func(*Model, *bytes.Buffer) error
	}{
		{"csv", func(m *Model, b *bytes.Buffer) error { return m.CSV(b) }},
		{"json", func(m *Model, b *bytes.Buffer) error { return m.JSON(b) }},
	} {
		var b bytes.Buffer
		if err := f.render(m, &b); err != nil {
			t.Fatal(err)
		}
		goldenLines(t, strings.TrimSuffix(path, ".json")+"."+f.ext+".golden", b.Bytes())
	}
	if m.Status.Empty || len(m.Warnings) > 0 {
		t.Errorf("status %+v, warnings %q", m.Status, m.Warnings)
	}
	var advice []string
	for _, f := range m.Findings {
		if f.Topic == TopicAdvice {
			advice = append(advice, f.Text)
		}
	}
	applies := 0
	for _, c := range r.Advise[0].Advice {
		if !c.NotApplicable {
			applies++
		}
	}
	if len(advice) != applies {
		t.Fatalf("%d advice findings for %d changes that apply", len(advice), applies)
	}
	for _, f := range advice {
		if !strings.Contains(f, "lab calibration advise-cal.json") || !strings.HasSuffix(f, "A prediction, not yet checked by a lab replay.") {
			t.Errorf("finding %q", f)
		}
	}
	if !strings.HasPrefix(advice[0], "pooling (postgres at 127.0.0.1:") {
		t.Errorf("the first finding is not the largest saving: %q", advice[0])
	}
}

// TestErrorWords: the error column and the findings judge a measured
// saving by the goal, within 10% or inside the measured
// interval, and say which part of the model missed a CPU figure. The
// figures are the lead's delay-link run's on PostgreSQL 15 (server CPU
// per connection, ms).
func TestErrorWords(t *testing.T) {
	fig := func(now, pred, meas, ci, errPct float64) result.Figure {
		return result.Figure{Now: &now, Predicted: &pred, PredictedCI: &ci, Measured: &meas, MeasuredCI: &ci, ErrorPct: &errPct}
	}
	for _, tt := range []struct {
		name   string
		f      result.Figure
		column string
		missed bool
	}{
		{"within 10%", fig(7.71, 5.11, 5.25, 1.42, -5.4), "−5.40%", false},
		{"inside the measured interval", fig(7.71, 6.38, 6.74, 1.53, -27), "−27.0% (inside ±1.53)", false},
		{"outside it", fig(8.03, 4.75, 6.51, 1.14, -53.6), "−53.6% MISSED", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorWords(tt.f); got != tt.column {
				t.Errorf("error column %q, want %q", got, tt.column)
			}
			c := result.Change{Change: "TLS off (the bound)", Server: tt.f, Setup: tt.f}
			c.Setup.ErrorPct = nil // the setup time met the goal
			words := confirmWords(c)
			if said := strings.Contains(words, "The server CPU missed: the calibration predicted"); said != tt.missed {
				t.Errorf("findings say a CPU miss %v, want %v: %q", said, tt.missed, words)
			}
			if tt.missed && !strings.Contains(words, "the CPU per connection of the calibration's cells, not round trips or queueing") {
				t.Errorf("a CPU miss does not say which part missed: %q", words)
			}
			if inside := strings.Contains(words, "inside the measured ±"); inside != (tt.name == "inside the measured interval") {
				t.Errorf("findings: %q", words)
			}
		})
	}
}
