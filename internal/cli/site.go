package cli

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// site is where a run measures: how each variant reaches the target, and
// the server, when tlsbench started it.
type site struct {
	engine string // driver registry key
	locate bench.Locate
	tls    tlsx.ClientOptions
	target result.Target
	notes  []string
	cpu    func() (time.Duration, error) // nil unless tlsbench runs the server
	before func(ctx context.Context, v plan.Variant) error
	// alive reports why the server is gone, if tlsbench started it.
	alive func() error
	stop  func()
	// tunnels, when a variant goes through one, are described in the
	// result.
	tunnels *tunnels
}

// openSite starts the server a spec asks for (builtin, --lab ENGINE) or
// prepares to reach the URL it names.
func openSite(ctx context.Context, spec plan.Spec) (*site, error) {
	t, err := plan.ParseTarget(spec.Target)
	if err != nil {
		return nil, err
	}
	s := &site{engine: t.Engine(), stop: func() {}, alive: func() error { return nil }}
	if t.Scheme == "http" || t.Scheme == "https" || t.Builtin {
		s.tls.ALPN = []string{"http/1.1"}
	}
	switch {
	case t.Builtin:
		err = s.builtin(ctx, spec)
	case t.Lab != "":
		err = s.lab(ctx, spec, t)
	default:
		err = s.url(spec, t)
	}
	if err == nil {
		err = s.openTunnels(ctx, spec)
	}
	if err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *site) builtin(ctx context.Context, spec plan.Spec) error {
	srv, err := lab.StartBuiltin(ctx, lab.BuiltinOptions{Keys: spec.Keys, ResponseSize: spec.ResponseSize})
	if err != nil {
		return fmt.Errorf("starting the built-in server: %w", err)
	}
	s.stop = func() { srv.Stop() }
	info := srv.Info()
	s.target = result.Target{URL: plan.Builtin, Kind: "builtin", Server: &info}
	s.cpu = srv.CPU
	s.alive = func() error { _, err := srv.CPU(); return err }
	s.tls.RootCAs = srv.RootCAs()
	s.locate = func(v plan.Variant) (bench.Endpoint, error) {
		key := v.Key
		if v.Plain() {
			key = ""
		}
		return bench.Endpoint{Addr: srv.Endpoint(key), Host: "127.0.0.1"}, nil
	}
	return nil
}

func (s *site) lab(ctx context.Context, spec plan.Spec, t plan.Target) error {
	srv, err := lab.Start(ctx, t.Lab, lab.Options{Keys: spec.Keys})
	if err != nil {
		return fmt.Errorf("starting the lab %s server: %w", t.Lab, err)
	}
	s.stop = func() { srv.Stop() }
	info := srv.Info()
	s.target = result.Target{URL: spec.Target, Kind: "lab", Server: &info}
	s.notes = srv.Notes()
	s.cpu = srv.CPU
	s.alive = func() error { _, err := srv.CPU(); return err }
	s.tls.RootCAs = srv.RootCAs()
	s.locate = func(v plan.Variant) (bench.Endpoint, error) {
		raw, err := srv.URL(v.Auth, !v.Plain())
		if err != nil {
			return bench.Endpoint{}, err
		}
		u, err := url.Parse(raw)
		if err != nil {
			return bench.Endpoint{}, fmt.Errorf("lab %s URL: %s", t.Lab, plan.Redact(raw))
		}
		return bench.Endpoint{Addr: u.Host, Host: "127.0.0.1", URL: u}, nil
	}
	// The server presents one certificate at a time: switch it when a
	// variant with another key comes up, and say once how it is done.
	var mu sync.Mutex
	current, said := spec.Keys[0], false
	s.before = func(ctx context.Context, v plan.Variant) error {
		if v.Plain() || v.Key == current {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		how, err := srv.UseKey(ctx, v.Key)
		if err != nil {
			return fmt.Errorf("switching the server to its %s certificate: %w", v.Key, err)
		}
		current = v.Key
		if !said {
			said = true
			s.notes = append(s.notes, "server keys switched between variants: "+how)
		}
		return nil
	}
	return nil
}

func (s *site) url(spec plan.Spec, t plan.Target) error {
	s.target = result.Target{URL: spec.Target, Kind: t.Scheme}
	if spec.CAFile != "" {
		roots, err := tlsx.LoadCAFile(spec.CAFile)
		if err != nil {
			return usageError{fmt.Errorf("--ca: %w", err)}
		}
		s.tls.RootCAs = roots
	}
	s.tls.Insecure = spec.Insecure
	host, _, _ := net.SplitHostPort(t.Host)
	// The spec holds the redacted URL; the credentials are only in the
	// process's own copy.
	u, err := url.Parse(spec.SecretURL())
	if err != nil {
		return err
	}
	s.locate = func(plan.Variant) (bench.Endpoint, error) {
		return bench.Endpoint{Addr: t.Host, Host: host, URL: u}, nil
	}
	return nil
}
