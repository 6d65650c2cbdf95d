package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/wire"
)

// registerWire adds connect's --wire: the self-check against a capture
// (wire.SelfCheck).
func (f *runFlags) registerWire(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.wire, "wire", false, "capture the run's own connections on loopback (tcpdump, else a packet socket: root or CAP_NET_RAW) and set tlsbench's mean phase times and round trips beside the wire's, per variant and phase (servers on this machine only)")
}

// startWireCheck starts --wire's capture of the run's connections to the
// open site s.
func startWireCheck(ctx context.Context, spec plan.Spec, s bench.Locator) (*wire.SelfCheck, error) {
	locate := func(v plan.Variant) (string, error) {
		ep, err := s.Locate(v)
		return ep.Addr, err
	}
	wc, err := wire.StartSelfCheck(ctx, spec, locate)
	var pe *plan.Error
	switch {
	case err == nil, errors.As(err, &pe):
		return wc, err
	case ctx.Err() != nil:
		return nil, errInterrupted
	}
	return nil, fmt.Errorf("--wire: %w", err)
}
