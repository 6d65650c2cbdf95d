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
