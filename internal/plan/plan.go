// Package plan holds the one configuration type of a run (Spec), its defaults,
// its validation and the expansion of its variant matrix.
package plan

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Experiment names what is measured on each connection.
type Experiment string

// The experiments.
const (
	Connect Experiment = "connect" // open, one request, close
	Pool    Experiment = "pool"    // persistent connections, many requests
)

// Builtin is the Target that asks for the built-in HTTPS/HTTP server.
const Builtin = "builtin"

// Key types the built-in server (and later the lab) can present.
var KeyTypes = []string{"rsa1024", "rsa2048", "rsa4096", "ecdsa-p256", "ecdsa-p384", "ed25519"}

// TLS modes a variant can ask for.
var TLSModes = []string{"off", "1.2", "1.3", "auto"}

// Spec is everything a run needs to know, filled from flags and recorded in
// the result file. Build it with New, which applies defaults and validates.
type Spec struct {
	Experiments []Experiment `json:"experiments"`
	// Target is "builtin" or a URL; URL credentials are removed before the
	// Spec is recorded (see Redacted).
	Target string `json:"target"`

	TLS         []string `json:"tls"`
	Ciphers     []string `json:"ciphers,omitempty"`
	Resume      []bool   `json:"resume"`
	Keys        []string `json:"keys,omitempty"`
	CAFile      string   `json:"ca_file,omitempty"`
	Insecure    bool     `json:"insecure,omitempty"`
	Concurrency []int    `json:"concurrency"`

	// Duration bounds each trial in time; Count, if set, in operations
	// (whichever comes first). Warmup runs before a pool trial, unrecorded.
	Duration time.Duration `json:"duration_ns"`
	Count    int64         `json:"count,omitempty"`
	Warmup   time.Duration `json:"warmup_ns"`
	// Timeout bounds each single operation (connect, request).
	Timeout time.Duration `json:"timeout_ns"`
	Trials  int           `json:"trials"`

	// ResponseSize is the body size the built-in server sends, in bytes.
	ResponseSize int `json:"response_size"`
	// Path is the request path for HTTP targets.
	Path string `json:"path"`
}

// Variant is one way of reaching the target.
type Variant struct {
	ID       string `json:"id"`
	TLS      string `json:"tls"` // off, 1.2, 1.3, auto
	Cipher   string `json:"cipher,omitempty"`
	Resume   bool   `json:"resume,omitempty"`
	Key      string `json:"key,omitempty"`
	Baseline bool   `json:"baseline,omitempty"`
}

// Plain reports whether the variant runs without TLS.
func (v Variant) Plain() bool { return v.TLS == "off" }

// Error is a problem with the Spec: the user's input, not the run.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func errorf(format string, args ...any) error { return &Error{fmt.Sprintf(format, args...)} }

// Default values, shared by flags and New.
const (
	DefaultDuration = 5 * time.Second
	DefaultWarmup   = time.Second
	DefaultTimeout  = 10 * time.Second
	DefaultTrials   = 3
	DefaultSize     = 1024
	// MaxCountDuration bounds a count-limited trial in time, so that no loop
	// runs unbounded against a server that slowed down.
	MaxCountDuration = 10 * time.Minute
)

// New fills defaults into raw, validates it and returns the Spec to run.
func New(raw Spec) (Spec, error) {
	s := raw
	if len(s.Experiments) == 0 {
		s.Experiments = []Experiment{Connect}
	}
	for _, e := range s.Experiments {
		if e != Connect && e != Pool {
			return s, errorf("unknown experiment %q: use connect or pool", e)
		}
	}
	if s.Target == "" {
		s.Target = Builtin
	}
	t, err := ParseTarget(s.Target)
	if err != nil {
		return s, err
	}
	if len(s.TLS) == 0 {
		if t.Builtin {
			s.TLS = []string{"off", "1.2", "1.3"}
		} else if t.Scheme == "https" {
			s.TLS = []string{"auto"}
		} else {
			s.TLS = []string{"off"}
		}
	}
	for _, m := range s.TLS {
		if !slices.Contains(TLSModes, m) {
			return s, errorf("--tls: unknown mode %q: use off, 1.2, 1.3 or auto", m)
		}
		if !t.Builtin && t.Scheme == "http" && m != "off" {
			return s, errorf("--tls %s: %s is plain HTTP: use an https:// URL for TLS", m, t.Redacted)
		}
		if !t.Builtin && t.Scheme == "https" && m == "off" {
			return s, errorf("--tls off: %s is an https:// URL: use an http:// URL for the plain variant", t.Redacted)
		}
	}
	if len(s.Resume) == 0 {
		s.Resume = []bool{false}
	}
	for _, c := range s.Ciphers {
		if _, ok := CipherSuite(c); !ok {
			return s, errorf("--cipher: unknown TLS 1.2 cipher suite %q: use an IANA name such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", c)
		}
	}
	if len(s.Ciphers) > 0 && !slices.Contains(s.TLS, "1.2") {
		return s, errorf("--cipher applies to TLS 1.2 only: add 1.2 to --tls")
	}
	if t.Builtin {
		if len(s.Keys) == 0 {
			s.Keys = []string{"rsa2048"}
		}
		for _, k := range s.Keys {
			if !slices.Contains(KeyTypes, k) {
				return s, errorf("--key: unknown key type %q: use one of %s", k, strings.Join(KeyTypes, ", "))
			}
		}
	} else if len(s.Keys) > 0 {
		return s, errorf("--key applies to the built-in server only: an external server presents its own key, which tlsbench records")
	}
	if s.Insecure && s.CAFile != "" {
		return s, errorf("--ca and --insecure exclude each other: keep --ca to verify the server")
	}
	if len(s.Concurrency) == 0 {
		s.Concurrency = []int{1}
	}
	for _, c := range s.Concurrency {
		if c < 1 || c > 4096 {
			return s, errorf("-c/--concurrency: %d is out of range: use 1 to 4096", c)
		}
	}
	if s.Count < 0 {
		return s, errorf("-n/--count: %d is negative: use a positive count of operations", s.Count)
	}
	if s.Duration < 0 || s.Warmup < 0 || s.Timeout < 0 {
		return s, errorf("durations must not be negative")
	}
	if s.Duration == 0 {
		s.Duration = DefaultDuration
		if s.Count > 0 {
			s.Duration = MaxCountDuration
		}
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.Trials == 0 {
		s.Trials = DefaultTrials
	}
	if s.Trials < 1 || s.Trials > 1000 {
		return s, errorf("--trials: %d is out of range: use 1 to 1000", s.Trials)
	}
	if s.ResponseSize == 0 {
		s.ResponseSize = DefaultSize
	}
	if s.ResponseSize < 0 || s.ResponseSize > 1<<30 {
		return s, errorf("--size: %d is out of range: use 0 to 1 GiB", s.ResponseSize)
	}
	if s.Path == "" {
		s.Path = "/"
		if t.Path != "" {
			s.Path = t.Path
		}
	}
	if len(s.Variants()) == 0 {
		return s, errorf("no variant left: every --cipher excludes every --key (an RSA suite needs an RSA key, an ECDSA suite an ECDSA or Ed25519 key)")
	}
	s.Target = t.Redacted
	return s, nil
}

// Variants expands the matrix: TLS mode × cipher × resumption × key. The plain
// variant appears once, whatever the keys; it is the baseline when present,
// otherwise the first variant is.
func (s Spec) Variants() []Variant {
	var vs []Variant
	keys := s.Keys
	if len(keys) == 0 {
		keys = []string{""}
	}
	for _, mode := range s.TLS {
		if mode == "off" {
			vs = append(vs, Variant{ID: "plain", TLS: "off"})
			continue
		}
		ciphers := []string{""}
		if mode == "1.2" && len(s.Ciphers) > 0 {
			ciphers = s.Ciphers
		}
		for _, key := range keys {
			for _, c := range ciphers {
				if c != "" && key != "" && !suiteFitsKey(c, key) {
					continue
				}
				for _, r := range s.Resume {
					vs = append(vs, Variant{TLS: mode, Cipher: c, Resume: r, Key: key})
				}
			}
		}
	}
	seen := map[string]bool{}
	out := vs[:0]
	for _, v := range vs {
		v.ID = variantID(v)
		if seen[v.ID] {
			continue
		}
		seen[v.ID] = true
		out = append(out, v)
	}
	if len(out) > 0 {
		base := 0
		for i, v := range out {
			if v.Plain() {
				base = i
				break
			}
		}
		out[base].Baseline = true
	}
	return out
}

func variantID(v Variant) string {
	if v.Plain() {
		return "plain"
	}
	parts := []string{"tls" + v.TLS}
	if v.TLS == "auto" {
		parts[0] = "tls-auto"
	}
	if v.Key != "" {
		parts = append(parts, v.Key)
	}
	if v.Cipher != "" {
		parts = append(parts, strings.TrimPrefix(v.Cipher, "TLS_"))
	}
	if v.Resume {
		parts = append(parts, "resume")
	}
	return strings.Join(parts, " ")
}

// CipherSuite looks up a TLS 1.2 cipher suite by its IANA name (the TLS_
// prefix may be left out), including those Go marks insecure, since
// measuring them is a legitimate question.
func CipherSuite(name string) (*tls.CipherSuite, bool) {
	name = strings.ToUpper(name)
	if !strings.HasPrefix(name, "TLS_") {
		name = "TLS_" + name
	}
	for _, list := range [][]*tls.CipherSuite{tls.CipherSuites(), tls.InsecureCipherSuites()} {
		for _, cs := range list {
			if cs.Name == name && slices.Contains(cs.SupportedVersions, tls.VersionTLS12) {
				return cs, true
			}
		}
	}
	return nil, false
}

// suiteFitsKey reports whether a TLS 1.2 suite can be used with a server key.
func suiteFitsKey(suite, key string) bool {
	cs, ok := CipherSuite(suite)
	if !ok {
		return false
	}
	rsaKey := strings.HasPrefix(key, "rsa")
	switch {
	case strings.Contains(cs.Name, "_ECDSA_"):
		return !rsaKey
	case strings.HasPrefix(cs.Name, "TLS_ECDHE_RSA_"), strings.HasPrefix(cs.Name, "TLS_RSA_"):
		return rsaKey
	}
	return true
}

// Target is a parsed target.
type Target struct {
	Builtin  bool
	Scheme   string // http or https
	Host     string // host:port
	Path     string
	Redacted string // the target as it may be printed and stored
}

// ParseTarget parses "builtin" or an http(s) URL.
func ParseTarget(s string) (Target, error) {
	if s == Builtin {
		return Target{Builtin: true, Redacted: Builtin}, nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return Target{}, errorf("target %q is not a URL: use http://host:port/, https://host:port/ or builtin", redactRaw(s))
	}
	switch u.Scheme {
	case "http", "https":
	default:
		return Target{}, errorf("unsupported target scheme %q: use http://, https:// or builtin", u.Scheme)
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	return Target{Scheme: u.Scheme, Host: host, Path: u.RequestURI(), Redacted: Redact(s)}, nil
}

// secretParams are query parameters that carry credentials in the URLs of
// the engines tlsbench speaks to.
var secretParams = []string{"password", "pass", "pwd", "sslpassword", "secret", "token", "auth"}

// Redact returns a URL fit to print and store: the password of its user
// info and the values of credential query parameters become "xxxxx".
// Anything that is not a URL comes back as is, with user info hidden.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return redactRaw(raw)
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if slices.Contains(secretParams, strings.ToLower(k)) {
				q.Set(k, "xxxxx")
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// redactRaw hides anything between "://" and "@" in a string that did not
// parse as a URL, so that a malformed URL with a password is not echoed.
func redactRaw(s string) string {
	i := strings.Index(s, "://")
	j := strings.LastIndex(s, "@")
	if i < 0 || j < i {
		return s
	}
	return s[:i+3] + "xxxxx" + s[j:]
}

// Label is the text of a concurrency column in tables.
func Label(c int) string { return fmt.Sprintf("c=%d", c) }
