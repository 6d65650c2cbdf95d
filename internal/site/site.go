// Package site is the run's topology: the built-in server, a lab server or
// a URL, the paths to it (SSH tunnels, stunnel, poolers, proxies, a VPN:
// one middle per --via kind), client certificates, and the CPUs the client
// and the servers get; it starts and stops what tlsbench runs itself.
package site

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// Site is where a run measures: how each variant reaches the target, and
// the server and tunnels tlsbench started for it. It is a bench.Site.
type Site struct {
	engine string // driver registry key
	target result.Target
	tls    tlsx.ClientOptions
	// srv is the server tlsbench started (built-in or lab), nil for a URL;
	// owned unless the caller started it (Attach).
	srv   lab.Server
	owned bool
	// direct finds a variant's endpoint before any tunnel.
	direct  func(v plan.Variant) (bench.Endpoint, error)
	tunnels *tunnels       // nil unless a variant goes through one
	servers *servers       // non-nil when the run compares lab servers
	vpn     *lab.WireGuard // built before the lab server, when a variant goes through it
	link    *lab.DelayLink // built before the server, when a variant crosses it (--rtt-via link)

	mu    sync.Mutex
	notes []string
	key   string // the key the server presents
	said  bool   // the key switch note is in notes
	// demanding is set while the lab server demands client certificates;
	// saidDemand once the note on how it switches is in notes.
	demanding, saidDemand bool
	// warnings are what the user should fix in the setup (Warnings).
	warnings []string
}

var _ bench.Site = (*Site)(nil)

// errNotNew refuses a spec plan.New did not make, which has no parsed
// target (one read from a result file).
var errNotNew = errors.New("site: the spec was not made by plan.New")

// StartsServers reports whether a run of spec starts servers of its own
// (the built-in one, a lab server, the lab's sshd, stunnel, a pooler, a
// proxy, a VPN), which is when lab directories a crashed run left behind
// matter.
func StartsServers(spec plan.Spec) bool {
	t := spec.ParsedTarget()
	return t.Builtin || t.Lab != "" || slices.ContainsFunc(spec.Routes(), plan.Route.StartsServer)
}

// builtinExe is the tlsbench binary the built-in server runs; "" is this
// one (tests set another).
var builtinExe string

// Open starts the server a spec made by plan.New asks for (builtin, --lab
// ENGINE), or prepares to reach the URL it names, and the tunnels of its
// --via entries. Stop undoes it.
func Open(ctx context.Context, spec plan.Spec) (*Site, error) {
	t := spec.ParsedTarget()
	if t.Engine() == "" {
		return nil, errNotNew
	}
	var err error
	s := &Site{engine: t.Engine(), owned: true}
	if t.Scheme == "http" || t.Scheme == "https" || t.Builtin {
		s.tls.ALPN = []string{"http/1.1"}
	}
	switch {
	case t.Builtin:
		o := lab.BuiltinOptions{Keys: spec.Keys, ResponseSize: spec.ResponseSize, ClientCerts: clientCertKeys(spec), Exe: builtinExe}
		if spec.LinkRTT() {
			if err = s.startLink(ctx); err != nil {
				break
			}
			o.Host = s.link.ServerAddr()
		}
		var srv *lab.Builtin
		if srv, err = lab.StartBuiltin(ctx, o); err != nil {
			err = fmt.Errorf("starting the built-in server: %w", err)
			break
		}
		err = s.serve(srv, spec)
	case len(t.Labs()) > 1:
		err = s.openServers(ctx, spec, t)
	case t.Lab != "":
		opts := lab.Options{Keys: spec.Keys, ClientCerts: clientCertKeys(spec), Connections: slices.Max(append([]int{0}, spec.Clients...))}
		if wantsWireGuard(spec) {
			if s.vpn, err = lab.StartWireGuard(ctx, lab.NewWireGuardNumber()); err != nil {
				err = fmt.Errorf("building the WireGuard tunnel for --via wireguard: %w", err)
				break
			}
			opts.Tunnel = s.vpn.Prefix()
		}
		if spec.LinkRTT() {
			if err = s.startLink(ctx); err != nil {
				break
			}
			opts.Tunnel = s.link.Prefix()
		}
		var srv lab.Server
		if srv, err = lab.Start(ctx, t.Lab, opts); err != nil {
			err = fmt.Errorf("starting the lab %s server: %w", t.Lab, err)
			break
		}
		err = s.serve(srv, spec)
	default:
		err = s.url(spec, t)
	}
	if err == nil {
		err = s.openTunnels(ctx, spec)
	}
	if err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Attach is the site of spec on a server the caller started, the built-in
// one or a lab server presenting spec's first key, with the tunnels of
// spec's --via entries; Stop leaves the server running.
func Attach(ctx context.Context, spec plan.Spec, srv lab.Server) (*Site, error) {
	if spec.LinkRTT() {
		return nil, errors.New("--rtt-via link: the server must be started behind the link, not attached")
	}
	s := &Site{engine: srv.Engine()}
	if t := spec.ParsedTarget(); t.Lab != "" {
		s.engine = t.Engine() // the driver's: mariadb speaks mysql
	}
	if srv.Engine() == "builtin" {
		s.tls.ALPN = []string{"http/1.1"}
	}
	if err := s.serve(srv, spec); err != nil {
		return nil, err
	}
	if err := s.openTunnels(ctx, spec); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// perKey is a server with an HTTPS listener per key (the built-in one):
// a variant finds its key's listener, and nothing is switched.
type perKey interface {
	Endpoint(key string) string // "" for the plain listener
}

// serve makes srv, started for spec, the site's server.
func (s *Site) serve(srv lab.Server, spec plan.Spec) error {
	s.srv = srv
	info := srv.Info()
	s.target = result.Target{URL: spec.Target, Kind: "lab", Server: &info}
	s.notes = append(s.notes, srv.Notes()...)
	s.tls.RootCAs = srv.RootCAs()
	s.key = spec.Keys[0]
	if err := s.labClientCerts(srv, spec); err != nil {
		return err
	}
	if pk, ok := srv.(perKey); ok {
		s.target.URL, s.target.Kind = plan.Builtin, "builtin"
		s.direct = func(v plan.Variant) (bench.Endpoint, error) {
			key := v.Key
			if v.Plain() {
				key = ""
			}
			if v.SendsClientCert() {
				return s.mtlsEndpoint(srv, key)
			}
			return bench.Endpoint{Addr: pk.Endpoint(key), Host: "127.0.0.1", CAFile: srv.CAFile()}, nil
		}
		return nil
	}
	s.direct = func(v plan.Variant) (bench.Endpoint, error) {
		raw, err := srv.URL(v.Auth, !v.Plain())
		if v.SendsClientCert() {
			raw, err = s.clientCertURL(srv, v)
		}
		if err != nil {
			return bench.Endpoint{}, err
		}
		u, err := url.Parse(raw)
		if err != nil {
			return bench.Endpoint{}, fmt.Errorf("lab %s URL: %s", srv.Engine(), plan.Redact(raw))
		}
		return bench.Endpoint{Addr: u.Host, Host: "127.0.0.1", URL: u, CAFile: srv.CAFile()}, nil
	}
	return nil
}

func (s *Site) url(spec plan.Spec, t plan.Target) error {
	s.target = result.Target{URL: spec.Target, Kind: t.Scheme}
	if spec.CAFile != "" {
		roots, err := tlsx.LoadCAFile(spec.CAFile)
		if err != nil {
			return plan.Errorf("⟨ca_file⟩: %v", err)
		}
		s.tls.RootCAs = roots
	}
	s.tls.Insecure = spec.Insecure
	if err := s.urlClientCert(spec, t); err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(t.Host)
	// spec.Target is the redacted URL; the parsed one holds the
	// credentials.
	u := t.URL()
	s.direct = func(plan.Variant) (bench.Endpoint, error) {
		return bench.Endpoint{Addr: t.Host, Host: host, URL: u}, nil
	}
	return nil
}

// Engine is the driver registry key.
func (s *Site) Engine() string { return s.engine }

// Target describes what is measured, for the result.
func (s *Site) Target() result.Target { return s.target }

// ClientTLS is what every TLS variant's client trusts and offers.
func (s *Site) ClientTLS() tlsx.ClientOptions { return s.tls }

// Locate finds the endpoint of a variant: the server's, or its tunnel's.
func (s *Site) Locate(v plan.Variant) (bench.Endpoint, error) {
	ep, err := s.direct(v)
	if err == nil && v.RTTVia == plan.RTTViaLink {
		return s.viaLink(ep)
	}
	if err != nil || v.Route == (plan.RouteInfo{}) || s.tunnels == nil {
		return ep, err
	}
	return s.tunnels.route(v, ep)
}

// Before readies the server for variant v: a lab server presents one
// certificate at a time, so it is switched when a variant with another key
// comes up, and a note says once how it is done. The built-in server (a
// listener per key) and a URL need nothing.
func (s *Site) Before(ctx context.Context, v plan.Variant) error {
	if s.servers != nil {
		return s.servers.before(ctx, v)
	}
	if err := s.linkRTT(ctx, v); err != nil {
		return err
	}
	if s.srv == nil || v.Plain() {
		return nil
	}
	if err := s.demandClientCert(ctx, v); err != nil {
		return err
	}
	if _, ok := s.srv.(perKey); ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v.Key == s.key {
		return nil
	}
	how, err := s.srv.UseKey(ctx, v.Key)
	if err != nil {
		return fmt.Errorf("switching the server to its %s certificate: %w", v.Key, err)
	}
	s.key = v.Key
	if !s.said {
		s.said = true
		s.notes = append(s.notes, "server keys switched between variants: "+how)
	}
	return nil
}

// CPU is the CPU time the server tlsbench started has used so far, with
// its tunnels' far ends (they run beside it); bench.ErrNoServerCPU for a
// URL target.
func (s *Site) CPU() (time.Duration, error) {
	if s.servers != nil {
		return s.servers.cpu()
	}
	if s.srv == nil {
		return 0, bench.ErrNoServerCPU
	}
	d, err := s.srv.CPU()
	if err != nil || s.tunnels == nil {
		return d, err
	}
	more, err := s.tunnels.serverCPU()
	return d + more, err
}

// Memory is what the processes of the server tlsbench started hold in
// memory now (not its tunnels'), and whether that is PSS or RSS;
// bench.ErrNoServerCPU for a URL target.
func (s *Site) Memory() (int64, string, error) {
	if s.servers != nil {
		return s.servers.memory()
	}
	if s.srv == nil {
		return 0, "", bench.ErrNoServerCPU
	}
	m, err := s.srv.Memory()
	return m.Bytes, m.Kind, err
}

// Alive reports why the server or a tunnel tlsbench started is gone, if
// one is.
func (s *Site) Alive() error {
	var errs []error
	if s.servers != nil {
		errs = append(errs, s.servers.alive())
	}
	if s.srv != nil {
		errs = append(errs, s.srv.Alive())
	}
	if s.tunnels != nil {
		errs = append(errs, s.tunnels.alive())
	}
	errs = append(errs, s.linkAlive())
	return errors.Join(errs...)
}

// Notes are facts about the server and the tunnels a reader of the
// figures needs, and how the server switched keys, once it did.
func (s *Site) Notes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.servers != nil {
		return append(slices.Clone(s.notes), s.servers.notes()...)
	}
	return append(slices.Clone(s.notes), s.linkNotes()...)
}

// Tunnels describes the tunnels for the result: nil without any.
func (s *Site) Tunnels() []result.Tunnel {
	if s.tunnels == nil {
		return nil
	}
	return s.tunnels.results()
}

// Stop closes the tunnels and stops the server Open started, removing
// their keys; safe to call more than once.
func (s *Site) Stop() error {
	if s.servers != nil {
		return s.servers.stop()
	}
	if s.tunnels != nil {
		s.tunnels.close()
	}
	var err error
	if s.srv != nil && s.owned {
		err = s.srv.Stop()
	}
	if s.vpn != nil {
		err = errors.Join(err, s.vpn.Stop())
	}
	if s.link != nil {
		err = errors.Join(err, s.link.Stop())
	}
	return err
}
