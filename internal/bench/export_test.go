package bench

import (
	"time"

	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// SetArrived makes r call f with every open-loop arrival's intended start,
// on the dispatcher before it sends the arrival: the schedule is a test's
// to check, not the result's to store, and an f that sleeps holds the
// generator up.
func SetArrived(r *Runner, f func(at time.Time)) { r.arrived = f }

// ParseListen is parseListen for the external tests.
var ParseListen = parseListen

// UsableCPUs is host.NumCPU for the external tests.
var UsableCPUs = host.NumCPU

// MaxThreadWaits is maxThreadWaits for the external tests.
const MaxThreadWaits = maxThreadWaits

// RelayAddrs are the addresses of the relays r started for its client
// stacks' variants with an RTT.
func RelayAddrs(r *Runner) []string {
	var out []string
	for _, rl := range r.stacks.relays {
		out = append(out, rl.Addr())
	}
	return out
}

// Relayed is relayed for the external tests.
var Relayed = relayed

// SkipFirstWarmup runs v's next trial with the spec's warm-up, not a
// JVM's first (firstWarmup): a test that needs no warm JIT saves its
// seconds.
func SkipFirstWarmup(r *Runner, v plan.Variant) {
	if r.stacks.tried == nil {
		r.stacks.tried = map[string]bool{}
	}
	r.stacks.tried[v.ID] = true
}
