package result

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tlsbench/tlsbench/internal/files"
)

// DefaultName is the file name of a run's result when the user names none,
// as a time layout: tlsbench-20260102-150405.json.
const DefaultName = "tlsbench-20060102-150405.json"

// maxLinks bounds the symlinks followed to reach a file, as the kernel does.
const maxLinks = 40

// CheckOutput reports whether a file can be written at path, before a run
// spends minutes measuring: path, after following symlinks (dangling ones
// too), must be a regular file or not exist, in an existing directory this
// process can create files in (proved by creating and removing one, as
// WriteFile will).
func CheckOutput(path string) error {
	target, err := writable(path)
	if errors.Is(err, errIsDir) {
		return fmt.Errorf("cannot write %s: %v: name a file", path, err)
	}
	if err != nil {
		return fmt.Errorf("cannot write %s: %v", path, err)
	}
	dir := filepath.Dir(target)
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot write %s: directory %s does not exist: create it or name a file elsewhere", path, dir)
	case err != nil:
		return fmt.Errorf("cannot write %s: %v", path, cause(err))
	case !fi.IsDir():
		return fmt.Errorf("cannot write %s: %s is not a directory: name a file in a directory", path, dir)
	}
	probe, err := os.CreateTemp(dir, ".tlsbench-check-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: cannot create files in %s (%v): name a file in a directory you can write to", path, dir, cause(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

var errIsDir = errors.New("it is a directory")

// writable resolves path to the file a write should replace and checks
// that it is a regular file or absent. Its errors say what is wrong with
// path, for the caller to name it.
func writable(path string) (string, error) {
	if path == "" {
		return "", errors.New("no file name given: name the file to write")
	}
	if strings.HasSuffix(path, string(filepath.Separator)) {
		return "", fmt.Errorf("it ends in %c, as a directory does: name a file", filepath.Separator)
	}
	// Stat follows what resolve cannot: /dev/stdout's link in /proc to
	// "pipe:[1234]" is a pipe, not a file of that name.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		return "", notRegular(fi.Mode())
	}
	target, err := resolve(path)
	if err != nil {
		return "", err
	}
	switch fi, err := os.Stat(target); {
	case err == nil && fi.IsDir():
		return "", errIsDir
	case err == nil && !fi.Mode().IsRegular():
		return "", notRegular(fi.Mode())
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", cause(err)
	}
	return target, nil
}

// resolve follows the symlinks of path, dangling ones too, to the file a
// write through path reaches; a path that does not exist is its own.
func resolve(path string) (string, error) {
	for range maxLinks {
		// The directory's real path, so that a relative link target
		// with ".." is resolved as the kernel does.
		if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
			path = filepath.Join(dir, filepath.Base(path))
		}
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil // not there (the caller says why), or no link
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", cause(err)
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return "", fmt.Errorf("more than %d symbolic links in a chain: name the file itself", maxLinks)
}

// WriteFile writes data to the file at a path the user named, whole or not
// at all: into a temporary file in the same directory, renamed over the
// target. Symlinks are written through (the file they point to is
// replaced, not the link), and only a regular file is ever replaced: never
// a device, FIFO or directory. An existing file keeps its permissions; a
// new one gets 0644. what names the data in errors ("the HTML report").
func WriteFile(path string, data []byte, what string) error {
	fail := func(err error) error { return fmt.Errorf("writing %s to %s: %w", what, path, cause(err)) }
	target, err := writable(path)
	if err != nil {
		return fail(err)
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(target); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), ".tlsbench-*"+filepath.Ext(target))
	if err != nil {
		return fail(err)
	}
	defer os.Remove(tmp.Name()) // after a failure; renamed away otherwise
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return fail(err)
	}
	// The target may have been swapped since writable looked: look again
	// just before replacing it.
	if fi, err := os.Lstat(target); err == nil && !fi.Mode().IsRegular() {
		return fail(fmt.Errorf("it became %s meanwhile", files.Kind(fi.Mode())))
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fail(err)
	}
	return nil
}

// Create claims the name of a new result file, so that two runs started
// in the same second never share one: pattern is a path whose file name is
// a time layout (DefaultName), formatted with t; when that name is taken,
// -2, -3, ... go before its extension. It returns the path claimed
// (relative if pattern is). The claim is a hidden file beside it
// (.NAME.claim, see claimOf), not the result's own name: a run that is
// SIGKILLed leaves no empty result file behind for `report` to trip on.
// Write the result to the path, then Release it.
func Create(pattern string, t time.Time) (string, error) {
	dir, layout := filepath.Split(pattern)
	name := t.Format(layout)
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for n := 1; n <= 10000; n++ {
		path := dir + name
		if n > 1 {
			path = dir + stem + "-" + strconv.Itoa(n) + ext
		}
		f, err := os.OpenFile(claimOf(path), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("cannot create the result file %s: %v: run tlsbench in a directory you can write to, or name the file with -o", path, cause(err))
		}
		fmt.Fprintf(f, "%d\n", os.Getpid()) // for a reader; the sweep goes by age
		f.Close()
		// A run of this second that has finished released its claim
		// after writing its result.
		if _, err := os.Lstat(path); err == nil {
			os.Remove(claimOf(path))
			continue
		}
		return path, nil
	}
	return "", fmt.Errorf("cannot create the result file: %s and 9999 numbered names beside it are taken: name the file with -o", dir+name)
}

// Release gives up the claim Create made on path: once the result is
// written there, or when none will be.
func Release(path string) error {
	if err := os.Remove(claimOf(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// mine reports whether a file belongs to this process's user.
func mine(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == uint32(os.Geteuid())
}

// claimOf names the hidden file that claims path's name.
func claimOf(path string) string {
	dir, name := filepath.Split(path)
	return dir + "." + name + ".claim"
}

var (
	// claimRE matches the claims of default names, emptyRE the empty
	// files earlier versions claimed them with, tempRE WriteFile's
	// temporary files (of results and their pages) and CheckOutput's
	// probes.
	claimRE = regexp.MustCompile(`^\.tlsbench-[0-9]{8}-[0-9]{6}(-[0-9]+)?\.json\.claim$`)
	emptyRE = regexp.MustCompile(`^tlsbench-[0-9]{8}-[0-9]{6}(-[0-9]+)?\.json$`)
	tempRE  = regexp.MustCompile(`^\.tlsbench-(check-)?[0-9]+(\.json|\.html)?$`)
)

// tempAge is how old a temporary file must be to be swept: a run may be
// writing it still.
const tempAge = time.Minute

// SweepClaims removes from dir what runs killed before they wrote their
// result left there: claims (.NAME.claim) and the empty result files of
// earlier versions made before start, the start of the run sweeping, and
// WriteFile's temporary files made a minute before that. A run still
// going may lose its claim: harmless, as its name's second has passed, so
// no new run can take that name. Only regular files of this user are
// removed. It returns how many.
func SweepClaims(dir string, start time.Time) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	start = start.Truncate(time.Second)
	n := 0
	var errs []error
	for _, e := range entries {
		name := e.Name()
		claim, empty, temp := claimRE.MatchString(name), emptyRE.MatchString(name), tempRE.MatchString(name)
		if !claim && !empty && !temp {
			continue
		}
		path := filepath.Join(dir, name)
		fi, err := os.Lstat(path)
		if err != nil || !fi.Mode().IsRegular() || !mine(fi) {
			continue
		}
		before := start
		if temp {
			before = start.Add(-tempAge)
		}
		if !fi.ModTime().Before(before) || (empty && fi.Size() != 0) {
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// WriteFallback saves r in a new file of its own when writing it where the
// user wanted failed (disk full, directory removed): in os.TempDir(), else
// the working directory, never replacing a file. It returns the path, for a
// message like "could not write X: ...; the result is in Y". The file is
// readable by its owner only, as it may be in a shared directory.
func WriteFallback(r *Result) (string, error) {
	data, err := encode(r)
	if err != nil {
		return "", err
	}
	name := "tlsbench-result-*.json"
	if !r.Started.IsZero() {
		name = r.Started.Format("tlsbench-20060102-150405-*.json")
	}
	var failed []string
	for _, dir := range []string{os.TempDir(), "."} {
		path, err := writeNew(dir, name, data)
		if err == nil {
			return path, nil
		}
		failed = append(failed, fmt.Sprintf("%s: %v", dir, cause(err)))
	}
	return "", fmt.Errorf("cannot save the result anywhere (%s): free some space or fix the permissions and re-run", strings.Join(failed, "; "))
}

// writeNew writes data to a new file in dir named by pattern (as
// os.CreateTemp takes it), removing it if the write fails.
func writeNew(dir, pattern string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// cause strips the operation and path that os errors repeat, so that an
// error names the user's path once.
func cause(err error) error {
	var pe *os.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}

func notRegular(m fs.FileMode) error {
	return fmt.Errorf("it is %s, not a regular file: name a new file or a regular one", files.Kind(m))
}
