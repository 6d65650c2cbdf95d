package result

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// sample is a small valid result.
func sample() *Result {
	r := New()
	r.Started = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	r.Variants = append(r.Variants, variant("plain"))
	r.Trials = []Trial{{Experiment: "connect", Variant: "plain", Concurrency: 1, Elapsed: time.Second, Ops: 10, Conns: 10}}
	return r
}

func variant(id string) plan.Variant { return plan.Variant{ID: id, TLS: "off", Baseline: true} }

// isFIFO reports whether path is still a named pipe.
func isFIFO(t *testing.T, path string) bool {
	t.Helper()
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&fs.ModeNamedPipe != 0
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
}

func symlink(t *testing.T, dest, link string) {
	t.Helper()
	if err := os.Symlink(dest, link); err != nil {
		t.Fatal(err)
	}
}

// TestCheckOutput checks the paths a run may and may not write to, before
// it runs. /dev/null is only checked, never written: this runs as root on
// shared machines.
func TestCheckOutput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "old.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	symlink(t, file, filepath.Join(dir, "link.json"))
	symlink(t, filepath.Join(dir, "new.json"), filepath.Join(dir, "dangling.json"))
	symlink(t, filepath.Join(dir, "nodir", "x.json"), filepath.Join(dir, "dangling-nodir.json"))
	symlink(t, fifo, filepath.Join(dir, "fifo-link"))
	symlink(t, "/dev/null", filepath.Join(dir, "null-link"))
	symlink(t, "loop", filepath.Join(dir, "loop"))
	for _, tt := range []struct {
		path, want string // want: "" for no error, else a part of it
	}{
		{file, ""},
		{filepath.Join(dir, "new.json"), ""},
		{filepath.Join(dir, "link.json"), ""},
		{filepath.Join(dir, "dangling.json"), ""},
		{"relative.json", ""},
		{dir, "is a directory: name a file"},
		{dir + "/", "as a directory does"},
		{"", "no file name"},
		{"/dev/null", "is a character device, not a regular file"},
		{filepath.Join(dir, "null-link"), "character device"},
		{fifo, "named pipe"},
		{filepath.Join(dir, "fifo-link"), "named pipe"},
		{filepath.Join(dir, "loop"), "symbolic links in a chain"},
		{filepath.Join(dir, "missing", "r.json"), "directory " + filepath.Join(dir, "missing") + " does not exist"},
		{filepath.Join(dir, "dangling-nodir.json"), "does not exist"},
		{filepath.Join(file, "r.json"), "not a directory"},
		{"/proc/tlsbench-test.json", "cannot create files in /proc"},
	} {
		err := CheckOutput(tt.path)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckOutput(%q) = %v, want nil", tt.path, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckOutput(%q) = %v, want an error containing %q", tt.path, err, tt.want)
		case err != nil && (!strings.Contains(err.Error(), tt.path) || strings.Contains(err.Error(), "\n")):
			t.Errorf("CheckOutput(%q) = %v: want one line naming the path", tt.path, err)
		}
	}
	if _, err := os.Stat("relative.json"); err == nil {
		t.Error("CheckOutput left relative.json behind")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".tlsbench-*")); len(left) > 0 {
		t.Errorf("CheckOutput left %v", left)
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o500)
		if err := CheckOutput(filepath.Join(ro, "r.json")); err == nil || !strings.Contains(err.Error(), "cannot create files in") {
			t.Errorf("read-only directory: %v", err)
		}
	}
}

// TestWriteThroughSymlinks checks that Write replaces the file a symlink
// points to, never the link, and never anything but a regular file.
func TestWriteThroughSymlinks(t *testing.T) {
	dir := t.TempDir()
	r := sample()

	real := filepath.Join(dir, "real.json")
	os.WriteFile(real, []byte("old"), 0o600)
	link := filepath.Join(dir, "link.json")
	symlink(t, "real.json", link)
	if err := Write(link, r); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v", err)
	}
	if fi, _ := os.Stat(real); fi.Mode().Perm() != 0o600 {
		t.Errorf("the target's mode became %v, want it kept (0600)", fi.Mode().Perm())
	}
	if _, err := Read(real); err != nil {
		t.Errorf("the target does not hold the result: %v", err)
	}

	// A dangling link creates its target; a relative target is resolved
	// from the link's real directory, as the kernel does, also when the
	// link is reached through a symlinked directory.
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	symlink(t, filepath.Join("a", "b"), filepath.Join(dir, "alias"))
	symlink(t, "../made.json", filepath.Join(dir, "a", "b", "dangling.json"))
	if err := Write(filepath.Join(dir, "alias", "dangling.json"), r); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(filepath.Join(dir, "a", "made.json")); err != nil {
		t.Errorf("the dangling link's target was not created: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "a", "made.json")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("a new file: %v, want mode 0644", fi.Mode().Perm())
	}

	// -o /dev/stdout with stdout redirected to a file writes that file.
	out, err := os.Create(filepath.Join(dir, "stdout.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := Write(fmt.Sprintf("/proc/self/fd/%d", out.Fd()), r); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(out.Name()); err != nil {
		t.Errorf("writing through /proc/self/fd: %v", err)
	}

	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	symlink(t, fifo, filepath.Join(dir, "fifo-link"))
	for _, p := range []string{fifo, filepath.Join(dir, "fifo-link")} {
		if err := Write(p, r); err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("Write(%s) = %v, want a named pipe error", p, err)
		}
	}
	if !isFIFO(t, fifo) {
		t.Error("Write replaced a FIFO")
	}
	if err := Write(dir, r); err == nil || err.Error() != "writing the result to "+dir+": it is a directory" {
		t.Errorf("Write(dir) = %v", err)
	}
	missing := filepath.Join(dir, "missing", "r.json")
	if err := Write(missing, r); err == nil || err.Error() != "writing the result to "+missing+": no such file or directory" {
		t.Errorf("Write(missing dir) = %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".tlsbench-*")); len(left) > 0 {
		t.Errorf("Write left %v", left)
	}
}

// TestCreate checks that runs started in the same second claim names of
// their own, with hidden claims and no empty result file, and that a name
// written and released stays taken.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 1, 2, 15, 4, 5, 0, time.Local)
	pattern := filepath.Join(dir, DefaultName)
	var got []string
	for range 3 {
		p, err := Create(pattern, at)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	want := []string{"tlsbench-20260102-150405.json", "tlsbench-20260102-150405-2.json", "tlsbench-20260102-150405-3.json"}
	for i := range want {
		if got[i] != filepath.Join(dir, want[i]) {
			t.Errorf("claim %d: %s, want %s", i+1, got[i], want[i])
		}
		if _, err := os.Lstat(got[i]); err == nil {
			t.Errorf("%s exists before its result is written", got[i])
		}
		if fi, err := os.Stat(filepath.Join(dir, "."+want[i]+".claim")); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s is not claimed: %v", got[i], err)
		}
	}
	if err := CheckOutput(got[0]); err != nil {
		t.Errorf("CheckOutput of a claimed name: %v", err)
	}
	if err := Write(got[0], sample()); err != nil {
		t.Fatal(err)
	}
	if err := Release(got[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(got[0]); err != nil {
		t.Error(err)
	}
	// Written and released: taken still, by the file.
	if p, err := Create(pattern, at); err != nil || p != filepath.Join(dir, "tlsbench-20260102-150405-4.json") {
		t.Errorf("Create after a release = %q, %v", p, err)
	}
	for _, p := range got[1:] {
		Release(p)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.claim")); len(left) != 1 {
		t.Errorf("claims left: %v, want the last one's", left)
	}

	t.Chdir(dir)
	if p, err := Create(DefaultName, at.Add(time.Second)); err != nil || p != "tlsbench-20260102-150406.json" {
		t.Errorf("Create in the working directory = %q, %v", p, err)
	}
	if _, err := Create(filepath.Join(dir, "missing", DefaultName), at); err == nil || !strings.Contains(err.Error(), "cannot create the result file") {
		t.Errorf("Create in a missing directory: %v", err)
	}
}

// TestSweepClaims: claims and empty result files made before the run
// sweeping, and temporary files a minute older, go; results, newer
// claims, other files and a non-empty default name stay.
func TestSweepClaims(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	old, older, recent := start.Add(-2*time.Second), start.Add(-2*time.Minute), start.Add(time.Second)
	files := []struct {
		name, data string
		mtime      time.Time
		gone       bool
	}{
		{".tlsbench-20260102-150405.json.claim", "1\n", old, true},
		{".tlsbench-20260102-150405-2.json.claim", "1\n", recent, false},
		{"tlsbench-20260102-150405-3.json", "", old, true},     // an earlier version's claim
		{"tlsbench-20260102-150405-4.json", "{}", old, false},  // a result
		{"tlsbench-20260102-150405-5.json", "", recent, false}, // a run of now
		{".tlsbench-123456.json", "{", older, true},
		{".tlsbench-123457.html", "<", older, true},
		{".tlsbench-123458.json", "{", old, false}, // a write may still be on
		{"notes.json", "", old, false},
		{".tlsbench-20260102-150405.json.claim.bak", "", old, false},
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, f.mtime, f.mtime); err != nil {
			t.Fatal(err)
		}
	}
	n, err := SweepClaims(dir, start)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, f := range files {
		_, err := os.Lstat(filepath.Join(dir, f.name))
		if gone := err != nil; gone != f.gone {
			t.Errorf("%s: gone %v, want %v", f.name, gone, f.gone)
		}
		if f.gone {
			want++
		}
	}
	if n != want {
		t.Errorf("SweepClaims removed %d, want %d", n, want)
	}
}

// TestReadEmpty: an empty result file (a killed run's, of an earlier
// version) is named as such, not "unexpected end of JSON input".
func TestReadEmpty(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tlsbench-20260102-150405.json")
	os.WriteFile(p, nil, 0o644)
	_, err := Read(p)
	if err == nil || !strings.Contains(err.Error(), "is empty: the run that was to write it was killed before it wrote its result: remove it") {
		t.Errorf("Read of an empty file: %v", err)
	}
}

// TestWriteFallback checks that a result that could not be written where
// asked lands in a new file in the temp directory, else the working one.
func TestWriteFallback(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	r := sample()
	p1, err := WriteFallback(r)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := WriteFallback(r)
	if err != nil {
		t.Fatal(err)
	}
	if p1 == p2 || filepath.Dir(p1) != tmp || !strings.HasPrefix(filepath.Base(p1), "tlsbench-20260102-150405-") {
		t.Errorf("fallbacks %s and %s: want two new files in %s", p1, p2, tmp)
	}
	if _, err := Read(p1); err != nil {
		t.Error(err)
	}

	work := t.TempDir()
	t.Chdir(work)
	t.Setenv("TMPDIR", filepath.Join(tmp, "gone"))
	p, err := WriteFallback(r)
	if err != nil || filepath.Dir(p) != "." {
		t.Fatalf("fallback without a temp directory: %q, %v; want a file in the working directory", p, err)
	}
	if _, err := Read(filepath.Join(work, p)); err != nil {
		t.Error(err)
	}
}

// TestReadFiles checks that Read refuses what is not a regular file of a
// sane size without blocking, and that a missing file is fs.ErrNotExist.
func TestReadFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	for _, tt := range []struct{ path, want string }{
		{"/dev/zero", "character device"},
		{fifo, "named pipe"},
		{dir, "is a directory"},
	} {
		done := make(chan error, 1)
		go func() { _, err := Read(tt.path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Read(%s) = %v, want an error containing %q", tt.path, err, tt.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Read(%s) blocked", tt.path)
		}
	}
	_, err := Read(filepath.Join(dir, "missing.json"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read(missing) = %v, want fs.ErrNotExist", err)
	}
}
