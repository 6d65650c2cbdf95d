package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestMongoSeedGolden renders the seed's table, and the whole text report
// it begins, from a result stored as
// measured by `tlsbench connect --preset mongodb-seed --lab mongodb` (never
// regenerated; -update rewrites only the golden).
func TestMongoSeedGolden(t *testing.T) {
	jsonPath := filepath.Join("testdata", "mongodb", "seed.json")
	goldenPath := filepath.Join("testdata", "mongodb", "seed.golden")
	r, err := result.Read(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	m := Build(r)
	if m.PresetErr != nil {
		t.Fatal(m.PresetErr)
	}
	if m.Preset == nil {
		t.Fatal("no table of the seed study")
	}
	var seed strings.Builder
	m.Preset.write(&seed)
	got := bytes.NewBufferString(seed.String())
	if *update {
		if err := os.WriteFile(goldenPath, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("the seed table of %s differs from %s (go test ./internal/report -update rewrites it):\n%s", jsonPath, goldenPath, got.String())
	}
	// The whole text report, as `tlsbench report` prints it: the seed's
	// table first, then the generic tables.
	var all bytes.Buffer
	if err := Build(r).Text(&all); err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join("testdata", "mongodb", "seed.text.golden"), all.Bytes())
}

// TestMongoSeedOtherResult: the seed's table is for mongodb-seed results
// only, and a figure without trials shows as such.
func TestMongoSeedOtherResult(t *testing.T) {
	r, err := result.Read(filepath.Join("testdata", "mongodb", "seed.json"))
	if err != nil {
		t.Fatal(err)
	}
	other := *r
	other.Spec.Preset = ""
	if m := Build(&other); m.PresetErr != nil || m.Preset != nil {
		t.Errorf("the seed's table of a result without the preset: %v", m.PresetErr)
	}
	cut := *r
	cut.Trials = nil
	for _, tr := range r.Trials {
		if tr.Experiment != plan.ReusedClient {
			cut.Trials = append(cut.Trials, tr)
		}
	}
	m := Build(&cut)
	if m.PresetErr != nil {
		t.Fatal(m.PresetErr)
	}
	var b strings.Builder
	m.Preset.write(&b)
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "reused-client query ") && !strings.Contains(line, " 0 ") {
			t.Errorf("a figure without trials: %q", line)
		}
	}
}
