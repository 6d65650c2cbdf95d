package driver

import (
	"errors"
	"testing"
)

// TestKinds: every kind of answer is one mark that errors.Is finds, the
// message stays the error's own, and a refusal's line is its Why if it
// has one.
func TestKinds(t *testing.T) {
	base := errors.New("FATAL: no pg_hba.conf entry")
	tests := []struct {
		name      string
		err       error
		is, isNot []error
		why       string
	}{
		{"source", Mark(base, ErrSourceRefused), []error{ErrSourceRefused, base}, []error{ErrRefused, ErrMissingData}, ""},
		{"refusal with why", Mark(base, ErrSourceRefused, Refusal{"plaintext refused"}), []error{ErrSourceRefused, ErrRefused, base}, []error{ErrMissingData}, "plaintext refused"},
		{"refused", Refused(base, "no TLS here"), []error{ErrRefused, base}, []error{ErrSourceRefused}, "no TLS here"},
		{"refused kind alone", Mark(base, ErrRefused), []error{ErrRefused}, nil, base.Error()},
		{"no kind", Mark(base, nil), []error{base}, []error{ErrRefused, ErrSourceRefused, ErrMissingData}, ""},
		// A TLS port closing on plaintext (FerretDB's) and a plaintext port
		// closing on a ClientHello refuse the variant's kind of connection.
		{"closed on plaintext", ClosedOnPlaintext(base, Config{Addr: "127.0.0.1:1"}, "use tls=true"), []error{ErrRefused, base}, nil, ""},
		{"closed on TLS", ClosedOnTLS(base, Config{Addr: "127.0.0.1:1"}), []error{ErrRefused, base}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range tt.is {
				if !errors.Is(tt.err, k) {
					t.Errorf("%v: not of the kind %v", tt.err, k)
				}
			}
			for _, k := range tt.isNot {
				if errors.Is(tt.err, k) {
					t.Errorf("%v: of the kind %v", tt.err, k)
				}
			}
			if tt.why != "" {
				if got := Why(tt.err); got != tt.why {
					t.Errorf("Why = %q, want %q", got, tt.why)
				}
				if tt.name != "refused" && tt.err.Error() != base.Error() {
					t.Errorf("message %q, want the error's own %q", tt.err, base)
				}
			}
		})
	}
	if Mark(nil, ErrRefused) != nil {
		t.Error("Mark(nil) is not nil")
	}
}
