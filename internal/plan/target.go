package plan

import (
	"context"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Target is a parsed target.
type Target struct {
	Builtin bool
	// Lab is the engine of a lab server ("lab:postgres"), or a list of
	// versions of one ("postgres:15,postgres:18", see Labs).
	Lab string
	// Negotiation is a postgres:// URL's sslnegotiation (postgres, direct).
	Negotiation string
	// Scheme is the engine's name: http, https, postgres, mysql, redis.
	Scheme   string
	Host     string // host:port
	Path     string // request path (HTTP)
	Redacted string // the target as it may be printed and stored
	// DefaultTLS is what to compare when --tls is not given, from the URL's
	// own TLS options (sslmode=, tls=, rediss://): plain against the TLS
	// the URL asks for; TLS 1.2 against 1.3 where the scheme's port speaks
	// only TLS (https://, rediss://: plaintext is another port); the URL's
	// one mode where it asks for plaintext only (see DefaultTLS in
	// docs/flags.md).
	DefaultTLS []string
	// OwnTLS is the one mode a client of the URL alone would use, plain
	// where the URL allows it (prepare's).
	OwnTLS string
	// Insecure is set when the URL asks for TLS without verification.
	Insecure bool
	// CAFile is the CA file the URL names (MongoDB's tlsCAFile=,
	// PostgreSQL's sslrootcert=, MySQL's ssl-ca=).
	CAFile string
	// SkipHostname verifies the server's chain but not its name
	// (PostgreSQL's sslmode=verify-ca); SystemRoots is sslrootcert=system.
	SkipHostname, SystemRoots bool
	// CertFile and KeyFile are the client certificate and its key the URL
	// names (see clientCertParams); X509Auth is MongoDB's
	// authMechanism=MONGODB-X509.
	CertFile, KeyFile string
	X509Auth          bool

	// url is the target URL as given, credentials included (see URL).
	url *url.URL
}

// URL is the target URL as given, credentials included, for the drivers
// that log in; nil for the built-in server and lab servers. Never print or
// store it: Redacted is the form that may be.
func (t Target) URL() *url.URL {
	if t.url == nil {
		return nil
	}
	u := *t.url
	return &u
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

// LocalFileParams are the URL parameters (libpq's, MySQL's, MongoDB's,
// tlsbench's) that name a file on the machine that reads the URL: they
// say where a secret or a CA is, not what is measured.
var LocalFileParams = []string{"passfile", "sslkey", "sslcert", "sslrootcert", "sslcrl", "sslcrldir",
	"ssl-ca", "ssl-cert", "ssl-key", "tlsCAFile", "tlsCertificateKeyFile"}

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
	if lab, ok := strings.CutPrefix(s, "lab:"); ok {
		return parseLab(lab, s, compare)
	}
	u, err := parseURL("target", s)
	if err != nil {
		return Target{}, err
	}
	t := Target{Scheme: u.Scheme, Redacted: Redact(s), url: u, OwnTLS: "off"}
	port := map[string]string{"http": "80", "https": "443", "postgres": "5432", "postgresql": "5432", "mysql": "3306", "redis": "6379", "rediss": "6379", "mongodb": "27017"}[u.Scheme]
	q := u.Query()
	switch u.Scheme {
	case "http":
		t.DefaultTLS = []string{"off"}
		t.Path = u.RequestURI()
	case "https":
		t.DefaultTLS, t.OwnTLS = []string{"1.2", "1.3"}, "auto"
		t.Path = u.RequestURI()
	case "postgres", "postgresql":
		t.Scheme = "postgres"
		for _, h := range q["host"] {
			if strings.HasPrefix(h, "/") || strings.HasPrefix(h, "@") {
				return Target{}, errUnixSocket("target", "postgres")
			}
		}
		switch t.Negotiation = q.Get("sslnegotiation"); t.Negotiation {
		case "", NegotiationPostgres, NegotiationDirect:
		default:
			return Target{}, errorf("%s: use postgres or direct, as libpq spells them", shown("sslnegotiation", "=", t.Negotiation))
		}
		switch mode := q.Get("sslmode"); mode {
		case "disable":
			t.DefaultTLS = []string{"off"}
		case "", "allow", "prefer":
			t.DefaultTLS = []string{"off", "auto"}
		case "require":
			t.DefaultTLS, t.Insecure, t.OwnTLS = []string{"off", "auto"}, true, "auto"
		case "verify-ca", "verify-full":
			t.DefaultTLS, t.OwnTLS = []string{"off", "auto"}, "auto"
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
			t.DefaultTLS, t.Insecure, t.OwnTLS = []string{"off", "auto"}, true, "auto"
		case "true", "on", "verify", "required":
			t.DefaultTLS, t.OwnTLS = []string{"off", "auto"}, "auto"
		default:
			return Target{}, errorf("%s: use false, preferred, skip-verify or true, as the Go MySQL driver spells them", shown("tls", "=", mode))
		}
	case "redis":
		t.DefaultTLS = []string{"off"}
	case "rediss":
		t.Scheme = "redis"
		t.DefaultTLS, t.OwnTLS = []string{"1.2", "1.3"}, "auto"
	case "mongodb":
		if err := t.mongoTLS(u); err != nil {
			return Target{}, err
		}
	case "mongodb+srv":
		return Target{}, errorf("%s: mongodb+srv:// finds its hosts by DNS SRV and TXT lookups, which tlsbench does not make (it measures one server, over a direct connection): give mongodb://HOST:PORT of that server", t.Redacted)
	default:
		return Target{}, errorf("unsupported target scheme %q: use http://, https://, postgres://, mysql://, redis://, rediss://, mongodb:// or builtin", u.Scheme)
	}
	if err := t.clientCertParams(u.Scheme, q); err != nil {
		return Target{}, err
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

// WorkloadPing is one round trip that reads no data (SQL's SELECT 1,
// Redis's PING, MongoDB's ping command): connect's default on a URL
// target, which holds none of tlsbench's data unless prepared.
const WorkloadPing = "ping"

// Workloads lists each engine's workloads, its default first.
var Workloads = map[string][]string{
	"builtin":  {"get", WorkloadRequest},
	"http":     {"get", WorkloadRequest},
	"postgres": {"point-select", "read-only", "stream", WorkloadPing},
	"mysql":    {"point-select", "read-only", "stream", WorkloadPing},
	"redis":    {"get", "stream", WorkloadCommand, WorkloadPing},
	"mongodb":  {"find-one-id", "find-one", "stream", WorkloadFilter, WorkloadPing},
}

// defaultWorkload is the workload of a run that names none: on a URL
// target, a run of connect alone pings (it needs no prepared data, and
// what it measures is the connection); otherwise the engine's first, which
// lab servers are filled for and pool and stream read (the seed studies'
// connect runs one point select per connection).
func (s *Spec) defaultWorkload(t Target) string {
	names := Workloads[t.Engine()]
	urlTarget := !t.Builtin && t.Lab == ""
	connectOnly := !slices.ContainsFunc(s.Experiments, func(e Experiment) bool { return e != Connect })
	if urlTarget && connectOnly && slices.Contains(names, WorkloadPing) {
		return WorkloadPing
	}
	return names[0]
}

// workload fills and checks the workload fields against the target.
func (s *Spec) workload(ctx context.Context, t Target) error {
	if len(s.Scripts) > 0 {
		return s.scriptWorkload(ctx, t)
	}
	names := Workloads[t.Engine()]
	if slices.Contains(s.Experiments, Stream) {
		if s.Workload != "" && s.Workload != "stream" {
			return errorf("⟨workload⟩ %s: the stream experiment reads one large result: leave ⟨workload⟩ out", s.Workload)
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
		s.Workload = s.defaultWorkload(t)
	}
	if !slices.Contains(names, s.Workload) {
		return errorf("⟨workload⟩ %q: %s has %s", s.Workload, t.Redacted, strings.Join(names, ", "))
	}
	if t.Engine() == "http" || t.Engine() == "builtin" {
		if s.QueryMode != "" {
			return errorf("⟨query_mode⟩ applies to database targets only")
		}
		return nil
	}
	if t.Engine() == "mongodb" && (s.Workload != WorkloadPing || s.QueryMode != "") {
		return s.mongoWorkload()
	}
	if s.Workload == WorkloadPing {
		if s.QueryMode != "" {
			return errorf("⟨query_mode⟩ applies to workloads that read data: %s is one round trip, sent as text", WorkloadPing)
		}
		return nil // no data: no sizes to fill
	}
	return s.sqlWorkload()
}

// sqlWorkload fills and checks the query mode and the sbtest size of a
// PostgreSQL or MySQL workload.
func (s *Spec) sqlWorkload() error {
	switch s.QueryMode {
	case "":
		s.QueryMode = "prepared"
	case "prepared", "simple":
	default:
		return errorf("⟨query_mode⟩ %q: use prepared or simple", s.QueryMode)
	}
	switch {
	case s.Tables == 0 && s.Workload == "stream":
		// stream reads sbtest1 alone: a lab filled with DefaultTables
		// would take that many times as long for nothing.
		s.Tables = 1
	case s.Tables == 0:
		s.Tables = DefaultTables
	}
	if s.Rows == 0 {
		s.Rows = DefaultRows
	}
	if s.Tables < 1 || s.Tables > 1024 || s.Rows < 1 || s.Rows > 1e9 {
		return errorf("⟨tables⟩ %d ⟨rows⟩ %d: use 1 to 1024 tables of 1 to 1e9 rows", s.Tables, s.Rows)
	}
	return nil
}

// parseLab parses the lab servers of "lab:LIST": an engine, or versions of
// PostgreSQL to compare ("postgres:15,postgres:18").
func parseLab(lab, raw string, compare []string) (Target, error) {
	if strings.Contains(lab, "@") {
		// "lab:pw@/db" is a MySQL DSN for a user named lab, not a list of
		// lab servers: what follows "lab:" may be a password.
		return Target{}, errorf("⟨lab⟩: an '@' is no part of a lab server's name: give lab:postgres, lab:mariadb, lab:redis or lab:mongodb, or a URL such as %s", exampleURL("mysql"))
	}
	var scheme string
	seen := map[string]bool{}
	list := strings.Split(lab, ",")
	for _, one := range list {
		engine, version, versioned := strings.Cut(one, ":")
		sch, ok := labEngines[engine]
		if !ok {
			return Target{}, errorf("%s: no such lab server: use postgres, mariadb, redis or mongodb", shown("⟨lab⟩", " ", engine))
		}
		if versioned {
			if n, err := strconv.Atoi(version); engine != "postgres" || err != nil || n < 10 {
				return Target{}, errorf("%s: only PostgreSQL comes in versions here, as postgres:15 or postgres:18", shown("⟨lab⟩", " ", engine))
			}
		}
		if scheme != "" && sch != scheme {
			return Target{}, errorf("⟨lab⟩ %s: compare versions of one engine (postgres:15,postgres:18), not engines: run one engine at a time", lab)
		}
		if seen[one] {
			return Target{}, errorf("⟨lab⟩ %s: %s is given twice", lab, one)
		}
		seen[one] = true
		scheme = sch
	}
	if len(list) > 1 && scheme != "postgres" {
		return Target{}, errorf("⟨lab⟩ %s: only PostgreSQL versions can be compared", lab)
	}
	return Target{Lab: lab, Scheme: scheme, Redacted: raw, DefaultTLS: compare}, nil
}

// Labs lists the lab servers of the target, one per version compared.
func (t Target) Labs() []string {
	if t.Lab == "" {
		return nil
	}
	return strings.Split(t.Lab, ",")
}
