package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// measured is a stored result of the report package's tests.
var measured = filepath.Join("..", "report", "testdata", "measured-connect.json")

// TestReportFiles writes the HTML page and the charts of a stored result.
func TestReportFiles(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	pngs, svgs := filepath.Join(dir, "png"), filepath.Join(dir, "svg", "new")
	code, stdout, stderr := runMain(t, "report", measured, "--html", page, "--png", pngs, "--svg", svgs)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("the tables were printed without --format:\n%.300s", stdout)
	}
	for _, want := range []string{"report: " + page, "charts: 4 png files in " + pngs, "charts: 4 svg files in " + svgs} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `<figure class="chart" id="chart-connect-phases">`) || !strings.Contains(string(html), "Recommendations") {
		t.Errorf("%s is not the report page", page)
	}
	for _, f := range []string{filepath.Join(pngs, "connect-rate-c1.png"), filepath.Join(svgs, "connect-phases.svg")} {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}

	// --format prints the tables beside the files.
	code, stdout, stderr = runMain(t, "report", measured, "--format", "csv", "--html", page)
	if code != 0 || !strings.HasPrefix(stdout, "experiment,variant,") {
		t.Errorf("--format csv --html: exit %d, stdout %.100q, stderr %s", code, stdout, stderr)
	}
}

// TestReportFileErrors checks that a path that cannot be written gives one
// clear line and exit 1.
func TestReportFileErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"html into a missing directory", []string{"--html", filepath.Join(dir, "missing", "r.html")},
			"writing the HTML report to " + filepath.Join(dir, "missing", "r.html") + ": no such file or directory"},
		{"html onto a directory", []string{"--html", dir}, "writing the HTML report to " + dir + ": it is a directory"},
		{"png into a file", []string{"--png", file}, "writing charts into " + file + ": not a directory"},
		{"svg under a file", []string{"--svg", filepath.Join(file, "charts")}, "writing charts into " + filepath.Join(file, "charts") + ": not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runMain(t, append([]string{"report", measured}, tt.args...)...)
			if code != exitFailed {
				t.Errorf("exit %d, want %d", code, exitFailed)
			}
			if want := "tlsbench: " + tt.want + "\n"; stderr != want {
				t.Errorf("stderr %q, want %q", stderr, want)
			}
		})
	}
}

// TestReportRunWritesHTML checks that a run writes its HTML page beside
// its result file and names both.
func TestReportRunWritesHTML(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run.json")
	code, _, stderr := runMain(t, "connect", "builtin", "--tls", "off,1.3", "--key", "ecdsa-p256", "-n", "20", "--trials", "2", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	page := strings.TrimSuffix(out, ".json") + ".html"
	if !strings.Contains(stderr, "result: "+out+"\n") || !strings.Contains(stderr, "report: "+page+"\n") {
		t.Errorf("stderr does not name the result and the page:\n%s", stderr)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tls1.3 ecdsa-p256", `id="chart-connect-rate-c1"`, `id="chart-connect-phases"`} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
