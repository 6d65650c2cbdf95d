package site

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

func init() { middleStarters[plan.RoutePgbouncer] = startPgbouncer }

// pgbouncer is one PgBouncer per server key its TLS variants present (it
// has one certificate), the first also taking the plain variants.
type pgbouncer struct {
	label     string
	settings  plan.Pgbouncer
	instances map[string]*lab.PgBouncer // by key; "" when no variant uses TLS
	order     []string
}

func startPgbouncer(ctx context.Context, s *Site, via plan.Route, vs []plan.Variant) (middle, error) {
	if s.srv == nil || s.srv.Engine() != "postgres" {
		return nil, errors.New("pgbouncer needs the lab PostgreSQL server")
	}
	set := plan.PgbouncerOf(via)
	users := map[string]string{}
	var server *url.URL
	var password string
	for _, auth := range s.srv.Auths() {
		raw, err := s.srv.URL(auth, false)
		if err != nil {
			return nil, err
		}
		u, err := url.Parse(raw)
		if err != nil {
			return nil, errors.New("the lab server's URL does not parse")
		}
		users[u.User.Username()] = auth
		password, _ = u.User.Password()
		if server == nil {
			server = u
		}
	}
	var keys []string
	for _, v := range vs {
		if !v.Plain() {
			keys = appendNew(keys, v.Key)
		}
	}
	if len(keys) == 0 {
		keys = []string{""}
	}
	b := &pgbouncer{label: via.Label(), settings: set, instances: map[string]*lab.PgBouncer{}}
	ca := ""
	if set.ServerTLS == "verify-ca" || set.ServerTLS == "verify-full" {
		ca = s.srv.CAFile()
	}
	for _, k := range keys {
		inst, err := lab.StartPgbouncer(ctx, lab.PgbouncerOptions{Server: server, Users: users, Password: password,
			Key: k, CertDir: filepath.Dir(s.srv.CAFile()), CAFile: ca,
			PoolMode: set.PoolMode, ServerTLS: set.ServerTLS, PoolSize: set.PoolSize})
		if err != nil {
			b.Stop()
			return nil, err
		}
		b.instances[k] = inst
		b.order = append(b.order, k)
	}
	return b, nil
}

// Route sends a variant to the PgBouncer of its key, the same database
// and user.
func (b *pgbouncer) Route(v plan.Variant, ep bench.Endpoint) (bench.Endpoint, error) {
	key := v.Key
	if v.Plain() {
		key = b.order[0]
	}
	inst, ok := b.instances[key]
	if !ok {
		return ep, fmt.Errorf("no PgBouncer presents a %s certificate", key)
	}
	return through(ep, inst.Addr(), b.settings.ServerTLS != "disable"), nil
}

func (b *pgbouncer) CPU() (time.Duration, error) {
	var d time.Duration
	for _, k := range b.order {
		c, err := b.instances[k].CPU()
		if err != nil {
			return 0, err
		}
		d += c
	}
	return d, nil
}

func (b *pgbouncer) Alive() error {
	for _, k := range b.order {
		if err := b.instances[k].Alive(); err != nil {
			return err
		}
	}
	return nil
}

func (b *pgbouncer) Results() []result.Tunnel {
	var out []result.Tunnel
	for _, k := range b.order {
		info := b.instances[k].Info()
		out = append(out, result.Tunnel{Label: b.label, Addr: b.instances[k].Addr(), Server: "PgBouncer " + info.Version, Settings: info.Settings})
	}
	return out
}

func (b *pgbouncer) Notes() []string {
	set := b.settings
	where := "clients reach it with each variant's TLS (client_tls_sslmode allow, the lab certificate of the variant's key)"
	if set.Local {
		where = "the local pooler: clients reach it in plaintext, as an application on the same host would"
	}
	return []string{fmt.Sprintf("%s: Debian's PgBouncer %s before the lab PostgreSQL; %s; it keeps at most %d server connections per user (default_pool_size), pool_mode %s, server_tls_sslmode %s; the server's own view of TLS is PgBouncer's connection; server CPU includes PgBouncer's",
		b.label, b.instances[b.order[0]].Info().Version, where, set.PoolSize, set.PoolMode, set.ServerTLS)}
}

func (b *pgbouncer) Stop() error {
	var errs []error
	for _, k := range b.order {
		errs = append(errs, b.instances[k].Stop())
	}
	return errors.Join(errs...)
}
