// Package files reads the local files a user names (CA and certificate
// files, keys, known_hosts, scripts, result files) with a size bound, so
// that /dev/zero, a FIFO or a directory is one clear error, not a hang or
// the OOM killer.
package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Size bounds for the kinds of file tlsbench reads.
const (
	// MaxPEM bounds certificates, CA bundles, private keys and
	// known_hosts files: a large CA bundle is a few hundred KiB.
	MaxPEM = 4 << 20
	// MaxScript bounds a workload script or a body file.
	MaxScript = 16 << 20
	// MaxResult bounds a result file: a long run with histograms for
	// every trial is tens of MiB.
	MaxResult = 1 << 30
)

// ErrNotFile is in the chain of every error Read returns for a path that
// is no regular file or is too large: the user named the wrong thing.
var ErrNotFile = errors.New("not a regular file of a sensible size")

// notFile is an error of the user's path, with ErrNotFile in its chain.
type notFile struct{ msg string }

func (e *notFile) Error() string        { return e.msg }
func (e *notFile) Is(target error) bool { return target == ErrNotFile }

func notFilef(format string, args ...any) error { return &notFile{fmt.Sprintf(format, args...)} }

// Read returns the contents of the regular file at path (symlinks are
// followed), refusing devices, FIFOs, directories and files over limit
// bytes. what names the file in errors ("--ca", "result file").
func Read(path, what string, limit int64) ([]byte, error) {
	if err := regular(path, what, limit); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	// Stat the open file too: the path may have been swapped since.
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, notFilef("%s %s is not a regular file: give the path of a file", what, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(path, what, limit)
	}
	return data, nil
}

// regular checks, without opening it (opening a FIFO blocks), that path is
// a regular file of at most limit bytes.
func regular(path, what string, limit int64) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	case fi.IsDir():
		return notFilef("%s %s is a directory: give the path of a file", what, path)
	case !fi.Mode().IsRegular():
		return notFilef("%s %s is not a regular file (%s): give the path of a file", what, path, Kind(fi.Mode()))
	case fi.Size() > limit:
		return tooLarge(path, what, limit)
	}
	return nil
}

func tooLarge(path, what string, limit int64) error {
	return notFilef("%s %s is larger than %d MiB: is it the right file?", what, path, limit>>20)
}

// Kind names a file type that is not a regular file, with its article,
// for errors: "a named pipe", "a character device".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}
