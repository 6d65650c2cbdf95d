package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/wire"
)

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
