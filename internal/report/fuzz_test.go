package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/report/chart"
	"github.com/tlsbench/tlsbench/internal/result"
)

// seedResults are the stored results of real and modelled runs, compact
// and without their HdrHistograms (only the MongoDB seed table reads
// them), so that the fuzzer mutates figures rather than base64.
func seedResults(t testing.TB) map[string][]byte {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	paths = append(paths, filepath.Join("testdata", "mongodb", "seed.json"))
	out := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p, "mongodb") { // its table merges them
			walk(doc, func(m map[string]any) { delete(m, "hdr") })
		}
		data, err = json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(strings.TrimPrefix(p, "testdata"+string(filepath.Separator)), ".json")] = data
	}
	return out
}

// walk calls f on every object of a decoded JSON document.
func walk(doc any, f func(map[string]any)) {
	switch d := doc.(type) {
	case map[string]any:
		f(d)
		for _, v := range d {
			walk(v, f)
		}
	case []any:
		for _, v := range d {
			walk(v, f)
		}
	}
}

// mutations are edits of a compact result that the fuzzer starts from:
// each damages the file one way (Read must refuse it) or pushes a figure
// to an extreme a file can hold (every renderer must cope).
var mutations = []struct{ old, new string }{
	{`"p95_ms":`, `"p95_ms":-`},
	{`"p95_ms":`, `"p95_ms":1e309,"x":`},
	{`"mean_ms":`, `"mean_ms":1e308,"x":`},
	{`"stddev_ms":`, `"stddev_ms":1e308,"x":`},
	{`"max_ms":`, `"max_ms":5e-324,"x":`},
	{`"ops":`, `"ops":9223372036854775807,"x":`},
	{`"elapsed_ns":`, `"elapsed_ns":1,"x":`},
	{`"concurrency":1,`, `"concurrency":9223372036854775807,`},
	{`"concurrency":`, `"concurrency":0,"x":`},
	{`"variants":`, `"x":`},
	{`"trials":[{`, `"trials":[],"x":[{`},
	{`"round":`, `"round":9223372036854775807,"x":`},
	{`"sign_per_sec":`, `"sign_per_sec":1e308,"x":`},
	{`"cores":`, `"cores":9223372036854775807,"x":`},
	{`"per_core":`, `"per_core":1e308,"x":`},
	{`"per_core":`, `"per_core":5e-324,"x":`},
	{`"rtt_ns":`, `"rtt_ns":9223372036854775807,"x":`},
	{`"min":`, `"min":1000000,"max":1000000,"mean":1e308,"x":`},
}

// FuzzRender renders every result Read accepts with every renderer: none
// may panic, and none may fail on a working writer.
func FuzzRender(f *testing.F) {
	seeds := seedResults(f)
	for i, name := range slices.Sorted(maps.Keys(seeds)) {
		data := seeds[name]
		f.Add(data)
		if testing.Short() && i%4 != 0 {
			continue // rendering every file mutated every way takes seconds
		}
		for _, m := range mutations {
			if bytes.Contains(data, []byte(m.old)) {
				f.Add(bytes.Replace(data, []byte(m.old), []byte(m.new), 1))
			}
		}
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "r.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := result.Read(path)
		if err != nil {
			return
		}
		renderAll(t, r)
	})
}

// renderAll runs every renderer of the package on r. All must return, and
// without an error but for the preset's table: that table merges the
// HdrHistograms, which Read does not decode, so a damaged one is the
// error of the renderings that show it (text, HTML) to report.
func renderAll(t *testing.T, r *result.Result) {
	t.Helper()
	m := Build(r)
	presetErr := m.PresetErr
	for name, render := range map[string]func(io.Writer) error{
		"text": m.Text, "html": m.HTML, "csv": m.CSV, "json": m.JSON,
		"compare": func(w io.Writer) error {
			return CompareText(w, Compare(Run{Name: "old", Result: r}, Run{Name: "new", Result: r}))
		},
	} {
		err := render(io.Discard)
		if err != nil && (presetErr == nil || err.Error() != presetErr.Error() || (name != "text" && name != "html")) {
			t.Errorf("%s: %v", name, err)
		}
	}
	Findings(r)
	Predict(r)
}

// TestChartsDamaged draws results built in memory, which Read never
// validated, with figures no run produces: every renderer must return, and
// every chart it keeps must draw (a chart gonum cannot draw is left out).
func TestChartsDamaged(t *testing.T) {
	bases := map[string]*result.Result{"crypto": cryptoRun(), "pool": poolRun()}
	for _, name := range []string{"measured-connect", "measured-rtt", "measured-ceilings", "measured-tunnels"} {
		r, err := result.Read(filepath.Join("testdata", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		bases[name] = r
	}
	values := map[string]float64{"NaN": math.NaN(), "+Inf": math.Inf(1), "-Inf": math.Inf(-1), "-1": -1, "1e308": 1e308, "5e-324": 5e-324}
	if testing.Short() {
		// Every value draws every chart five ways: under -short one of
		// each kind (undefined, negative, too large) stands for them.
		values = map[string]float64{"NaN": math.NaN(), "-1": -1, "1e308": 1e308}
	}
	damage := func(r *result.Result, x float64, all bool) {
		for i := range r.Trials {
			if i > 0 && !all {
				break
			}
			tr := &r.Trials[i]
			hists := []*result.Hist{&tr.Latency}
			for j := range tr.Phases {
				hists = append(hists, &tr.Phases[j].Latency)
				tr.Phases[j].RoundTrips.Mean = x
			}
			for _, h := range hists {
				h.Mean, h.StdDev, h.P50, h.P95, h.P99, h.Max = x, x, x, x, x, x
			}
			if x < 0 {
				tr.Ops, tr.Elapsed, tr.ClientCPU, tr.Conns = -1, -1, -1, -1
			}
		}
		for i := range r.Ceilings {
			r.Ceilings[i].SignPerSec = x
		}
		for i := range r.Crypto {
			if i%2 == 0 || all {
				r.Crypto[i].PerCore, r.Crypto[i].AllCores = x, x
			}
		}
	}
	for name, base := range bases {
		data, err := json.Marshal(base)
		if err != nil {
			t.Fatal(err)
		}
		for label, x := range values {
			for _, all := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/all=%v", name, label, all), func(t *testing.T) {
					var r result.Result
					if err := json.Unmarshal(data, &r); err != nil {
						t.Fatal(err)
					}
					damage(&r, x, all)
					renderAll(t, &r)
					for _, c := range Build(&r).Figures {
						if _, err := chart.SVG(c); err != nil {
							t.Errorf("SVG: %v", err)
						}
						if all && label == "1e308" {
							if _, err := chart.PNG(c); err != nil {
								t.Errorf("PNG: %v", err)
							}
						}
					}
				})
			}
		}
	}
}
