package lab

import (
	"context"
	"fmt"
	"slices"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/speed"
)

// Signer is the library the server tlsbench starts for t signs its TLS
// handshakes with: Go for the built-in server and the lab's mongodb
// (FerretDB), which are Go programs, OpenSSL for the other lab servers,
// which link it. ok is false for a URL target, whose server tlsbench knows
// nothing of; err says why a lab server's library cannot be measured here.
func Signer(ctx context.Context, t plan.Target) (s speed.Signer, ok bool, err error) {
	switch {
	case t.Builtin, t.Lab == "mongodb":
		return speed.GoSigner(), true, nil
	case t.Lab != "":
		o, err := speed.FindOpenSSL(ctx, "")
		if err != nil {
			return speed.Signer{}, true, fmt.Errorf("the lab %s server signs with OpenSSL, and %w", t.Lab, err)
		}
		return o.Signer(), true, nil
	}
	return speed.Signer{}, false, nil
}

// Ceilings measures, before a connect run on a server tlsbench starts on
// this machine, the ceiling each key of its TLS variants puts on new
// connections, with the library the server signs with (see Signer). A run
// without connect, or against a URL (whose server's machine is unknown),
// has none. A ceiling that cannot be measured is a note, not a failed run:
// the error is the context's.
func Ceilings(ctx context.Context, spec plan.Spec, variants []plan.Variant) ([]result.Ceiling, []string, error) {
	if !slices.Contains(spec.Experiments, plan.Connect) {
		return nil, nil, nil
	}
	s, ok, err := Signer(ctx, spec.ParsedTarget())
	switch {
	case !ok:
		return nil, nil, nil
	case err != nil:
		return nil, []string{"no signature ceilings: " + err.Error()}, nil
	}
	cs, err := speed.Ceilings(ctx, s, variants, speed.CeilingDuration, 0)
	if err != nil {
		if ctx.Err() != nil {
			return cs, nil, ctx.Err()
		}
		return cs, []string{"signature ceilings: " + err.Error()}, nil
	}
	return cs, nil, nil
}
