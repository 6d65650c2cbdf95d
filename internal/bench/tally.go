package bench

import (
	"crypto/tls"
	"fmt"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tally"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// workerTally is what one worker counts: the connections' and
// operations' figures (tally.Tally), and what a run adds to them: what
// was negotiated, the failures by kind, and why a worker stopped.
// Workers merge theirs at the end, so the measuring loop takes no lock.
type workerTally struct {
	*tally.Tally
	resumed int64
	errors  map[string]int64
	// samples keeps the first message of each error kind: "query: other"
	// alone does not tell anybody what went wrong.
	samples  map[string]string
	errRun   int // consecutive failures
	firstErr error
	lastErr  error
	// quit says why a worker stopped before its trial's end because its
	// server kept failing, "" if it did not (see GaveUp).
	quit string
	// panicked is set when a worker's operation panicked (a bug, in
	// tlsbench or a driver): the trial is an error, not a figure.
	panicked   error
	negotiated *result.Negotiated
}

func newTally() *workerTally {
	return &workerTally{Tally: tally.New(), errors: map[string]int64{}, samples: map[string]string{}}
}

// fail counts an error; it reports whether the worker should stop.
func (t *workerTally) fail(err error) bool {
	kind := driver.Kind(err)
	t.errors[kind]++
	if _, ok := t.samples[kind]; !ok {
		t.samples[kind] = ErrorSample(err)
	}
	if t.firstErr == nil {
		t.firstErr = err
	}
	t.lastErr = err
	t.errRun++
	return t.errRun >= maxConsecutiveErrors
}

// recordSession counts a session's connection and what it negotiated.
func (t *workerTally) recordSession(s driver.Session) {
	state, ok := s.TLS()
	t.recordConnection(state, ok, s.Conn().ClientHelloBytes())
}

// recordConnection counts one connection and, if it is secure, what it
// negotiated and the size of its ClientHello (0 if unknown).
func (t *workerTally) recordConnection(state tls.ConnectionState, secure bool, hello int) {
	t.Conns++
	if !secure {
		return
	}
	if state.DidResume {
		t.resumed++
	}
	if t.negotiated == nil {
		n := negotiated(state)
		n.ClientHelloBytes = hello
		t.negotiated = &n
	}
}

func (t *workerTally) merge(o *workerTally) {
	t.Tally.Merge(o.Tally)
	t.resumed += o.resumed
	for k, n := range o.errors {
		t.errors[k] += n
	}
	for k, m := range o.samples {
		if _, ok := t.samples[k]; !ok {
			t.samples[k] = m
		}
	}
	if t.firstErr == nil {
		t.firstErr = o.firstErr
	}
	if t.panicked == nil {
		t.panicked = o.panicked
	}
	if o.quit == "" && o.errRun >= maxConsecutiveErrors {
		o.quit = fmt.Sprintf("%d operations in a row failed", o.errRun)
	}
	if t.quit == "" && o.quit != "" {
		t.quit, t.lastErr = o.quit, o.lastErr
	}
	if t.negotiated == nil {
		t.negotiated = o.negotiated
	}
}

// fill writes the tally into a trial; a trial with failures only is an error.
func (t *workerTally) fill(tr *result.Trial) error {
	t.Tally.Fill(tr)
	tr.Resumed = t.resumed
	tr.Negotiated = t.negotiated
	if len(t.errors) > 0 {
		tr.Errors = t.errors
		tr.ErrorSamples = t.samples
	}
	switch {
	case t.panicked != nil:
		return t.panicked
	case t.Ops == 0 && t.firstErr != nil:
		return fmt.Errorf("every operation failed, the first with: %w", t.firstErr)
	case t.Ops == 0:
		return errNoOps
	case t.quit != "":
		var failed int64
		for _, n := range t.errors {
			failed += n
		}
		return &GaveUp{Why: t.quit, Failed: failed, Total: failed + t.Ops, Kind: driver.Kind(t.lastErr), Last: ErrorSample(t.lastErr)}
	}
	return nil
}

// negotiated is what a handshake settled on, as a result records it.
func negotiated(state tls.ConnectionState) result.Negotiated {
	n := tlsx.Describe(state)
	return result.Negotiated{Version: n.Version, Suite: n.Suite, Group: n.Group,
		PeerKey: n.PeerKey, ALPN: n.ALPN, HelloRetry: n.HelloRetry}
}
