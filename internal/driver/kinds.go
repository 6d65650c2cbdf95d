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
	// ErrRefused is the server refusing the kind of connection a variant
	// makes, as configured to: plaintext where it demands TLS (a TLS-only
	// port, PostgreSQL's hostssl, MariaDB's require_secure_transport),
	// TLS where it has none, a TLS version it does not speak. A run
	// leaves out a variant it compares by default that meets one, with a
	// warning (bench's check); asked for by name, it is an error like any
	// other. A Refusal is of this kind and says what was refused.
	ErrRefused = errors.New("the server refuses this kind of connection")
)

// Refusal is the kind ErrRefused with the one line that says what was
// refused (Why), for an error whose own line says more than the refusal
// (a pg_hba.conf line may be missing for the address): mark the error
// with Mark(err, Refusal{why}).
type Refusal struct{ Why string }

func (r Refusal) Error() string { return r.Why }

// Is makes every Refusal of the kind ErrRefused.
func (r Refusal) Is(target error) bool { return target == ErrRefused }

// Why is the line that says what err, of the kind ErrRefused, refused:
// its Refusal's if it has one, else err's own.
func Why(err error) string {
	var r Refusal
	if errors.As(err, &r) && r.Why != "" {
		return r.Why
	}
	return err.Error()
}

// Refused is err of the kind ErrRefused, with the line format and args
// make of it in place of its own message (see Explained).
func Refused(err error, format string, args ...any) error {
	return Mark(Explained(err, format, args...), ErrRefused)
}

// Mark returns err marked as of kinds, of those above (nil ones are
// skipped): errors.Is finds each in it, and its message is err's own.
// Mark(nil, ...) is nil.
func Mark(err error, kinds ...error) error {
	m := &marked{err: err}
	for _, k := range kinds {
		if k != nil {
			m.kinds = append(m.kinds, k)
		}
	}
	if err == nil || len(m.kinds) == 0 {
		return err
	}
	return m
}

type marked struct {
	err   error
	kinds []error
}

func (m *marked) Error() string   { return m.err.Error() }
func (m *marked) Unwrap() []error { return append([]error{m.err}, m.kinds...) }

// Is makes every MissingData of the kind ErrMissingData.
func (e *MissingData) Is(target error) bool { return target == ErrMissingData }
