package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/result"
)

// read loads a stored result file; each call returns a fresh copy to alter.
func read(t *testing.T, name string) *result.Result {
	t.Helper()
	r, err := result.Read(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// halve makes a run where variant did half the operations in the same time:
// throughput halves, CPU per operation doubles.
func halve(r *result.Result, variant string) *result.Result {
	for i := range r.Trials {
		if r.Trials[i].Variant == variant {
			r.Trials[i].Ops /= 2
			r.Trials[i].Queries /= 2
		}
	}
	return r
}

// perturb is a re-run of the same config: every trial's operations moved
// by up to ±3%, well within the trials' own spread, and their order shuffled.
func perturb(r *result.Result) *result.Result {
	f := []float64{0.03, -0.02, 0.01, -0.03, 0.02, -0.01, 0}
	for i := range r.Trials {
		r.Trials[i].Ops = int64(math.Round(float64(r.Trials[i].Ops) * (1 + f[i%len(f)])))
	}
	for i, j := 0, len(r.Trials)-1; i < j; i, j = i+1, j-1 {
		r.Trials[i], r.Trials[j] = r.Trials[j], r.Trials[i]
	}
	return r
}

// half keeps the rounds of r from lo to hi-1, renumbered from 0: two halves
// of one run are two runs of the same config.
func half(r *result.Result, lo, hi int) *result.Result {
	var ts []result.Trial
	for _, t := range r.Trials {
		if t.Round >= lo && t.Round < hi {
			t.Round -= lo
			ts = append(ts, t)
		}
	}
	r.Trials = ts
	r.Spec.Trials = hi - lo
	return r
}

type compareCase struct {
	old, new func(t *testing.T) Run
}

var compareCases = map[string]compareCase{
	"2x": {
		func(t *testing.T) Run {
			return Run{"measured-postgres-connect.json", read(t, "measured-postgres-connect.json")}
		},
		func(t *testing.T) Run {
			return Run{"halved.json", halve(read(t, "measured-postgres-connect.json"), "tls1.3 rsa2048")}
		},
	},
	"rerun": {
		func(t *testing.T) Run { return Run{"measured-pool.json", read(t, "measured-pool.json")} },
		func(t *testing.T) Run { return Run{"perturbed.json", perturb(read(t, "measured-pool.json"))} },
	},
	"halves": {
		func(t *testing.T) Run {
			return Run{"rounds-0-4.json", half(read(t, "measured-postgres-connect.json"), 0, 5)}
		},
		func(t *testing.T) Run {
			return Run{"rounds-5-9.json", half(read(t, "measured-postgres-connect.json"), 5, 10)}
		},
	},
	// Two clients' captures of the same server: libpq (pgbench) and pgx.
	"wire": {
		func(t *testing.T) Run { return Run{"wire-pgbench.json", read(t, "wire-pgbench.json")} },
		func(t *testing.T) Run { return Run{"wire-pgx.json", read(t, "wire-pgx.json")} },
	},
	"mismatch": {
		func(t *testing.T) Run { return Run{"measured-connect.json", read(t, "measured-connect.json")} },
		func(t *testing.T) Run {
			return Run{"measured-postgres-connect.json", read(t, "measured-postgres-connect.json")}
		},
	},
}

func TestCompareGolden(t *testing.T) {
	for name, cc := range compareCases {
		t.Run(name, func(t *testing.T) {
			var got bytes.Buffer
			if err := CompareText(&got, Compare(cc.old(t), cc.new(t))); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "compare-"+name+".golden"), got.Bytes())
		})
	}
}

// golden compares got with the file, or rewrites the file with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test ./internal/report -update rewrites it):\n%s", path, got)
	}
}

// significant lists the rows of a comparison whose change is significant,
// as "title variant c".
func significant(c *Comparison) []string {
	var out []string
	for _, f := range c.Tables {
		for _, r := range f.Rows {
			if r.Delta.Significant {
				out = append(out, f.Title+" | "+r.Variant)
			}
		}
	}
	return out
}

func TestCompareFlags2x(t *testing.T) {
	cc := compareCases["2x"]
	c := Compare(cc.old(t), cc.new(t))
	for _, f := range c.Tables {
		for _, r := range f.Rows {
			halved := r.Variant == "tls1.3 rsa2048"
			switch {
			case strings.HasPrefix(f.Title, "connections/s") && halved:
				if !r.Delta.Significant || math.Abs(r.Delta.Pct+50) > 0.5 {
					t.Errorf("%s c=%d: %+v, want a significant -50%%", r.Variant, r.Concurrency, r.Delta)
				}
			case strings.HasSuffix(f.Title, "CPU, µs/op") && halved:
				if !r.Delta.Significant || math.Abs(r.Delta.Pct-100) > 1 {
					t.Errorf("%s %s c=%d: %+v, want a significant +100%%", f.Title, r.Variant, r.Concurrency, r.Delta)
				}
			case r.Delta.Significant || r.Delta.Pct != 0:
				t.Errorf("%s %s c=%d: %+v, want no change", f.Title, r.Variant, r.Concurrency, r.Delta)
			}
		}
	}
}

func TestCompareSameConfig(t *testing.T) {
	for _, name := range []string{"rerun", "halves"} {
		cc := compareCases[name]
		c := Compare(cc.old(t), cc.new(t))
		if len(c.Tables) == 0 {
			t.Fatalf("%s: nothing compared", name)
		}
		for _, s := range significant(c) {
			// The throughput of a re-run must never differ.
			if !strings.Contains(s, "µs/op") && !strings.Contains(s, "latency") {
				t.Errorf("%s: %s flagged as significant", name, s)
			}
		}
		if name == "rerun" && len(significant(c)) > 0 {
			t.Errorf("rerun: %v flagged as significant", significant(c))
		}
		if len(c.Differences) > 0 {
			t.Errorf("%s: differences %v in the same config", name, c.Differences)
		}
	}
}

func TestCompareMismatch(t *testing.T) {
	cc := compareCases["mismatch"]
	c := Compare(cc.old(t), cc.new(t))
	want := []string{"target (builtin vs lab:postgres)", "workload (none vs point-select)", "duration (10m0s vs 2s)"}
	for _, w := range want {
		if !strings.Contains(strings.Join(c.Differences, ", "), w) {
			t.Errorf("differences %q lack %q", c.Differences, w)
		}
	}
	if len(c.Only) == 0 {
		t.Error("no variant listed as only in one run")
	}
}

func TestCompareDeterministic(t *testing.T) {
	cc := compareCases["2x"]
	var a, b bytes.Buffer
	CompareText(&a, Compare(cc.old(t), cc.new(t)))
	CompareText(&b, Compare(cc.old(t), cc.new(t)))
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two renderings differ")
	}
}
