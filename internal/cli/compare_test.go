package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportAndCompare runs report --format and compare on the report
// package's stored result files.
func TestReportAndCompare(t *testing.T) {
	data := filepath.Join("..", "report", "testdata")
	connect := filepath.Join(data, "measured-connect.json")
	pool := filepath.Join(data, "measured-pool.json")
	notResult := filepath.Join(t.TempDir(), "x.json")
	os.WriteFile(notResult, []byte(`{"hello":1}`), 0o644)
	golden := func(name string) string {
		b, err := os.ReadFile(filepath.Join(data, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // exact, if set
		want   string // in stdout (code 0) or stderr
	}{
		{"text by default", []string{"report", connect}, 0, golden("measured-connect.golden"), ""},
		{"text", []string{"report", "--format", "text", pool}, 0, golden("measured-pool.golden"), ""},
		{"csv", []string{"report", "--format", "csv", pool}, 0, golden("measured-pool.csv.golden"), ""},
		{"json", []string{"report", "--format=json", pool}, 0, golden("measured-pool.json.golden"), ""},
		{"bad format", []string{"report", "--format", "xml", pool}, 2, "", `--format: unknown format "xml": use text, csv or json`},
		{"compare", []string{"compare", connect, connect}, 0, "", "connect: connections/s, mean ±95% CI"},
		{"compare different specs", []string{"compare", connect, pool}, 0, "", "note: the runs differ in"},
		{"compare one file", []string{"compare", connect}, 2, "", "compare takes two result files, OLD and NEW, got 1 arguments"},
		{"compare no result", []string{"compare", connect, notResult}, 1, "", "is not a tlsbench result file"},
		{"compare nothing", []string{"compare", "/nonexistent.json", connect}, 2, "", "no such result file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tt.code, stderr)
			}
			if tt.stdout != "" && stdout != tt.stdout {
				t.Errorf("stdout differs from the golden file:\n%s", stdout)
			}
			where := stdout
			if code != 0 {
				where = stderr
				if strings.Count(stderr, "\n") != 1 || stdout != "" {
					t.Errorf("want one line on stderr and nothing on stdout, got %q and %q", stderr, stdout)
				}
			}
			if !strings.Contains(where, tt.want) {
				t.Errorf("output lacks %q:\n%s", tt.want, where)
			}
		})
	}
}
