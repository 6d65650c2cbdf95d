package bench

import (
	"context"
	"errors"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// Site is where a run measures, as the run needs it: how each variant
// reaches the target, and the servers tlsbench started for it (site.Site
// is one).
type Site interface {
	// Engine is the driver registry key.
	Engine() string
	// Target describes what is measured, for the result.
	Target() result.Target
	// Locate finds the endpoint of a variant.
	Locate(v plan.Variant) (Endpoint, error)
	// ClientTLS is what every TLS variant's client trusts and offers.
	ClientTLS() tlsx.ClientOptions
	// Before readies the server for a variant before its check and each
	// of its trials (a lab server switches its certificate).
	Before(ctx context.Context, v plan.Variant) error
	// CPU is the CPU time the server side has used so far;
	// ErrNoServerCPU when tlsbench did not start the server.
	CPU() (time.Duration, error)
	// Alive reports why a server or tunnel tlsbench started is gone.
	Alive() error
	// Notes are facts about the site a reader of the figures needs; read
	// after the trials (some are learned while they run).
	Notes() []string
	// Tunnels describes the tunnels variants went through.
	Tunnels() []result.Tunnel
}

// ErrNoServerCPU is a Site's CPU when tlsbench did not start the server:
// its CPU is not measured.
var ErrNoServerCPU = errors.New("the server's CPU is not measured: tlsbench did not start it")
