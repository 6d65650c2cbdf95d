package report

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the cases below and testdata/*.golden from them")

// cases are the result files of the golden test. The .json files are
// generated from these with -update, so that they stay realistic and
// consistent; the test renders what it reads back from the files.
var cases = map[string]func() *result.Result{
	"connect":     connectRun,
	"pool":        poolRun,
	"interrupted": interruptedRun,
	"failed":      failedRun,
	// Client stacks (clients_test.go): their csv is golden too.
	"clients-connect": stackConnectRun,
	"clients-pool":    stackPoolRun,
	"clients-wire":    stackWireRun,
}

func TestGolden(t *testing.T) {
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			jsonPath := filepath.Join("testdata", name+".json")
			goldenPath := filepath.Join("testdata", name+".golden")
			if *update {
				if err := result.Write(jsonPath, build()); err != nil {
					t.Fatal(err)
				}
			}
			want := checkGolden(t, jsonPath, goldenPath)
			// The result as measured and as read back render alike: nothing
			// the report shows is lost in the file.
			var direct bytes.Buffer
			if err := Build(build()).Text(&direct); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(direct.Bytes(), want) {
				t.Errorf("Text of the %s case before writing it differs from %s: run -update", name, goldenPath)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	for name, build := range cases {
		r := build()
		var a, b bytes.Buffer
		if err := Build(r).Text(&a); err != nil {
			t.Fatal(err)
		}
		if err := Build(r).Text(&b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: two renderings differ", name)
		}
	}
}

// TestOdd renders results that a run should not produce but a file can hold.
func TestOdd(t *testing.T) {
	tests := []struct {
		name string
		r    *result.Result
		want []string
	}{
		{"empty", result.New(), []string{"warning: no trial finished"}},
		{"unknown variant, no elapsed time", &result.Result{
			Trials: []result.Trial{{Experiment: "soak", Variant: "mystery", Concurrency: 3, Ops: 5}},
		}, []string{"soak: requests/s", "mystery", "warning: one trial:"}},
		{"all operations failed", &result.Result{
			Variants: []plan.Variant{{ID: "plain", TLS: "off", Baseline: true}},
			Trials: []result.Trial{
				{Experiment: plan.Connect, Variant: "plain", Concurrency: 1, Elapsed: time.Second, Errors: map[string]int64{"refused": 9}},
				{Experiment: plan.Connect, Variant: "plain", Concurrency: 1, Round: 1, Elapsed: time.Second, Errors: map[string]int64{"refused": 1}},
			},
		}, []string{"0 (0)", "warning: connect plain c=1: 10 refused errors"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Build(tt.r).Text(&b); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteError(t *testing.T) {
	if err := Build(connectRun()).Text(brokenWriter{}); err == nil {
		t.Error("Text to a failing writer returned no error")
	}
}

func TestTable(t *testing.T) {
	tb := Table{Title: "t", Left: 1, Header: []string{"name", "x"}, Foot: []string{"foot"}}
	tb.add("a", "±1.5 *")
	tb.add("long name", "2")
	var b strings.Builder
	tb.write(&b)
	want := "t\n" +
		"name            x\n" +
		"a          ±1.5 *\n" +
		"long name       2\n" +
		"foot\n\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestGoldenMeasured renders result files of real runs, stored as
// measured (never regenerated), and the wire results
// built from issue 13's figures (wire-*.json, written by hand as the
// decoder writes them): -update rewrites only their goldens.
func TestGoldenMeasured(t *testing.T) {
	for _, jsonPath := range storedFiles(t) {
		checkGolden(t, jsonPath, strings.TrimSuffix(jsonPath, ".json")+".golden")
	}
}

// storedFiles are the result files stored as measured or as a decoder
// writes them: real runs (measured-*.json; readme-*.json, the runs the
// README shows) and the wire results (wire-*.json).
func storedFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, glob := range []string{"measured-*.json", "readme-*.json", "wire-*.json"} {
		fs, _ := filepath.Glob(filepath.Join("testdata", glob))
		files = append(files, fs...)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/measured-*.json")
	}
	return files
}

// checkGolden renders the result file jsonPath and compares it with
// goldenPath (rewritten first with -update); it returns the golden text.
func checkGolden(t *testing.T, jsonPath, goldenPath string) []byte {
	t.Helper()
	r, err := result.Read(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := Build(r).Text(&got); err != nil {
		t.Fatal(err)
	}
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
		t.Errorf("Text(%s) differs from %s (go test ./internal/report -update rewrites it):\n%s", jsonPath, goldenPath, got.String())
	}
	return want
}
