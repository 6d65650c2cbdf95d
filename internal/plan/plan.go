// Package plan holds the one configuration type of a run (Spec), its defaults,
// its validation and the expansion of its variant matrix.
package plan

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Experiment names what is measured on each connection.
type Experiment string

// The experiments.
const (
	Connect Experiment = "connect" // open, one request, close
	Pool    Experiment = "pool"    // persistent connections, many requests
	Stream  Experiment = "stream"  // persistent connections reading one large result

	// The two loops of the mongodb-seed preset (see Spec.Preset), beside
	// connect: a new client per iteration timed as the seed's Python script
	// did, and one reused client's queries.
	NewClient    Experiment = "new-client"
	ReusedClient Experiment = "reused-client"
)

// PresetMongoDBSeed replays the MongoDB seed study: its four figures over
// new and reused clients, with and without TLS.
const PresetMongoDBSeed = "mongodb-seed"

// Preset defaults: the seed's 5000 iterations per variant, in 5 interleaved
// trials.
const (
	presetCount  = 1000
	presetTrials = 5
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
	// Target is "builtin", a URL, or "lab:ENGINE" for a server tlsbench
	// starts itself (Lab); URL credentials are removed before the Spec is
	// recorded (see Redact).
	Target string `json:"target"`
	// Lab is the engine of a throw-away server tlsbench starts for the run
	// (postgres, mariadb, redis, mongodb), instead of a target URL.
	Lab string `json:"lab,omitempty"`

	TLS         []string `json:"tls"`
	Ciphers     []string `json:"ciphers,omitempty"`
	Resume      []bool   `json:"resume"`
	Keys        []string `json:"keys,omitempty"`
	CAFile      string   `json:"ca_file,omitempty"`
	Insecure    bool     `json:"insecure,omitempty"`
	Concurrency []int    `json:"concurrency"`
	// RTT lists the round-trip times to emulate (in tlsbench's dialer, in
	// user space); nil or 0 is the bare link.
	RTT []time.Duration `json:"rtt_ns,omitempty"`
	// PredictRTT lists the round-trip times at which the report predicts
	// connection setup from the connect variants measured at RTT 0 (round
	// trips × RTT + loopback time), next to any emulated measurement.
	PredictRTT []time.Duration `json:"predict_rtt_ns,omitempty"`
	// Auth lists the authentication methods to compare (lab servers only,
	// which have a user for each).
	Auth []string `json:"auth,omitempty"`

	// Workload is what each operation does (see Workloads); QueryMode is
	// prepared or simple; Tables and Rows size the sbtest data.
	Workload  string `json:"workload,omitempty"`
	QueryMode string `json:"query_mode,omitempty"`
	Tables    int    `json:"tables,omitempty"`
	Rows      int    `json:"rows,omitempty"`
	// Preset names a seed study replayed as it was done (mongodb-seed);
	// it sets the experiments.
	Preset string `json:"preset,omitempty"`

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

	// Via lists how connections reach the server (see ParseVia); empty is
	// direct. Tunnels carry plain connections: their variants are "ssh
	// CIPHER" and "stunnel KEY" beside the direct ones.
	Via []string `json:"via,omitempty"`

	// MaxErrorRate is the share of failed operations above which a trial
	// fails the run (kept in the result, then exit 1); nil is
	// DefaultMaxErrorRate, 0 fails on any error.
	MaxErrorRate *float64 `json:"max_error_rate,omitempty"`

	// secretTarget is Target as given, credentials and all: never stored;
	// secretVia the same for Via.
	secretTarget string
	secretVia    []string
	// secretPath is Path as given: a query may carry a token.
	secretPath string
}

// SecretURL is the target as the user gave it, with its credentials, for
// the drivers that log in. Never print or store it: Target is the
// redacted form.
func (s Spec) SecretURL() string { return s.secretTarget }

// RequestPath is the HTTP request path as the user gave it, for the
// request line: Path is its redacted form (a ?token= is hidden).
func (s Spec) RequestPath() string {
	if s.secretPath != "" {
		return s.secretPath
	}
	return s.Path
}

// ErrorRate is the share of failed operations a trial may have.
func (s Spec) ErrorRate() float64 {
	if s.MaxErrorRate == nil {
		return DefaultMaxErrorRate
	}
	return *s.MaxErrorRate
}

// Variant is one way of reaching the target.
type Variant struct {
	ID     string `json:"id"`
	TLS    string `json:"tls"` // off, 1.2, 1.3, auto
	Cipher string `json:"cipher,omitempty"`
	Resume bool   `json:"resume,omitempty"`
	Key    string `json:"key,omitempty"`
	Auth   string `json:"auth,omitempty"`
	// RTT is the emulated round-trip time; 0 is the bare link.
	RTT time.Duration `json:"rtt_ns,omitempty"`
	// Via labels the tunnel the connections go through ("ssh aes256-ctr",
	// "stunnel"); "" is direct. A tunnelled variant has TLS off: the
	// tunnel encrypts, with Key for stunnel's certificate.
	Via      string `json:"via,omitempty"`
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
	DefaultTables   = 8      // sysbench's --tables of the seed
	DefaultRows     = 100000 // sysbench's --table-size of the seed
	// MaxCountDuration bounds a count-limited trial in time, so that no loop
	// runs unbounded against a server that slowed down.
	MaxCountDuration = 10 * time.Minute
	// DefaultMaxErrorRate is the share of operations that may fail before
	// a trial fails the run.
	DefaultMaxErrorRate = 0.05
	// MaxRTT bounds the emulated round-trip time.
	MaxRTT = 10 * time.Second
	// TimeoutRTTs is how many emulated round trips --timeout must allow at
	// least: a connection setup takes up to about 8 (PostgreSQL, TLS 1.2,
	// SCRAM), then the query. The default timeout allows --rtt 1s.
	TimeoutRTTs = 10
)

// twice refuses a list that holds one value twice; show writes a value as
// the flag takes it.
func twice[T comparable](flag string, list []T, show func(T) string) error {
	for i, v := range list {
		if slices.Contains(list[:i], v) {
			return errTwice(flag, show(v))
		}
	}
	return nil
}

func errTwice(flag, value string) error { return errorf("%s: %s is given twice", flag, value) }

// flagDuration writes a duration as a flag takes it: whole seconds as
// "100s", not "1m40s".
func flagDuration(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// New fills defaults into raw, validates it and returns the Spec to run.
// On error, the Spec it returns holds no secret either.
func New(raw Spec) (Spec, error) {
	s, err := newSpec(raw)
	if err != nil {
		s.Target = Redact(s.Target)
		via := make([]string, len(s.Via))
		for i, v := range s.Via {
			via[i] = Redact(v)
		}
		s.Via, s.secretTarget, s.secretVia = via, "", nil
	}
	return s, err
}

func newSpec(raw Spec) (Spec, error) {
	s := raw
	if err := s.preset(); err != nil {
		return s, err
	}
	if len(s.Experiments) == 0 {
		s.Experiments = []Experiment{Connect}
	}
	for _, e := range s.Experiments {
		if e != Connect && e != Pool && e != Stream && (s.Preset == "" || (e != NewClient && e != ReusedClient)) {
			return s, errorf("unknown experiment %q: use connect, pool or stream", e)
		}
	}
	if s.Lab != "" {
		if s.Target != "" && s.Target != "lab:"+s.Lab {
			return s, errorf("give a TARGET or --lab %s, not both", s.Lab)
		}
		s.Target = "lab:" + s.Lab
	}
	if s.Target == "" {
		s.Target = Builtin
	}
	t, err := ParseTarget(s.Target)
	if err != nil {
		return s, err
	}
	if s.Preset != "" && t.Engine() != "mongodb" {
		return s, errorf("--preset %s replays a MongoDB study: give a mongodb:// URL or --lab mongodb", s.Preset)
	}
	if len(s.TLS) == 0 {
		s.TLS = t.DefaultTLS
	}
	for i, m := range s.TLS {
		if !slices.Contains(TLSModes, m) {
			return s, errorf("--tls: unknown mode %q: use off, 1.2, 1.3 or auto", m)
		}
		if slices.Contains(s.TLS[:i], m) {
			return s, errTwice("--tls", m)
		}
		if t.Scheme == "http" && m != "off" {
			return s, errorf("--tls %s: %s is plain HTTP: use an https:// URL for TLS", m, t.Redacted)
		}
		if t.Scheme == "https" && m == "off" {
			return s, errorf("--tls off: %s is an https:// URL: use an http:// URL for the plain variant", t.Redacted)
		}
		// A Redis server takes TLS and plaintext on different ports: one
		// URL is one of them.
		if t.Scheme == "redis" && t.Lab == "" && (m == "off") != (t.DefaultTLS[0] == "off") {
			return s, errorf("--tls %s: %s serves one of plaintext (redis://) or TLS (rediss://): give the URL of the port you want, or use --lab redis to compare", m, t.Redacted)
		}
	}
	if len(s.Auth) > 0 && t.Lab == "" {
		return s, errorf("--auth applies to lab servers only (--lab ENGINE): against a URL, the URL's user decides the method")
	}
	if err := twice("--auth", s.Auth, func(a string) string { return a }); err != nil {
		return s, err
	}
	if err := s.workload(t); err != nil {
		return s, err
	}
	if len(s.Resume) == 0 {
		s.Resume = []bool{false}
	}
	if err := twice("--resume", s.Resume, func(r bool) string { return map[bool]string{false: "off", true: "on"}[r] }); err != nil {
		return s, err
	}
	for _, c := range s.Ciphers {
		if _, ok := CipherSuite(c); !ok {
			return s, errorf("--cipher: unknown TLS 1.2 cipher suite %q: use an IANA name such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", c)
		}
	}
	suites := make([]string, len(s.Ciphers))
	for i, c := range s.Ciphers {
		cs, _ := CipherSuite(c)
		suites[i] = cs.Name
	}
	if err := twice("--cipher", suites, func(c string) string { return c }); err != nil {
		return s, err
	}
	if len(s.Ciphers) > 0 && !slices.Contains(s.TLS, "1.2") {
		return s, errorf("--cipher applies to TLS 1.2 only: add 1.2 to --tls")
	}
	if t.Builtin || t.Lab != "" {
		if len(s.Keys) == 0 {
			s.Keys = []string{"rsa2048"}
		}
		for _, k := range s.Keys {
			if !slices.Contains(KeyTypes, k) {
				return s, errorf("--key: unknown key type %q: use one of %s", k, strings.Join(KeyTypes, ", "))
			}
		}
		if err := twice("--key", s.Keys, func(k string) string { return k }); err != nil {
			return s, err
		}
		if s.CAFile != "" {
			return s, errorf("--ca applies to URL targets: tlsbench verifies the servers it starts with the CA it made for them")
		}
	} else if len(s.Keys) > 0 {
		return s, errorf("--key applies to servers tlsbench starts (builtin, --lab ENGINE) only: an external server presents its own key, which tlsbench records")
	}
	if s.CAFile == "" {
		s.CAFile = t.CAFile // the URL's own (tlsCAFile=); --ca wins
	}
	if t.Insecure && s.CAFile == "" {
		// The URL asked for encryption without verification (sslmode=require,
		// tls=skip-verify), as its client library would.
		s.Insecure = true
	}
	if s.Insecure && s.CAFile != "" {
		return s, errorf("--ca and --insecure exclude each other: keep --ca to verify the server")
	}
	if err := s.checkVia(t); err != nil {
		return s, err
	}
	if len(s.Concurrency) == 0 {
		s.Concurrency = []int{1}
	}
	for _, c := range s.Concurrency {
		if c < 1 || c > 4096 {
			return s, errorf("-c/--concurrency: %d is out of range: use 1 to 4096", c)
		}
	}
	if err := twice("-c/--concurrency", s.Concurrency, strconv.Itoa); err != nil {
		return s, err
	}
	for _, r := range s.RTT {
		if r < 0 || r > MaxRTT {
			return s, errorf("--rtt: %v is out of range: use 0 to %v", r, MaxRTT)
		}
	}
	if err := twice("--rtt", s.RTT, time.Duration.String); err != nil {
		return s, err
	}
	for _, r := range s.PredictRTT {
		if r < time.Microsecond || r > MaxRTT {
			return s, errorf("--predict-rtt: %v is out of range: use 1µs to %v", r, MaxRTT)
		}
	}
	if err := twice("--predict-rtt", s.PredictRTT, time.Duration.String); err != nil {
		return s, err
	}
	if len(s.PredictRTT) > 0 {
		if !slices.Contains(s.Experiments, Connect) {
			return s, errorf("--predict-rtt predicts connection setup: it needs the connect experiment")
		}
		if len(s.RTT) > 0 && !slices.Contains(s.RTT, 0) {
			return s, errorf("--predict-rtt predicts from the bare link: add 0 to --rtt")
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
	if len(s.RTT) > 0 {
		if rtt := slices.Max(s.RTT); s.Timeout < TimeoutRTTs*rtt {
			return s, errorf("--timeout %s is too short for --rtt %s: a connection takes about 8 round trips: give --timeout %s or more",
				flagDuration(s.Timeout), flagDuration(rtt), flagDuration(TimeoutRTTs*rtt))
		}
	}
	if s.Trials == 0 {
		s.Trials = DefaultTrials
	}
	if s.MaxErrorRate == nil {
		rate := DefaultMaxErrorRate
		s.MaxErrorRate = &rate
	}
	if r := *s.MaxErrorRate; !(r >= 0 && r <= 1) {
		return s, errorf("--max-error-rate: %v is out of range: use 0%% to 100%%", r)
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
	s.secretTarget, s.Target = s.Target, t.Redacted
	s.secretPath, s.Path = s.Path, Redact(s.Path)
	return s, nil
}

// Variants expands the matrix: RTT × TLS mode × cipher × resumption × key.
// The plain variant appears once per RTT, whatever the keys; the plain
// variant of the first RTT is the baseline when present, otherwise the first
// variant is.
func (s Spec) Variants() []Variant {
	rtts := s.RTT
	if len(rtts) == 0 {
		rtts = []time.Duration{0}
	}
	var vs []Variant
	for _, rtt := range rtts {
		for _, v := range s.variants() {
			v.RTT = rtt
			vs = append(vs, v)
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
			if v.Plain() && v.Via == "" {
				base = i
				break
			}
		}
		out[base].Baseline = true
	}
	return out
}

// variants is the matrix of one RTT, before IDs.
func (s Spec) variants() []Variant {
	var vs []Variant
	for _, raw := range s.via() {
		via, err := ParseVia(raw)
		if err != nil {
			continue // New reported it
		}
		switch via.Kind {
		case ViaDirect:
			vs = append(vs, s.direct()...)
		case ViaSSH:
			for _, a := range s.auths() {
				vs = append(vs, Variant{TLS: "off", Auth: a, Via: via.Label()})
			}
		case ViaStunnel:
			for _, k := range s.Keys {
				for _, a := range s.auths() {
					vs = append(vs, Variant{TLS: "off", Key: k, Auth: a, Via: via.Label()})
				}
			}
		}
	}
	return vs
}

func (s Spec) auths() []string {
	if len(s.Auth) == 0 {
		return []string{""}
	}
	return s.Auth
}

// direct is the matrix of connections without a tunnel.
func (s Spec) direct() []Variant {
	var vs []Variant
	keys := s.Keys
	if len(keys) == 0 {
		keys = []string{""}
	}
	auths := s.auths()
	for _, mode := range s.TLS {
		if mode == "off" {
			for _, a := range auths {
				vs = append(vs, Variant{TLS: "off", Auth: a})
			}
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
					for _, a := range auths {
						vs = append(vs, Variant{TLS: mode, Cipher: c, Resume: r, Key: key, Auth: a})
					}
				}
			}
		}
	}
	return vs
}

func variantID(v Variant) string {
	parts := []string{"tls" + v.TLS}
	if v.Plain() {
		parts[0] = "plain"
	}
	if v.Via != "" {
		parts[0] = v.Via
	}
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
	if v.Auth != "" {
		parts = append(parts, v.Auth)
	}
	if v.RTT != 0 {
		parts = append(parts, "rtt"+RTTLabel(v.RTT))
	}
	return strings.Join(parts, " ")
}

// RTTLabel writes an RTT as variant IDs show it: 44ms, 1.5ms, 500us.
func RTTLabel(rtt time.Duration) string {
	return strings.ReplaceAll(rtt.String(), "µ", "u")
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
	Builtin bool
	// Lab is the engine of a lab server ("lab:postgres").
	Lab string
	// Scheme is the engine's name: http, https, postgres, mysql, redis.
	Scheme   string
	Host     string // host:port
	Path     string // request path (HTTP)
	Redacted string // the target as it may be printed and stored
	// DefaultTLS is what to compare when --tls is not given, from the URL's
	// own TLS options (sslmode=, tls=, rediss://).
	DefaultTLS []string
	// Insecure is set when the URL asks for TLS without verification.
	Insecure bool
	// CAFile is the CA file the URL names (MongoDB's tlsCAFile=).
	CAFile string
}

// Engine is the driver registry key of the target.
func (t Target) Engine() string {
	switch {
	case t.Builtin:
		return "builtin"
	case t.Scheme == "https":
		return "http"
	}
	return t.Scheme
}

// labEngines maps lab engine names to the schemes their URLs have.
var labEngines = map[string]string{"postgres": "postgres", "mariadb": "mysql", "redis": "redis", "mongodb": "mongodb"}

// ParseTarget parses "builtin", "lab:ENGINE" or a URL: http(s)://,
// postgres(ql)://, mysql://, redis(s)://, mongodb://. It never echoes a
// target it cannot parse: its errors say which part is wrong.
func ParseTarget(s string) (Target, error) {
	compare := []string{"off", "1.2", "1.3"}
	if s == Builtin {
		return Target{Builtin: true, Redacted: Builtin, DefaultTLS: compare}, nil
	}
	if engine, ok := strings.CutPrefix(s, "lab:"); ok {
		scheme, ok := labEngines[engine]
		if !ok {
			return Target{}, errorf("%s: no such lab server: use postgres, mariadb, redis or mongodb", shown("--lab", " ", engine))
		}
		return Target{Lab: engine, Scheme: scheme, Redacted: s, DefaultTLS: compare}, nil
	}
	u, err := parseURL("target", s)
	if err != nil {
		return Target{}, err
	}
	t := Target{Scheme: u.Scheme, Redacted: Redact(s)}
	port := map[string]string{"http": "80", "https": "443", "postgres": "5432", "postgresql": "5432", "mysql": "3306", "redis": "6379", "rediss": "6379", "mongodb": "27017"}[u.Scheme]
	q := u.Query()
	switch u.Scheme {
	case "http":
		t.DefaultTLS = []string{"off"}
		t.Path = u.RequestURI()
	case "https":
		t.DefaultTLS = []string{"auto"}
		t.Path = u.RequestURI()
	case "postgres", "postgresql":
		t.Scheme = "postgres"
		for _, h := range q["host"] {
			if strings.HasPrefix(h, "/") || strings.HasPrefix(h, "@") {
				return Target{}, errUnixSocket("target", "postgres")
			}
		}
		switch mode := q.Get("sslmode"); mode {
		case "disable":
			t.DefaultTLS = []string{"off"}
		case "", "allow", "prefer":
			t.DefaultTLS = []string{"off", "auto"}
		case "require":
			t.DefaultTLS, t.Insecure = []string{"auto"}, true
		case "verify-ca", "verify-full":
			t.DefaultTLS = []string{"auto"}
		default:
			return Target{}, errorf("%s: use disable, allow, prefer, require, verify-ca or verify-full, as libpq spells them", shown("sslmode", "=", mode))
		}
	case "mysql":
		switch mode := strings.ToLower(q.Get("tls")); mode {
		case "false", "off", "disabled":
			t.DefaultTLS = []string{"off"}
		case "", "preferred":
			t.DefaultTLS = []string{"off", "auto"}
		case "skip-verify":
			t.DefaultTLS, t.Insecure = []string{"auto"}, true
		case "true", "on", "verify", "required":
			t.DefaultTLS = []string{"auto"}
		default:
			return Target{}, errorf("%s: use false, preferred, skip-verify or true, as the Go MySQL driver spells them", shown("tls", "=", mode))
		}
	case "redis":
		t.DefaultTLS = []string{"off"}
	case "rediss":
		t.Scheme = "redis"
		t.DefaultTLS = []string{"auto"}
	case "mongodb":
		if err := t.mongoTLS(u); err != nil {
			return Target{}, err
		}
	case "mongodb+srv":
		return Target{}, errorf("%s: mongodb+srv:// finds its hosts by DNS SRV and TXT lookups, which tlsbench does not make (it measures one server, over a direct connection): give mongodb://HOST:PORT of that server", t.Redacted)
	default:
		return Target{}, errorf("unsupported target scheme %q: use http://, https://, postgres://, mysql://, redis://, rediss://, mongodb:// or builtin", u.Scheme)
	}
	if err := checkHost("target", u, t.Scheme); err != nil {
		return Target{}, err
	}
	t.Host = u.Host
	if u.Port() == "" {
		t.Host = net.JoinHostPort(u.Hostname(), port)
	}
	return t, nil
}

// schemes lists the URL schemes a target can have, for errors.
const schemes = "http(s)://, postgres://, mysql://, redis(s)://, mongodb:// or builtin"

// exampleURL is a URL of the scheme with a host, for errors.
func exampleURL(scheme string) string {
	switch scheme {
	case "postgres", "postgresql":
		return "postgres://127.0.0.1:5432/db"
	case "mysql":
		return "mysql://127.0.0.1:3306/db"
	case "redis", "rediss":
		return scheme + "://127.0.0.1:6379"
	case "mongodb":
		return "mongodb://127.0.0.1:27017"
	case "ssh":
		return "ssh://user@127.0.0.1:22"
	case "http":
		return "http://127.0.0.1:8080/"
	}
	return "https://127.0.0.1:8443/"
}

// shown writes name and value for an error, the value only if it is a plain
// word: a value that is not may hold a password.
func shown(name, sep, value string) string {
	if plainWord(value) {
		return name + sep + value
	}
	return name
}

func errUnixSocket(what, scheme string) error {
	return errorf("%s: Unix sockets are not supported: tlsbench measures TCP connections: give the TCP host, e.g. %s (TLS never runs over a Unix socket anyway)", what, exampleURL(scheme))
}

// parseURL parses a scheme://authority URL whose parts are unambiguous: no
// '#' (a fragment, or a password's '#' that cuts the user info short) and
// no '@' after the authority with a ':' before it (a password's '/' or '?'
// doing the same), so that the host dialed is the host the text shows. Its
// errors name what the URL is (what: "target", "--via") and never quote s.
func parseURL(what, s string) (*url.URL, error) {
	i := strings.Index(s, "://")
	if i < 0 || !validScheme(s[:i]) {
		return nil, notURL(what, s)
	}
	if strings.Contains(s, "#") {
		return nil, errorf("%s: a '#' starts a URL fragment, which tlsbench does not use: if it is part of the password, percent-encode it as %%23", what)
	}
	if ambiguousUserInfo(maskCiphers(s)) {
		return nil, errorf("%s: the user info does not parse: an '@' follows the host part: percent-encode '/', '?' and '@' in the password as %%2F, %%3F and %%40", what)
	}
	if strings.Contains(strings.ToLower(s), "@unix(") {
		return nil, errUnixSocket(what, strings.ToLower(s[:i]))
	}
	if dsnAddr.MatchString(s) {
		return nil, errorf("%s: the host part looks like a go-sql-driver DSN's net(addr): give mysql://user@host:port/db", what)
	}
	// The authority as the text shows it: up to the first '/' or '?'; the
	// host after its last '@'.
	scheme := strings.ToLower(s[:i])
	rest := s[i+3:]
	auth := rest
	if e := strings.IndexAny(rest, "/?"); e >= 0 {
		auth = rest[:e]
	}
	at := strings.LastIndex(auth, "@")
	host := auth[at+1:]
	u, err := url.Parse(s)
	if err == nil {
		if shown, err := url.PathUnescape(host); err != nil || shown != u.Host {
			return nil, errorf("%s: the host part does not parse: give a host name or an IP address, e.g. %s", what, exampleURL(scheme))
		}
		if u.Host != "" && goSQLDSN.MatchString(s) {
			// Redact reads it as a DSN: refuse it rather than record it so.
			return nil, errorf("%s: an '@' before '/' or 'name(' reads as a go-sql-driver DSN: percent-encode that '@' as %%40, or give mysql://user@host:port/db", what)
		}
		return u, nil
	}
	// Say which part does not parse: the host, the user info or the rest.
	if _, err := url.Parse(s[:i+3] + host); err != nil {
		return nil, hostError(what, scheme, host)
	}
	if _, err := url.Parse(s[:i+3] + auth); at >= 0 && err != nil {
		return nil, errorf("%s: the user info does not parse: percent-encode special characters of the user name and password (e.g. ' ' as %%20, '%%' as %%25)", what)
	}
	return nil, errorf("%s: the path or query does not parse: percent-encode its special characters (e.g. '%%' as %%25)", what)
}

// ambiguousUserInfo reports whether a URL's user info could end at another
// '@' than the one net/url takes: an '@' after the authority (after a '/',
// '?' or '#') with a ':' before it.
func ambiguousUserInfo(s string) bool {
	rest := s[strings.Index(s, "://")+3:]
	at := strings.LastIndex(rest, "@")
	end := strings.IndexAny(rest, "/?#")
	return at >= 0 && end >= 0 && at > end && strings.Contains(rest[:at], ":")
}

// hostError explains a host[:port] that does not parse.
func hostError(what, scheme, host string) error {
	if strings.HasPrefix(strings.ToLower(host), "%2f") {
		return errUnixSocket(what, scheme)
	}
	if strings.HasPrefix(host, "[") && !strings.Contains(host, "]") {
		return errorf("%s: the host part does not parse: an IPv6 address needs its closing ']', e.g. [::1]:PORT", what)
	}
	hostPort := host
	if k := strings.LastIndex(host, "]"); k >= 0 {
		hostPort = host[k+1:]
	}
	if c := strings.LastIndex(hostPort, ":"); c >= 0 && strings.Trim(hostPort[c+1:], "0123456789") != "" {
		return errorf("%s: the port is not a number: give HOST:PORT with a port from 1 to 65535, e.g. %s", what, exampleURL(scheme))
	}
	return errorf("%s: the host part does not parse: give a host name or an IP address, e.g. %s", what, exampleURL(scheme))
}

// notURL explains a target that is not a scheme://... URL.
func notURL(what, s string) error {
	switch {
	case libpqString.MatchString(s):
		return errorf("%s is not a URL: it looks like a libpq key=value string: give postgres://user@host:port/db?sslmode=...", what)
	case goSQLDSN.MatchString(s):
		return errorf("%s is not a URL: it looks like a go-sql-driver DSN: give mysql://user@host:port/db", what)
	case strings.Contains(s, "://"):
		return errorf("%s: the scheme does not parse: use %s", what, schemes)
	}
	return errorf("%s is not a URL: use %s", what, schemes)
}

var (
	libpqString = regexp.MustCompile(`^\s*[A-Za-z_]+\s*=`)
	goSQLDSN    = regexp.MustCompile(`@[A-Za-z0-9]*\(|@/`)
	dsnAddr     = regexp.MustCompile(`@[A-Za-z0-9]*\(`)
)

// checkHost checks the host and port of a parsed URL: present, one host,
// a name or an IP address, a port from 1 to 65535.
func checkHost(what string, u *url.URL, scheme string) error {
	name := u.Hostname()
	switch {
	case name == "":
		return errorf("%s has no host: give the host, e.g. %s", what, exampleURL(scheme))
	case strings.HasPrefix(strings.ToLower(name), "unix("):
		return errUnixSocket(what, scheme)
	case strings.Contains(u.Host, ","):
		return errorf("%s lists %d hosts: tlsbench measures one server over a direct connection: give one HOST:PORT", what, strings.Count(u.Host, ",")+1)
	case !validHost(u.Host, name):
		return errorf("%s: the host part does not parse: give a host name or an IP address, e.g. %s", what, exampleURL(scheme))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return errorf("%s: port %s is out of range: use 1 to 65535", what, p)
		}
	}
	return nil
}

// validHost reports whether name (of host, as net/url split it) is an IP
// address ([IPv6] in brackets, with an optional zone) or a DNS name.
func validHost(host, name string) bool {
	if strings.HasPrefix(host, "[") {
		ip, _, _ := strings.Cut(name, "%")
		return strings.Contains(ip, ":") && net.ParseIP(ip) != nil
	}
	if len(name) > 253 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// Workloads lists each engine's workloads, its default first.
var Workloads = map[string][]string{
	"builtin":  {"get"},
	"http":     {"get"},
	"postgres": {"point-select", "read-only", "stream"},
	"mysql":    {"point-select", "read-only", "stream"},
	"redis":    {"get", "stream"},
	"mongodb":  {"find-one-id", "find-one", "stream"},
}

// workload fills and checks the workload fields against the target.
func (s *Spec) workload(t Target) error {
	names := Workloads[t.Engine()]
	if slices.Contains(s.Experiments, Stream) {
		if s.Workload != "" && s.Workload != "stream" {
			return errorf("--workload %s: the stream experiment reads one large result: leave --workload out", s.Workload)
		}
		if !slices.Contains(names, "stream") {
			return errorf("the stream experiment needs a database target: %s has no stream workload", t.Redacted)
		}
		if len(s.Experiments) > 1 {
			return errorf("run the stream experiment on its own")
		}
		s.Workload = "stream"
	}
	if s.Workload == "" {
		s.Workload = names[0]
	}
	if !slices.Contains(names, s.Workload) {
		return errorf("--workload %q: %s has %s", s.Workload, t.Redacted, strings.Join(names, ", "))
	}
	if t.Engine() == "http" || t.Engine() == "builtin" {
		if s.QueryMode != "" {
			return errorf("--query-mode applies to database targets only")
		}
		return nil
	}
	if t.Engine() == "mongodb" {
		return s.mongoWorkload()
	}
	switch s.QueryMode {
	case "":
		s.QueryMode = "prepared"
	case "prepared", "simple":
	default:
		return errorf("--query-mode %q: use prepared or simple", s.QueryMode)
	}
	if s.Tables == 0 {
		s.Tables = DefaultTables
	}
	if s.Rows == 0 {
		s.Rows = DefaultRows
	}
	if s.Tables < 1 || s.Tables > 1024 || s.Rows < 1 || s.Rows > 1e9 {
		return errorf("--tables %d --rows %d: use 1 to 1024 tables of 1 to 1e9 rows", s.Tables, s.Rows)
	}
	return nil
}

// secretParams are query parameters that carry credentials in the URLs of
// the engines tlsbench speaks to.
var secretParams = []string{"password", "pass", "pwd", "sslpassword", "secret", "token", "auth"}

// hidden replaces every secret Redact removes.
const hidden = "xxxxx"

// Redact returns any string fit to print and store: a URL, a libpq
// key=value string, a go-sql-driver DSN, a command-line argument. It hides
//   - everything between the first ':' and the last '@' of the user info
//     (of a URL: after "scheme://"; of anything else, or of anything with
//     a go-sql-driver DSN's "@net(" or "@/": of the whole string), so that a
//     password holding '#', '/', '?' or '@' is hidden whole;
//   - the values of credential parameters (secretParams), as URL query
//     parameters (up to '&' or '#') or as libpq key=value pairs (quoted or
//     up to white space);
//   - a URL's fragment.
//
// Strings without such parts (flags, durations, paths, "builtin",
// "lab:postgres", --via lists such as "direct,ssh:aes128-gcm@openssh.com")
// come back unchanged, and Redact(Redact(s)) == Redact(s).
//
// One case stays ambiguous: in an ssh:// URL, "?cipher=C@openssh.com" is
// taken as a cipher name, not as the end of a password.
func Redact(s string) string {
	for range 8 {
		r := redactOnce(s)
		if r == s {
			return s
		}
		s = r
	}
	return hidden // no fixed point: hide everything rather than guess
}

// redactOnce hides the secret regions of s, found on s as given.
func redactOnce(s string) string {
	if viaWords(s) {
		return s
	}
	m := maskCiphers(s)
	var regions [][2]int
	i := strings.Index(m, "://")
	isURL := i > 0 && validScheme(m[:i])
	if !isURL || goSQLDSN.MatchString(m) {
		// A DSN's password may start with "//": "app://pw@tcp(...)/db".
		if at := strings.LastIndex(m, "@"); at >= 0 {
			if c := strings.Index(m[:at], ":"); c >= 0 {
				regions = append(regions, [2]int{c + 1, at})
			}
		}
	}
	if isURL {
		base := i + 3
		rest := m[base:]
		frag := 0
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if c := strings.Index(rest[:at], ":"); c >= 0 {
				regions = append(regions, [2]int{base + c + 1, base + at})
			}
			frag = at + 1
		}
		if h := strings.Index(rest[frag:], "#"); h >= 0 {
			regions = append(regions, [2]int{base + frag + h + 1, len(m)})
		}
	}
	regions = append(regions, secretValues(m)...)
	return hide(s, regions)
}

// secretValues finds the values of credential parameters: after a key of
// secretParams and '=' that start the string or follow white space, '?',
// '&', ';' or ','. After '?', '&' or ';' (a URL query) the value ends at
// '&' or '#'; otherwise (libpq key=value) it is quoted or ends at white
// space, with backslash escapes, as libpq reads it. Keys inside a value
// count too: "pass= password=x" hides both values.
func secretValues(s string) [][2]int {
	var regions [][2]int
	// Values end where they end whatever their start: remember the last
	// ones, so that keys inside them do not make the scan quadratic.
	queryFrom, queryEnd := -1, -1 // no '&' or '#' in s[queryFrom:queryEnd]
	plainFrom, plainEnd := -1, -1 // an unquoted libpq value
	for j := 0; j < len(s); j++ {
		var before byte = ' '
		if j > 0 {
			before = s[j-1]
		}
		if !isSpace(before) && !strings.ContainsRune("?&;,", rune(before)) {
			continue
		}
		k := j
		for k < len(s) && isKeyChar(s[k]) {
			k++
		}
		key := s[j:k]
		p := skipSpace(s, k)
		if key == "" || p >= len(s) || s[p] != '=' {
			continue
		}
		query := strings.ContainsRune("?&;", rune(before))
		if query {
			if dec, err := url.QueryUnescape(key); err == nil {
				key = dec
			}
		}
		if !slices.Contains(secretParams, strings.ToLower(key)) {
			continue
		}
		start, end := p+1, len(s)
		switch {
		case query && queryFrom <= start && start <= queryEnd:
			end = queryEnd
		case query:
			if e := strings.IndexAny(s[start:], "&#"); e >= 0 {
				end = start + e
			}
			queryFrom, queryEnd = start, end
		default:
			start = skipSpace(s, start)
			quoted := start < len(s) && (s[start] == '\'' || s[start] == '"')
			if !quoted && plainFrom <= start && start <= plainEnd {
				end = plainEnd
				break
			}
			end = libpqValueEnd(s, start)
			if !quoted {
				plainFrom, plainEnd = start, end
			}
		}
		regions = append(regions, [2]int{start, end})
		if end == len(s) {
			break // what follows is hidden already
		}
		j = p // look for keys inside the value too
	}
	return regions
}

// libpqValueEnd is where a libpq value starting at i ends: after its
// closing quote, or at white space. A quote or white space after a
// backslash is taken as escaped, as libpq does, and so is one after an
// escaped backslash, which libpq does not: the value found is never
// shorter than libpq's, and its end depends on where it is only.
func libpqValueEnd(s string, i int) int {
	var quote byte
	if i < len(s) && (s[i] == '\'' || s[i] == '"') {
		quote = s[i]
		i++
	}
	for ; i < len(s); i++ {
		if i > 0 && s[i-1] == '\\' {
			continue
		}
		switch {
		case quote != 0 && s[i] == quote:
			return i + 1
		case quote == 0 && isSpace(s[i]):
			return i
		}
	}
	return len(s)
}

func isSpace(c byte) bool { return strings.IndexByte(" \t\n\v\f\r", c) >= 0 }

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func isKeyChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_-.%+", c) >= 0
}

// hide replaces the regions of s (merged where they overlap or touch; empty
// ones skipped) by "xxxxx".
func hide(s string, regions [][2]int) string {
	slices.SortFunc(regions, func(a, b [2]int) int { return a[0] - b[0] })
	var b strings.Builder
	last := 0
	for i := 0; i < len(regions); {
		start, end := regions[i][0], regions[i][1]
		for i++; i < len(regions) && regions[i][0] <= end; i++ {
			end = max(end, regions[i][1])
		}
		if start >= end || start < last {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(hidden)
		last = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// validScheme reports whether s is a URL scheme: a letter, then letters,
// digits, '+', '-' or '.'.
func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// viaWords reports whether s is a list of --via entries without a URL
// (direct, ssh, stunnel, ssh:CIPHER): some ciphers hold an '@'.
func viaWords(s string) bool {
	for w := range strings.SplitSeq(s, ",") {
		c, ok := strings.CutPrefix(w, "ssh:")
		if w != ViaDirect && w != ViaSSH && w != ViaStunnel && (!ok || !slices.Contains(SSHCiphers, c)) {
			return false
		}
	}
	return true
}

// maskCiphers hides from the search for '@' the SSH cipher names with an
// '@' in an ssh:// URL's "cipher=" parameters: it returns s with those '@'
// replaced by NUL, same length.
func maskCiphers(s string) string {
	if !strings.HasPrefix(strings.ToLower(s), "ssh://") || !strings.Contains(s, "@openssh.com") {
		return s
	}
	b := []byte(s)
	for _, c := range SSHCiphers {
		at := strings.IndexByte(c, '@')
		if at < 0 {
			continue
		}
		param := "cipher=" + c
		for i := 0; ; {
			k := strings.Index(s[i:], param)
			if k < 0 {
				break
			}
			k += i
			end := k + len(param)
			if k > 0 && (s[k-1] == '?' || s[k-1] == '&') && (end == len(s) || s[end] == '&' || s[end] == '#') {
				b[k+len("cipher=")+at] = 0
			}
			i = k + 1
		}
	}
	return string(b)
}

// Label is the text of a concurrency column in tables.
func Label(c int) string { return fmt.Sprintf("c=%d", c) }
