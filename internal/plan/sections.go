package plan

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The sections of New (see newSpec): each fills the defaults of its own
// fields and validates them. The larger ones live beside their topic
// (perConn, storm, rate, shard, checkVia, workload, clientCerts ...).

// parseTarget parses the target (or the lab) once, into s.target, which
// the later sections read.
func (s *Spec) parseTarget() error {
	if s.Lab != "" {
		if s.Target != "" && s.Target != "lab:"+s.Lab {
			return errorf("give a TARGET or ⟨lab⟩ %s, not both", s.Lab)
		}
		s.Target = "lab:" + s.Lab
	}
	if s.Target == "" {
		s.Target = Builtin
	}
	t, err := ParseTarget(s.Target)
	if err != nil {
		return err
	}
	s.target = t
	if s.Preset == PresetMongoDBSeed && t.Engine() != "mongodb" {
		return errorf("⟨preset⟩ %s replays a MongoDB study: give a mongodb:// URL or ⟨lab⟩ mongodb", s.Preset)
	}
	return nil
}

// tlsModes fills the target's default TLS modes (Target.DefaultTLS) and
// checks the given ones against the target.
func (s *Spec) tlsModes() error {
	t := s.target
	if len(s.TLS) == 0 {
		s.TLS, s.TLSByDefault = t.DefaultTLS, !t.Builtin && t.Lab == ""
	}
	for i, m := range s.TLS {
		if !slices.Contains(TLSModes, m) {
			return errorf("⟨tls⟩: unknown mode %q: use off, 1.2, 1.3 or auto", m)
		}
		if slices.Contains(s.TLS[:i], m) {
			return errTwice("⟨tls⟩", m)
		}
		if t.Scheme == "http" && m != "off" {
			return errorf("⟨tls⟩ %s: %s is plain HTTP: use an https:// URL for TLS", m, t.Redacted)
		}
		if t.Scheme == "https" && m == "off" {
			return errorf("⟨tls⟩ off: %s is an https:// URL: use an http:// URL for the plain variant", t.Redacted)
		}
		// A Redis server takes TLS and plaintext on different ports: one
		// URL is one of them.
		if t.Scheme == "redis" && t.Lab == "" && (m == "off") != (t.DefaultTLS[0] == "off") {
			return errorf("⟨tls⟩ %s: %s serves one of plaintext (redis://) or TLS (rediss://): give the URL of the port you want, or use ⟨lab⟩ redis to compare", m, t.Redacted)
		}
	}
	return nil
}

// authMethods checks the lab's auth dimension.
func (s *Spec) authMethods() error {
	if len(s.Auth) > 0 && s.target.Lab == "" {
		return errorf("⟨auth⟩ applies to lab servers only (⟨lab⟩ ENGINE): against a URL, the URL's user decides the method")
	}
	return twice("⟨auth⟩", s.Auth, func(a string) string { return a })
}

// resumption fills the default: no session resumption.
func (s *Spec) resumption() error {
	if len(s.Resume) == 0 {
		s.Resume = []bool{false}
	}
	return twice("⟨resume⟩", s.Resume, func(r bool) string { return map[bool]string{false: "off", true: "on"}[r] })
}

// cipherSuites checks the TLS 1.2 suites by their IANA names (or Go's).
func (s *Spec) cipherSuites() error {
	for _, c := range s.Ciphers {
		if _, ok := CipherSuite(c); !ok {
			if near, ok := nearestECDHE(c); ok {
				return errorf("⟨ciphers⟩ %s: Go's TLS has no finite-field DHE suites: the nearest it has is %s", c, near)
			}
			return errorf("⟨ciphers⟩: unknown TLS 1.2 cipher suite %q: use an IANA name such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", c)
		}
	}
	suites := make([]string, len(s.Ciphers))
	for i, c := range s.Ciphers {
		cs, _ := CipherSuite(c)
		suites[i] = cs.Name
	}
	if err := twice("⟨ciphers⟩", suites, func(c string) string { return c }); err != nil {
		return err
	}
	if len(s.Ciphers) > 0 && !slices.Contains(s.TLS, "1.2") {
		return errorf("⟨ciphers⟩ applies to TLS 1.2 only: add 1.2 to ⟨tls⟩")
	}
	return nil
}

// keyExchange spells the groups as Groups does and checks them against
// the TLS modes.
func (s *Spec) keyExchange() error {
	for i, g := range s.Groups {
		name, ok := GroupName(g)
		if strings.EqualFold(g, GroupDefault) {
			name, ok = GroupDefault, true
		}
		if !ok {
			return errorf("⟨groups⟩: unknown key-exchange group %q: use %s or %s (Go's curve names work too)", g, strings.Join(Groups, ", "), GroupDefault)
		}
		s.Groups[i] = name
	}
	if err := twice("⟨groups⟩", s.Groups, func(g string) string { return g }); err != nil {
		return err
	}
	if len(s.Groups) > 0 && !slices.ContainsFunc(s.TLS, func(m string) bool { return m != "off" }) {
		return errorf("⟨groups⟩ applies to TLS variants: add 1.2, 1.3 or auto to ⟨tls⟩")
	}
	if slices.Equal(s.Groups, []string{GroupX25519MLKEM768}) && !slices.Contains(s.TLS, "1.3") && !slices.Contains(s.TLS, "auto") {
		return errorf("⟨groups⟩ %s is a TLS 1.3 group: add 1.3 to ⟨tls⟩", GroupX25519MLKEM768)
	}
	return nil
}

// serverKeys fills DefaultKey for the servers tlsbench starts and refuses
// keys for the others.
func (s *Spec) serverKeys() error {
	t := s.target
	if !t.Builtin && t.Lab == "" {
		if len(s.Keys) > 0 {
			return errorf("⟨keys⟩ applies to servers tlsbench starts (builtin, ⟨lab⟩ ENGINE) only: an external server presents its own key, which tlsbench records")
		}
		return nil
	}
	if len(s.Keys) == 0 {
		s.Keys = []string{DefaultKey}
	}
	if err := CheckKeys(s.Keys); err != nil {
		return err
	}
	if s.CAFile != "" {
		return errorf("⟨ca_file⟩ applies to URL targets: tlsbench verifies the servers it starts with the CA it made for them")
	}
	return nil
}

// CheckKeys refuses an unknown key type and one given twice (⟨keys⟩: the
// run's, serve's and lab's --key).
func CheckKeys(keys []string) error {
	for _, k := range keys {
		if !slices.Contains(KeyTypes, k) {
			return errorf("⟨keys⟩: unknown key type %q: use one of %s", k, strings.Join(KeyTypes, ", "))
		}
	}
	return twice("⟨keys⟩", keys, func(k string) string { return k })
}

// trust fills how the server is verified: the client certificates, the
// URL's own CA file and its no-verification modes.
func (s *Spec) trust() error {
	t := s.target
	if err := s.clientCerts(t); err != nil {
		return err
	}
	if s.CAFile == "" {
		s.CAFile = t.CAFile // the URL's own (tlsCAFile=, sslrootcert=, ssl-ca=); --ca wins
	}
	if t.Insecure && s.CAFile == "" {
		// The URL asked for encryption without verification (sslmode=require,
		// tls=skip-verify), as its client library would.
		s.Insecure = true
	}
	if s.Insecure && s.CAFile != "" {
		return errorf("⟨ca_file⟩ and ⟨insecure⟩ exclude each other: keep ⟨ca_file⟩ to verify the server")
	}
	return nil
}

// loadShape fills the concurrency and checks it, the emulated and the
// predicted round-trip times and the count.
func (s *Spec) loadShape() error {
	if len(s.Concurrency) == 0 {
		s.Concurrency = []int{DefaultConcurrency}
	}
	for _, c := range s.Concurrency {
		if c < 1 || c > MaxConnections {
			return errorf("⟨concurrency⟩: %d is out of range: use 1 to %d", c, MaxConnections)
		}
	}
	if err := twice("⟨concurrency⟩", s.Concurrency, strconv.Itoa); err != nil {
		return err
	}
	if err := ensureFiles("⟨concurrency⟩", slices.Max(s.Concurrency)); err != nil {
		return err
	}
	for _, r := range s.RTT {
		if r < 0 || r > MaxRTT {
			return errorf("⟨rtt⟩: %v is out of range: use 0 to %v", r, MaxRTT)
		}
	}
	if err := twice("⟨rtt⟩", s.RTT, time.Duration.String); err != nil {
		return err
	}
	for _, r := range s.PredictRTT {
		if r < time.Microsecond || r > MaxRTT {
			return errorf("⟨predict_rtt⟩: %v is out of range: use 1µs to %v", r, MaxRTT)
		}
	}
	if err := twice("⟨predict_rtt⟩", s.PredictRTT, time.Duration.String); err != nil {
		return err
	}
	if len(s.PredictRTT) > 0 {
		if !slices.Contains(s.Experiments, Connect) {
			return errorf("⟨predict_rtt⟩ predicts connection setup: it needs the connect experiment")
		}
		if len(s.RTT) > 0 && !slices.Contains(s.RTT, 0) {
			return errorf("⟨predict_rtt⟩ predicts from the bare link: add 0 to ⟨rtt⟩")
		}
	}
	if s.Count < 0 {
		return errorf("⟨count⟩: %d is negative: use a positive count of operations", s.Count)
	}
	return nil
}

// limits fills the bounds of each trial and operation: warm-up,
// duration, timeout, trials and the error rate.
func (s *Spec) limits() error {
	if s.Warmup == nil {
		warmup := DefaultWarmup
		s.Warmup = &warmup
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
	if err := s.scriptTimeout(); err != nil {
		return err
	}
	if len(s.RTT) > 0 {
		if rtt := slices.Max(s.RTT); s.Timeout < TimeoutRTTs*rtt {
			return errorf("⟨timeout⟩ %s is too short for ⟨rtt⟩ %s: a connection takes about 8 round trips: give ⟨timeout⟩ %s or more",
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
		return errorf("⟨max_error_rate⟩: %v is out of range: use 0%% to 100%%", r)
	}
	if s.Trials < 1 || s.Trials > 1000 {
		return errorf("⟨trials⟩: %d is out of range: use 1 to 1000", s.Trials)
	}
	return nil
}

// source fills and parses the client's source address.
func (s *Spec) source() error {
	switch s.Source {
	case "":
		s.Source = SourceAuto
	case SourceAuto, SourceSpread:
	default:
		a, err := netip.ParseAddr(s.Source)
		if err != nil || a.Zone() != "" {
			return errorf("⟨source⟩ %q: use auto, spread or an IP address of this machine (e.g. 127.0.0.1)", s.Source)
		}
		s.Source, s.sourceAddr = a.String(), a
	}
	return nil
}

// response fills the built-in server's body size and the HTTP path.
func (s *Spec) response() error {
	if s.ResponseSize == 0 {
		s.ResponseSize = DefaultSize
	}
	if err := CheckSize(s.ResponseSize); err != nil {
		return err
	}
	if s.Path == "" {
		s.Path = "/"
		if s.target.Path != "" {
			s.Path = s.target.Path
		}
	}
	return nil
}

// CheckSize bounds a response body size (⟨response_size⟩: the run's and
// serve's --size).
func CheckSize(n int) error {
	if n < 0 || n > 1<<30 {
		return errorf("⟨response_size⟩: %d is out of range: use 0 to 1 GiB", n)
	}
	return nil
}

// variantsLeft refuses a matrix that the cipher and key filters empty.
func (s *Spec) variantsLeft() error {
	if len(s.Variants()) == 0 {
		return errorf("no variant left: every ⟨ciphers⟩ excludes every ⟨keys⟩ (an RSA suite needs an RSA key, an ECDSA suite an ECDSA or Ed25519 key)")
	}
	return nil
}
