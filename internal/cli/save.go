package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
)

// resultFile is where a run's result goes, settled before the run: a path
// the user named, checked to be writable (a regular file or none, in a
// directory that takes files), or a fresh default name claimed so that no
// other run takes it. A run of an hour must not learn at its end that its
// result cannot be written.
type resultFile struct {
	path    string
	claimed bool // a default name, claimed (result.Create) until discard
	// stream: -o -, a shard's result framed on stdout (merge.go).
	stream bool
}

// openResultFile checks -o FILE (and the page beside it), or claims a
// default name, after sweeping the claims and temporary files of runs that
// were killed before they wrote their result; a bad -o is a usage error.
func openResultFile(output string) (*resultFile, error) {
	if output == "-" {
		return &resultFile{path: "stdout", stream: true}, nil
	}
	if output == "" {
		now := time.Now()
		result.SweepClaims(filepath.Dir(result.DefaultName), now) // best effort: they are hidden
		path, err := result.Create(result.DefaultName, now)
		if err != nil {
			return nil, err
		}
		return &resultFile{path: path, claimed: true}, nil
	}
	for _, p := range []string{output, pageBeside(output)} {
		if err := result.CheckOutput(p); err != nil {
			return nil, usageError{fmt.Errorf("-o: %w", err)}
		}
	}
	return &resultFile{path: output}, nil
}

// discard gives up the claim on a default name: the result is written
// there, or nothing will be.
func (f *resultFile) discard() {
	if f.claimed {
		result.Release(f.path)
	}
}

// save prints a result's tables, writes its file and its HTML page beside
// it, and returns where the result is. If the file cannot be written after
// all (a full disk, a directory removed meanwhile), the result goes to a
// fallback file, named in err. A page that cannot be written is reported
// apart (pageErr), so that the run's own outcome still comes first.
func (f *resultFile) save(res *result.Result, stdout, stderr io.Writer) (where string, pageErr, err error) {
	return f.saveAs(res, (*report.Model).Text, stdout, stderr)
}

// saveAs is save with the tables rendered by render (a --format's).
func (f *resultFile) saveAs(res *result.Result, render func(*report.Model, io.Writer) error, stdout, stderr io.Writer) (where string, pageErr, err error) {
	if f.stream {
		return f.path, nil, writeStream(res, stdout, stderr)
	}
	// The tables first: they are printed whatever happens to the file.
	m := report.Build(res)
	if err := render(m, stdout); err != nil {
		return "", nil, err
	}
	if werr := result.Write(f.path, res); werr != nil {
		fallback, ferr := result.WriteFallback(res)
		if ferr != nil {
			return "", nil, fmt.Errorf("%w; %v", werr, ferr)
		}
		fmt.Fprintf(stderr, "result: %s\n", fallback)
		return fallback, nil, fmt.Errorf("%w: the result is in %s instead", werr, fallback)
	}
	fmt.Fprintf(stderr, "result: %s\n", f.path)
	return f.path, writePage(f.path, m, stderr), nil
}

// finish saves res when kept (it holds figures) and says how the run
// ends: errInterrupted, err with where what it kept (what: "the trials
// that finished") is, or the page's error.
func (f *resultFile) finish(res *result.Result, kept bool, what string, err error, stdout, stderr io.Writer) error {
	var where string
	var pageErr error
	if kept {
		var serr error
		if where, pageErr, serr = f.save(res, stdout, stderr); serr != nil {
			return serr
		}
	}
	switch {
	case res.Interrupted:
		return errInterrupted
	case err != nil && kept:
		return fmt.Errorf("%w (%s are in %s)", err, what, where)
	case err != nil:
		return err
	}
	return pageErr
}

// pageBeside names the HTML page of the result at output: x.json: x.html.
func pageBeside(output string) string {
	if filepath.Ext(output) != ".json" {
		return output + ".html"
	}
	return strings.TrimSuffix(output, ".json") + ".html"
}

// writePage writes the HTML report of a result saved at output next to it
// and names it on stderr.
func writePage(output string, m *report.Model, stderr io.Writer) error {
	path := pageBeside(output)
	if err := m.WriteHTMLFile(path); err != nil {
		return fmt.Errorf("%w (the result is in %s)", err, output)
	}
	fmt.Fprintf(stderr, "report: %s\n", path)
	return nil
}
