package site

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// servers are the lab servers of a run that compares versions of one
// engine (--lab postgres:15,postgres:18): a Site each, chosen by the
// variant's Server.
type servers struct {
	order   []string
	byName  map[string]*Site
	current *Site // the server of the variant Before readied last
}

// openServers starts a Site per lab server t names and makes s their
// front: their CAs trusted at once, the variant's own server located.
func (s *Site) openServers(ctx context.Context, spec plan.Spec, t plan.Target) error {
	if slices.ContainsFunc(spec.Routes(), func(r plan.Route) bool { return r.Kind != plan.RouteDirect }) {
		return plan.Errorf("⟨via⟩ with several lab servers: compare paths on one server at a time")
	}
	all := &servers{byName: map[string]*Site{}}
	s.servers = all
	roots := x509.NewCertPool()
	var infos []result.Server
	for _, name := range t.Labs() {
		child, err := Open(ctx, spec.OnServer(name))
		if err != nil {
			return fmt.Errorf("lab %s: %w", name, err)
		}
		all.order = append(all.order, name)
		all.byName[name] = child
		if ca := child.srv.CAFile(); ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return err
			}
			roots.AppendCertsFromPEM(pem)
		}
		info := child.srv.Info()
		info.Lab = name
		infos = append(infos, info)
	}
	first := all.byName[all.order[0]]
	all.current = first
	s.tls = first.tls
	s.tls.RootCAs = roots
	s.target = result.Target{URL: spec.Target, Kind: "lab", Server: &infos[0], Servers: infos}
	s.direct = func(v plan.Variant) (bench.Endpoint, error) {
		child, err := all.of(v)
		if err != nil {
			return bench.Endpoint{}, err
		}
		return child.Locate(v)
	}
	return nil
}

func (all *servers) of(v plan.Variant) (*Site, error) {
	child, ok := all.byName[v.Server]
	if !ok {
		return nil, fmt.Errorf("variant %s: no lab server %q in this run", v.ID, v.Server)
	}
	return child, nil
}

// before readies the variant's server and makes it the one whose CPU and
// memory the trials read.
func (all *servers) before(ctx context.Context, v plan.Variant) error {
	child, err := all.of(v)
	if err != nil {
		return err
	}
	all.current = child
	return child.Before(ctx, v)
}

func (all *servers) cpu() (time.Duration, error) { return all.current.CPU() }

func (all *servers) memory() (int64, string, error) { return all.current.Memory() }

func (all *servers) alive() error {
	var errs []error
	for _, name := range all.order {
		if err := all.byName[name].Alive(); err != nil {
			errs = append(errs, fmt.Errorf("lab %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func (all *servers) notes() []string {
	var out []string
	for _, name := range all.order {
		for _, n := range all.byName[name].Notes() {
			out = append(out, name+": "+n)
		}
	}
	return out
}

func (all *servers) stop() error {
	var errs []error
	for _, name := range all.order {
		errs = append(errs, all.byName[name].Stop())
	}
	return errors.Join(errs...)
}
