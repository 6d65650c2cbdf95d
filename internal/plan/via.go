package plan

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Route kinds, as --via names them: how connections reach the server.
const (
	RouteDirect  = "direct"  // the driver's own TCP connection, with or without TLS
	RouteSSH     = "ssh"     // a channel of one SSH connection per variant (ssh -L)
	RouteStunnel = "stunnel" // plaintext into a local stunnel, TLS between stunnels
)

// SSHCiphers are the ciphers an SSH tunnel can be asked for: what
// golang.org/x/crypto/ssh implements and OpenSSH's sshd offers. The seed's
// aes256-cbc is not among them: no maintained Go SSH library has it;
// aes128-cbc is the nearest.
var SSHCiphers = []string{
	"aes128-ctr", "aes192-ctr", "aes256-ctr",
	"aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
	"aes128-cbc",
}

// Route is one way connections reach the server.
type Route struct {
	Kind string
	// URL is the SSH server and login for --via ssh://...; nil for the
	// throw-away sshd tlsbench starts ("ssh", "ssh:CIPHER").
	URL *url.URL
	// Cipher is the only SSH cipher offered; "" for the library's order.
	Cipher string
}

// ParseRoute reads one --via entry: direct, stunnel, ssh, ssh:CIPHER or
// ssh://[user[:password]@]host[:port][?cipher=C&identity=FILE&known_hosts=FILE].
func ParseRoute(raw string) (Route, error) {
	switch {
	case raw == RouteDirect || raw == RouteStunnel:
		return Route{Kind: raw}, nil
	case raw == RouteSSH:
		return Route{Kind: RouteSSH}, nil
	case strings.HasPrefix(raw, "ssh://"):
		u, err := parseURL("⟨via⟩", raw)
		if err != nil {
			return Route{}, err
		}
		if err := checkHost("⟨via⟩", u, "ssh"); err != nil {
			return Route{}, err
		}
		for k := range u.Query() {
			if !slices.Contains([]string{"cipher", "identity", "known_hosts"}, k) {
				return Route{}, errorf("⟨via⟩ %s: unknown parameter %q: use cipher, identity or known_hosts", Redact(raw), k)
			}
		}
		v := Route{Kind: RouteSSH, URL: u, Cipher: u.Query().Get("cipher")}
		return v, v.checkCipher()
	case strings.HasPrefix(raw, "ssh:"):
		v := Route{Kind: RouteSSH, Cipher: strings.TrimPrefix(raw, "ssh:")}
		return v, v.checkCipher()
	}
	way := "⟨via⟩"
	if plainWord(raw) {
		way += " " + raw
	}
	return Route{}, errorf("%s: unknown way: use direct, ssh, ssh:CIPHER, ssh://user@host:port or stunnel", way)
}

// plainWord reports whether s is a word that may be echoed in an error:
// letters, digits, '.', '_' and '-' only (no ':' or '@' of a login), short.
func plainWord(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (v Route) checkCipher() error {
	if v.Cipher != "" && !slices.Contains(SSHCiphers, v.Cipher) {
		hint := ""
		if strings.HasSuffix(v.Cipher, "-cbc") {
			hint = " (golang.org/x/crypto/ssh implements aes128-cbc only)"
		}
		name := ""
		if plainWord(v.Cipher) {
			name = fmt.Sprintf(" %q", v.Cipher)
		}
		return errorf("⟨via⟩: unknown SSH cipher%s%s: use one of %s", name, hint, strings.Join(SSHCiphers, ", "))
	}
	return nil
}

// Label names the way in variant IDs: "" (direct), "ssh", "ssh aes256-ctr",
// "stunnel".
func (v Route) Label() string {
	switch {
	case v.Kind == RouteDirect:
		return ""
	case v.Kind == RouteSSH && v.Cipher != "":
		return "ssh " + v.Cipher
	}
	return v.Kind
}

// Tunnel returns the --via entry a variant's Via label came from, as given
// (credentials and all).
func (s Spec) Tunnel(label string) (Route, error) {
	for _, raw := range s.via() {
		v, err := ParseRoute(raw)
		if err == nil && v.Label() == label {
			return v, nil
		}
	}
	return Route{}, fmt.Errorf("no --via entry for %q", label)
}

// via is the --via list as given, direct when empty.
func (s Spec) via() []string {
	switch {
	case len(s.secretVia) > 0:
		return s.secretVia
	case len(s.Via) > 0:
		return s.Via
	}
	return []string{RouteDirect}
}

// checkVia validates --via against the target and keeps the entries as given
// apart from their redacted form.
func (s *Spec) checkVia(t Target) error {
	seen := map[string]bool{}
	for _, raw := range s.Via {
		v, err := ParseRoute(raw)
		if err != nil {
			return err
		}
		if seen[v.Label()] {
			return errorf("⟨via⟩ %s: given twice (tunnels of one kind are told apart by cipher)", Redact(raw))
		}
		seen[v.Label()] = true
		if v.Kind == RouteStunnel {
			if t.Lab == "" && !t.Builtin {
				return errorf("⟨via⟩ stunnel puts stunnel before a server tlsbench starts: use ⟨lab⟩ ENGINE or the built-in server")
			}
			if slices.ContainsFunc(s.RTT, func(r time.Duration) bool { return r != 0 }) {
				return errorf("⟨via⟩ stunnel with ⟨rtt⟩: stunnel makes its own connections, which tlsbench cannot delay: measure stunnel at ⟨rtt⟩ 0")
			}
		}
	}
	s.secretVia = s.Via
	s.Via = make([]string, len(s.secretVia))
	for i, raw := range s.secretVia {
		s.Via[i] = Redact(raw)
	}
	return nil
}
