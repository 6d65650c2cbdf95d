package plan

import (
	"slices"
	"strings"
	"testing"
)

// TestNewServe: serve's defaults are plan's (DefaultKey, DefaultSize),
// a given "" listener is none, and its keys and size are checked as a
// run's are.
func TestNewServe(t *testing.T) {
	noHTTP := Serve{}
	noHTTP.Give("http")
	tests := []struct {
		raw  Serve
		want string // "" when accepted
	}{
		{Serve{}, ""},
		{noHTTP, ""},
		{Serve{Keys: []string{"rsa512"}}, `keys: unknown key type "rsa512"`},
		{Serve{Keys: []string{"ed25519", "ed25519"}}, "keys: ed25519 is given twice"},
		{Serve{TLSMax: "1.1"}, `tls_max: "1.1" is not 1.2 or 1.3`},
		{Serve{Size: -1}, "response_size: -1 is out of range"},
		{Serve{Keys: []string{}}, "https needs at least one keys"},
	}
	for _, tt := range tests {
		_, err := NewServe(tt.raw)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("NewServe(%+v): %v", tt.raw, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("NewServe(%+v) = %v, want %q", tt.raw, err, tt.want)
		}
	}
	s, _ := NewServe(Serve{})
	if !slices.Equal(s.Keys, []string{DefaultKey}) || s.Size != DefaultSize || s.HTTP != DefaultServeHTTP || s.HTTPS != DefaultServeHTTPS || s.TLSMax != "1.3" {
		t.Errorf("NewServe(Serve{}) = %+v, want plan's defaults", s)
	}
	if s, _ := NewServe(noHTTP); s.HTTP != "" {
		t.Errorf("--http given empty became %q, want no listener", s.HTTP)
	}
}

// TestNewLab: every engine and key is checked before any starts; sshd has
// none.
func TestNewLab(t *testing.T) {
	tests := []struct {
		raw  Lab
		want string
	}{
		{Lab{Engines: []string{"sshd", "redis"}}, ""},
		{Lab{Engines: []string{"redis", "mysql"}}, "lab mysql: no such lab server"},
		{Lab{Engines: []string{"sshd", "redis"}, Keys: []string{"rsa512"}}, `keys: unknown key type "rsa512"`},
	}
	for _, tt := range tests {
		l, err := NewLab(tt.raw)
		switch {
		case tt.want == "" && (err != nil || !slices.Equal(l.Keys, []string{DefaultKey})):
			t.Errorf("NewLab(%+v) = %+v, %v; want the default key", tt.raw, l, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("NewLab(%+v) = %v, want %q", tt.raw, err, tt.want)
		}
	}
}
