package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
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
	labtest.Slow(t)
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

// TestOutputPath checks -o before anything is measured: a FIFO, a
// directory, a missing directory and /proc are refused at once (exit 2,
// nothing written, the FIFO still a FIFO), and a symlink is written
// through, not replaced.
func TestOutputPath(t *testing.T) {
	labtest.Slow(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, want string }{
		{fifo, "is a named pipe"},
		{dir, "it is a directory"},
		{filepath.Join(dir, "missing", "r.json"), "does not exist"},
		{"/proc/r.json", "cannot create files in /proc"},
	} {
		start := time.Now()
		code, _, stderr := runMain(t, "connect", "builtin", "-o", tt.path)
		if code != 2 || !strings.Contains(stderr, tt.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("-o %s: exit %d, %q; want 2 and one line with %q", tt.path, code, stderr, tt.want)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("-o %s: refused after %v: the run started first", tt.path, took)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi.Mode(), err)
	}
	target := filepath.Join(dir, "real.json")
	link := filepath.Join(dir, "link.json")
	os.WriteFile(target, nil, 0o644)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runMain(t, "connect", "builtin", "--tls", "off", "-n", "5", "--trials", "1", "-o", link); code != 0 {
		t.Fatalf("-o symlink: exit %d: %s", code, stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v", err)
	}
	if _, err := result.Read(target); err != nil {
		t.Errorf("nothing written through the symlink: %v", err)
	}
}

// TestOutputFallback removes the result's directory while a run is under
// way: the tables are printed all the same, the result goes to a fallback
// file in TMPDIR that the error names, and the exit is 1.
func TestOutputFallback(t *testing.T) {
	labtest.Slow(t)
	tmp, dir := t.TempDir(), t.TempDir()
	out := filepath.Join(dir, "sub", "r.json")
	os.Mkdir(filepath.Dir(out), 0o755)
	cmd := exec.Command(os.Args[0], "connect", "builtin", "--tls", "off", "-d", "300ms", "--trials", "8", "-o", out)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	os.RemoveAll(filepath.Dir(out))
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit %d, want 1; stderr %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "connect: connections/s") {
		t.Errorf("no tables printed:\n%s", stdout.String())
	}
	saved, _ := filepath.Glob(filepath.Join(tmp, "tlsbench-*.json"))
	if len(saved) != 1 || !strings.Contains(stderr.String(), "the result is in "+saved[0]+" instead") {
		t.Fatalf("fallback files %v; stderr %s", saved, stderr.String())
	}
	if r, err := result.Read(saved[0]); err != nil || len(r.Trials) != 8 {
		t.Errorf("the fallback result: %v", err)
	}
}
