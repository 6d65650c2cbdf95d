package driver

import "errors"

// Kinds of failure a driver recognises in its server's answer and marks
// with Mark, so that knowing the engine's codes and words stays in the
// driver: the trial engine asks errors.Is(err, kind) for its remedy.
var (
	// ErrSourceRefused is a server that refuses connections from the
	// client's source address (PostgreSQL's pg_hba.conf, a MySQL user's
	// host).
	ErrSourceRefused = errors.New("the server refuses connections from this source address")
	// ErrMissingData is a table the workload reads that is not there (see
	// MissingData, which is of this kind too).
	ErrMissingData = errors.New("the workload's data is missing")
)

// Mark returns err marked as of kind, one of the kinds above: errors.Is
// finds kind in it, and its message is err's own. Mark(nil, kind) is nil.
func Mark(err, kind error) error {
	if err == nil || kind == nil {
		return err
	}
	return &marked{err: err, kind: kind}
}

type marked struct{ err, kind error }

func (m *marked) Error() string   { return m.err.Error() }
func (m *marked) Unwrap() []error { return []error{m.err, m.kind} }

// Is makes every MissingData of the kind ErrMissingData.
func (e *MissingData) Is(target error) bool { return target == ErrMissingData }
