package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/plan"
)

const stormShort = "Connect N clients at one instant, as after a failover: how long until all are back"

// registerStorm adds the storm command's own flags and says in its help
// what the storm measures.
func (f *runFlags) registerStorm(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.IntSliceVar(&f.clients, "clients", nil, "clients that connect at the same instant, a list sweeps, e.g. 100,1000 (1 to "+strconv.Itoa(plan.MaxStormClients)+"; the open-file limit is raised as far as the hard limit allows)")
	fs.BoolVar(&f.firstOp, "first-op", false, "each client runs the workload once when connected (the first query after a reconnect)")
	fs.Lookup("clients").DefValue = "[" + strconv.Itoa(plan.DefaultStormClients) + "]"
	f.storm = true
	cmd.Long += `

storm releases --clients N clients at one instant, each trial: every client
connects (and with --first-op runs the workload once) and all stay connected
until the last is done, then close. Per variant: the time until all were
connected and until the last first operation, the spread of their dial
starts, each phase's percentiles (the wait for the others until the close,
the hold, apart), errors by kind, the kernel's listen-queue overflows (machine-wide counters),
and, for servers tlsbench starts, their CPU during the storm and their memory
per held connection. -c, -d and -n do not apply: each client connects once.`
}

// checkStorm refuses the flags a storm does not take.
func (f *runFlags) checkStorm(cmd *cobra.Command) error {
	if !f.storm {
		return nil
	}
	for _, name := range []string{"concurrency", "count", "per-conn"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			return usageError{fmt.Errorf("storm: --%s does not apply: every client connects once; give --clients N", name)}
		}
	}
	return nil
}
