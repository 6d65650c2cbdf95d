package site

import (
	"context"
	"time"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// A middle is what tlsbench starts between the client and the server for
// the variants of one --via entry: a stunnel pair, a pooler, a proxy, a
// tunnel's client, a VPN. Its processes run beside the server, so their
// CPU counts as the server's.
type middle interface {
	// Route is where variant v's connections go instead of ep, the
	// server's endpoint as v would reach it directly.
	Route(v plan.Variant, ep bench.Endpoint) (bench.Endpoint, error)
	// CPU is the CPU time the middle's processes have used so far.
	CPU() (time.Duration, error)
	// Alive reports why a process of the middle is gone, naming it and
	// quoting its log.
	Alive() error
	// Results describe the middle for the result file.
	Results() []result.Tunnel
	// Notes are facts a reader of the figures needs, said once per run.
	Notes() []string
	// Stop stops its processes and removes their files; safe to call
	// more than once.
	Stop() error
}

// middleStarters start the middle of a --via kind for the variants vs that
// go through the entry via; kinds register themselves from their own file.
var middleStarters = map[string]func(ctx context.Context, s *Site, via plan.Route, vs []plan.Variant) (middle, error){}

// through is ep sent to an intermediary at addr instead (the URL's
// credentials and database kept), and what the server itself then sees:
// TLS or not.
func through(ep bench.Endpoint, addr string, serverTLS bool) bench.Endpoint {
	ep = at(ep, addr)
	ep.ServerTLS = &serverTLS
	return ep
}

// at is ep dialed at addr instead, the URL's credentials and database kept.
func at(ep bench.Endpoint, addr string) bench.Endpoint {
	ep.Addr = addr
	if ep.URL != nil {
		u := *ep.URL
		u.Host = addr
		ep.URL = &u
	}
	return ep
}
