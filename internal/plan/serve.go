package plan

// Defaults of `tlsbench serve`'s listeners.
const (
	DefaultServeHTTP  = "127.0.0.1:8080"
	DefaultServeHTTPS = "127.0.0.1:8443"
	DefaultServeTLS   = "1.3"
)

// Serve is what `tlsbench serve` runs: the built-in server's listeners,
// keys and body size. Build it with NewServe, which applies defaults and
// validates.
type Serve struct {
	// Keys are the server keys, one HTTPS listener each (the first on
	// HTTPS); nil is DefaultKey.
	Keys []string
	// HTTP and HTTPS are listen addresses; "" given is none.
	HTTP, HTTPS string
	// Size is the response body in bytes (⟨response_size⟩, as the run's).
	Size int
	// TLSMax is the highest TLS version served: 1.2 or 1.3.
	TLSMax string
	// CertDir holds DIR/KEY.crt and .key to load instead of generated
	// certificates; ClientCA a CA whose client certificates the extra
	// mutual-TLS listeners demand.
	CertDir, ClientCA string
	givenFields
}

// NewServe fills defaults into raw and validates it.
func NewServe(raw Serve) (Serve, error) {
	s := raw
	if s.Keys == nil {
		s.Keys = []string{DefaultKey}
	}
	if s.HTTP == "" && !s.Given("http") {
		s.HTTP = DefaultServeHTTP
	}
	if s.HTTPS == "" && !s.Given("https") {
		s.HTTPS = DefaultServeHTTPS
	}
	if s.Size == 0 && !s.Given("response_size") {
		s.Size = DefaultSize
	}
	if s.TLSMax == "" {
		s.TLSMax = DefaultServeTLS
	}
	if s.TLSMax != "1.2" && s.TLSMax != "1.3" {
		return s, errorf("⟨tls_max⟩: %q is not 1.2 or 1.3", s.TLSMax)
	}
	if err := CheckSize(s.Size); err != nil {
		return s, err
	}
	if err := CheckKeys(s.Keys); err != nil {
		return s, err
	}
	if s.HTTPS != "" && len(s.Keys) == 0 {
		return s, errorf("⟨https⟩ needs at least one ⟨keys⟩")
	}
	if s.ClientCA != "" && s.HTTPS == "" {
		return s, errorf("⟨client_ca⟩ needs ⟨https⟩")
	}
	return s, nil
}

// Lab is what `tlsbench lab` starts: engines (as ⟨lab⟩ names them, and
// sshd), each with a certificate per key.
type Lab struct {
	Engines []string
	// Keys are the server keys, the first presented; nil is DefaultKey.
	Keys []string
}

// LabSSHD is the lab engine that is an SSH server, not a target.
const LabSSHD = "sshd"

// NewLab fills defaults into raw and validates every engine and key, so
// that a mistyped last engine fails before the first starts.
func NewLab(raw Lab) (Lab, error) {
	l := raw
	for _, e := range l.Engines {
		if e == LabSSHD {
			continue // no certificates
		}
		if _, err := ParseTarget("lab:" + e); err != nil {
			return l, err
		}
	}
	if l.Keys == nil {
		l.Keys = []string{DefaultKey}
	}
	return l, CheckKeys(l.Keys)
}
