package plan

import (
	"fmt"
	"maps"
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
	// Intermediaries the lab starts between the client and the server; each
	// registers its parsing and variants in routeKinds from its own file.
	RoutePgbouncer = "pgbouncer" // PgBouncer, TLS from the client terminated there
	RouteHAProxy   = "haproxy"   // HAProxy terminating TLS before a plaintext server
	RouteOpenSSH   = "openssh"   // OpenSSH's own client: ssh -N -L
	RouteWireGuard = "wireguard" // wireguard-go between two network namespaces
)

// OpenSSHCiphers are the ciphers OpenSSH 9's ssh and sshd implement, the
// seed's aes256-cbc among them (sshd offers the CBC ones only when asked).
var OpenSSHCiphers = []string{
	"aes128-ctr", "aes192-ctr", "aes256-ctr",
	"aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
	"aes128-cbc", "aes192-cbc", "aes256-cbc", "3des-cbc",
}

// routeKind is a --via kind registered by its own file: how an entry
// "KIND[:ARG][?NAME=VALUE&...]" is checked, and the variants that go
// through it.
type routeKind struct {
	// usage spells the entry for the unknown-way error: "pgbouncer[:local]".
	usage string
	// parse checks r.Arg and r.Params (nil: neither is allowed).
	parse func(r *Route) error
	// check refuses, before anything starts, a combination with the
	// target or the rest of the spec that cannot work (nil: none).
	check func(r Route, s *Spec, t Target) error
	// variants are the variants through r, their Tunnel set by the caller.
	variants func(r Route, s Spec) []Variant
}

// routeKinds holds the registered kinds by name.
var routeKinds = map[string]routeKind{}

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
	// Arg and Params are a registered kind's "KIND:ARG?NAME=VALUE&..."
	// (see routeKinds); Label shows both.
	Arg    string
	Params url.Values
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
	if r, ok, err := parseKind(raw); ok {
		return r, err
	}
	way := "⟨via⟩"
	if plainWord(raw) {
		way += " " + raw
	}
	uses := []string{"direct", "ssh", "ssh:CIPHER", "ssh://user@host:port", "stunnel"}
	for _, k := range slices.Sorted(maps.Keys(routeKinds)) {
		uses = append(uses, routeKinds[k].usage)
	}
	return Route{}, errorf("%s: unknown way: use %s or %s", way, strings.Join(uses[:len(uses)-1], ", "), uses[len(uses)-1])
}

// parseKind reads an entry of a registered kind; ok is false when raw
// names none.
func parseKind(raw string) (r Route, ok bool, err error) {
	head, query, hasQuery := strings.Cut(raw, "?")
	kind, arg, _ := strings.Cut(head, ":")
	k, ok := routeKinds[kind]
	if !ok {
		return Route{}, false, nil
	}
	r = Route{Kind: kind, Arg: arg}
	if hasQuery {
		if r.Params, err = url.ParseQuery(query); err != nil {
			return Route{}, true, errorf("⟨via⟩ %s: %v", kind, err)
		}
	}
	if k.parse == nil {
		if arg != "" || hasQuery {
			return Route{}, true, errorf("⟨via⟩ %s takes no arguments: use %s", kind, k.usage)
		}
		return r, true, nil
	}
	return r, true, k.parse(&r)
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
// "stunnel", "pgbouncer local pool_mode=transaction".
func (v Route) Label() string {
	switch {
	case v.Kind == RouteDirect:
		return ""
	case v.Kind == RouteSSH && v.Cipher != "":
		return "ssh " + v.Cipher
	}
	parts := []string{v.Kind}
	if v.Arg != "" {
		parts = append(parts, v.Arg)
	}
	for _, name := range slices.Sorted(maps.Keys(v.Params)) {
		parts = append(parts, name+"="+strings.Join(v.Params[name], ","))
	}
	return strings.Join(parts, " ")
}

// StartsServer reports whether the route goes through something tlsbench
// starts (the lab's sshd, stunnel, a pooler, a proxy, a VPN): every kind
// but direct and the user's own SSH server (ssh://).
func (v Route) StartsServer() bool { return v.Kind != RouteDirect && v.URL == nil }

// RouteInfo is a route as a variant records it (Variant.Route): its kind,
// argument and settings, which tell the entries of a run apart, and never
// a secret. An ssh:// URL's login, host and files are left out: it
// records as the lab's "ssh" or "ssh:CIPHER" does. The zero RouteInfo is
// direct. It is comparable, so that variants are.
type RouteInfo struct {
	Kind string `json:"kind"`
	// Arg is KIND:ARG's argument: an SSH cipher (ssh:CIPHER, or an
	// ssh:// URL's ?cipher=), openssh's cipher, pgbouncer's "local".
	Arg string `json:"arg,omitempty"`
	// Params are KIND?NAME=VALUE&...'s settings (pgbouncer's), URL-encoded
	// with the names sorted.
	Params string `json:"params,omitempty"`
}

// Info is the route as a variant records it; zero for direct.
func (v Route) Info() RouteInfo {
	switch v.Kind {
	case RouteDirect:
		return RouteInfo{}
	case RouteSSH:
		return RouteInfo{Kind: RouteSSH, Arg: v.Cipher}
	}
	return RouteInfo{Kind: v.Kind, Arg: v.Arg, Params: v.Params.Encode()}
}

// Route is the route r records, without what it leaves out (an ssh://
// URL): enough for its Label and a kind's settings (PgbouncerOf). A
// recorded Params that does not decode is left out.
func (r RouteInfo) Route() Route {
	switch r.Kind {
	case "", RouteDirect:
		return Route{Kind: RouteDirect}
	case RouteSSH:
		return Route{Kind: RouteSSH, Cipher: r.Arg}
	}
	out := Route{Kind: r.Kind, Arg: r.Arg}
	if r.Params != "" {
		out.Params, _ = url.ParseQuery(r.Params)
	}
	return out
}

// Routes are the --via entries as New parsed them, secrets included (an
// ssh:// URL's password); [direct] when none was given. Never print or
// store them: a variant records its own as Variant.Route.
func (s Spec) Routes() []Route {
	if len(s.routes) == 0 {
		return []Route{{Kind: RouteDirect}}
	}
	return s.routes
}

// checkVia validates --via against the target and keeps the entries
// parsed, secrets included, apart from their redacted form.
func (s *Spec) checkVia(t Target) error {
	seen := map[string]bool{}
	routes := make([]Route, 0, len(s.Via))
	for _, raw := range s.Via {
		v, err := ParseRoute(raw)
		if err != nil {
			return err
		}
		if seen[v.Label()] {
			return errorf("⟨via⟩ %s: given twice (tunnels of one kind are told apart by cipher)", Redact(raw))
		}
		seen[v.Label()] = true
		routes = append(routes, v)
		if k, ok := routeKinds[v.Kind]; ok && k.check != nil {
			if err := k.check(v, s, t); err != nil {
				return err
			}
		}
		if v.Kind == RouteStunnel {
			if t.Lab == "" && !t.Builtin {
				return errorf("⟨via⟩ stunnel puts stunnel before a server tlsbench starts: use ⟨lab⟩ ENGINE or the built-in server")
			}
			if slices.ContainsFunc(s.RTT, func(r time.Duration) bool { return r != 0 }) {
				return errorf("⟨via⟩ stunnel with ⟨rtt⟩: stunnel makes its own connections, which tlsbench cannot delay: measure stunnel at ⟨rtt⟩ 0")
			}
		}
	}
	s.routes, s.Via = routes, redactAll(s.Via)
	return nil
}

// redactAll returns Redact of each of list, nil for nil (a list given
// empty is refused, not the default: see checkGiven).
func redactAll(list []string) []string {
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = Redact(v)
	}
	return out
}
