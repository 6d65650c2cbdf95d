// Package server is the built-in HTTPS/HTTP target: fixed-size responses
// over HTTP/1.1, its throw-away certificates and the ready line it prints.
package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// Config describes the listeners and responses of a Server.
type Config struct {
	// HTTPAddr is the plain listener, e.g. "127.0.0.1:0"; "" for none.
	HTTPAddr string
	// HTTPSAddr is the host:port of the first HTTPS listener; the others
	// listen on port 0 of the same host. "" for no HTTPS.
	HTTPSAddr string
	// Certs maps a key type to its certificate; one HTTPS listener each.
	Certs map[string]tls.Certificate
	// Keys orders the HTTPS listeners (the first gets HTTPSAddr); nil
	// orders them as plan.KeyTypes, then by name.
	Keys []string
	// ResponseSize is the size in bytes of every response body.
	ResponseSize int
	// MaxTLS is the highest TLS version served; 0 means TLS 1.3.
	MaxTLS uint16
	// ClientCAs, when set, adds for each key an HTTPS listener that
	// demands a client certificate signed by one of them
	// (tls.RequireAndVerifyClientCert), beside the one that asks for none.
	ClientCAs *x509.CertPool
	// Log receives net/http's connection errors (e.g. failed handshakes);
	// nil discards them.
	Log io.Writer
	// Check, if set, sees every request before it is answered (its body
	// unread) and returns its status: 0 or 200 answers with the body,
	// another status with none. Tests read what reached the server with it.
	Check func(*http.Request) int
}

// Server is a running built-in server.
type Server struct {
	httpAddr   string
	httpsAddrs map[string]string
	mtlsAddrs  map[string]string // the client-certificate listeners, by key
	servers    []*http.Server
	done       sync.WaitGroup
	closeOnce  sync.Once
	closeErr   error
}

// Timeouts bound clients that stall; they are far above any measured
// operation, so they never shape a result.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 5 * time.Minute
)

// Start opens the listeners and serves them; they accept connections when it
// returns.
func Start(cfg Config) (*Server, error) {
	if cfg.ResponseSize < 0 {
		return nil, fmt.Errorf("response size %d is negative", cfg.ResponseSize)
	}
	keys, err := listenerOrder(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.HTTPAddr == "" && len(keys) == 0 {
		return nil, errors.New("nothing to serve: give an HTTP address or an HTTPS address and a certificate")
	}
	maxTLS := cfg.MaxTLS
	if maxTLS == 0 {
		maxTLS = tls.VersionTLS13
	}
	if maxTLS != tls.VersionTLS12 && maxTLS != tls.VersionTLS13 {
		return nil, fmt.Errorf("maximum TLS version %s is not supported: use TLS 1.2 or 1.3", tls.VersionName(maxTLS))
	}
	logger := log.New(io.Discard, "", 0)
	if cfg.Log != nil {
		logger = log.New(cfg.Log, "", log.LstdFlags)
	}
	h := newHandler(cfg.ResponseSize)
	h.check = cfg.Check

	s := &Server{httpsAddrs: map[string]string{}, mtlsAddrs: map[string]string{}}
	var lns []net.Listener
	fail := func(err error) (*Server, error) {
		for _, ln := range lns {
			ln.Close()
		}
		return nil, err
	}
	if cfg.HTTPAddr != "" {
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return fail(fmt.Errorf("HTTP listener: %w", err))
		}
		lns = append(lns, ln)
		s.httpAddr = ln.Addr().String()
		s.servers = append(s.servers, newHTTPServer(h, logger))
	}
	if len(keys) > 0 {
		host, _, err := net.SplitHostPort(cfg.HTTPSAddr)
		if err != nil {
			return fail(fmt.Errorf("HTTPS address %q: %w", cfg.HTTPSAddr, err))
		}
		for i, k := range keys {
			addr := cfg.HTTPSAddr
			if i > 0 {
				addr = net.JoinHostPort(host, "0")
			}
			ln, err := s.listenTLS(addr, cfg, k, maxTLS, nil)
			if err != nil {
				return fail(fmt.Errorf("HTTPS listener for %s: %w", k, err))
			}
			lns = append(lns, ln)
			s.httpsAddrs[k] = ln.Addr().String()
			s.servers = append(s.servers, newHTTPServer(h, logger))
			if cfg.ClientCAs == nil {
				continue
			}
			ln, err = s.listenTLS(net.JoinHostPort(host, "0"), cfg, k, maxTLS, cfg.ClientCAs)
			if err != nil {
				return fail(fmt.Errorf("HTTPS listener for %s with client certificates: %w", k, err))
			}
			lns = append(lns, ln)
			s.mtlsAddrs[k] = ln.Addr().String()
			s.servers = append(s.servers, newHTTPServer(h, logger))
		}
	}
	for i, srv := range s.servers {
		s.done.Go(func() { srv.Serve(lns[i]) })
	}
	return s, nil
}

// listenTLS opens an HTTPS listener presenting key k's certificate; with
// clientCAs it demands a client certificate signed by one of them.
func (s *Server) listenTLS(addr string, cfg Config, k string, maxTLS uint16, clientCAs *x509.CertPool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	// One tls.Config per listener, so that each has its own session ticket
	// keys: a ticket issued under one key type must not resume on another's
	// listener.
	tcfg := &tls.Config{
		Certificates: []tls.Certificate{cfg.Certs[k]},
		MinVersion:   tls.VersionTLS12,
		MaxVersion:   maxTLS,
		CipherSuites: tls12Suites(),
		NextProtos:   []string{"http/1.1"},
	}
	if clientCAs != nil {
		tcfg.ClientAuth, tcfg.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs
	}
	return tls.NewListener(ln, tcfg), nil
}

// listenerOrder returns the key types of the HTTPS listeners, first first.
func listenerOrder(cfg Config) ([]string, error) {
	if cfg.HTTPSAddr == "" {
		return nil, nil
	}
	if len(cfg.Certs) == 0 {
		return nil, fmt.Errorf("HTTPS address %s given without a certificate", cfg.HTTPSAddr)
	}
	if cfg.Keys != nil {
		if len(cfg.Keys) != len(cfg.Certs) {
			return nil, fmt.Errorf("%d keys ordered for %d certificates", len(cfg.Keys), len(cfg.Certs))
		}
		for _, k := range cfg.Keys {
			if _, ok := cfg.Certs[k]; !ok {
				return nil, fmt.Errorf("no certificate for key type %q", k)
			}
		}
		return cfg.Keys, nil
	}
	keys := slices.Collect(maps.Keys(cfg.Certs))
	rank := func(k string) int {
		if i := slices.Index(plan.KeyTypes, k); i >= 0 {
			return i
		}
		return len(plan.KeyTypes)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		if a < b {
			return -1
		}
		return 1
	})
	return keys, nil
}

// tls12Suites enables every TLS 1.2 suite Go implements, including those it
// leaves out by default, so that any --cipher can be measured. A client that
// does not ask for a weak suite still gets Go's preferred one.
func tls12Suites() []uint16 {
	var ids []uint16
	for _, list := range [][]*tls.CipherSuite{tls.CipherSuites(), tls.InsecureCipherSuites()} {
		for _, cs := range list {
			if slices.Contains(cs.SupportedVersions, tls.VersionTLS12) {
				ids = append(ids, cs.ID)
			}
		}
	}
	return ids
}

func newHTTPServer(h http.Handler, logger *log.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		// A non-nil empty map turns HTTP/2 off: HTTP/1.1 only.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ErrorLog:     logger,
	}
}

// handler answers every request with the same preallocated body; its
// headers are precomputed so that it allocates as little as net/http lets it.
type handler struct {
	body   []byte
	length []string
	ctype  []string
	check  func(*http.Request) int
}

func newHandler(size int) *handler {
	body := make([]byte, size)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	return &handler{
		body:   body,
		length: []string{strconv.Itoa(size)},
		// Set, so that net/http does not sniff the body.
		ctype: []string{"application/octet-stream"},
	}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.check != nil {
		if code := h.check(r); code != 0 && code != http.StatusOK {
			w.WriteHeader(code)
			return
		}
	}
	hdr := w.Header()
	hdr["Content-Length"] = h.length
	hdr["Content-Type"] = h.ctype
	w.WriteHeader(http.StatusOK)
	w.Write(h.body)
}

// HTTPAddr is the plain listener's host:port, "" if there is none.
func (s *Server) HTTPAddr() string { return s.httpAddr }

// HTTPSAddrs maps each key type to its listener's host:port.
func (s *Server) HTTPSAddrs() map[string]string { return maps.Clone(s.httpsAddrs) }

// MTLSAddrs maps each key type to its listener that demands a client
// certificate (Config.ClientCAs); nil without.
func (s *Server) MTLSAddrs() map[string]string {
	if len(s.mtlsAddrs) == 0 {
		return nil
	}
	return maps.Clone(s.mtlsAddrs)
}

// Close closes the listeners and all connections and waits for the serving
// goroutines to end. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		for _, srv := range s.servers {
			errs = append(errs, srv.Close())
		}
		s.done.Wait()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
