package cli

import (
	"fmt"
	"slices"

	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/site"
)

// pinCPUs applies --client-cpus: tlsbench moves onto those CPUs and the
// servers it starts go to the others. It returns the split for the
// result: nil when tlsbench starts no server and is not pinned.
func pinCPUs(spec plan.Spec) (*result.CPUs, error) {
	starts := site.StartsServers(spec)
	avail := host.CPUs()
	if spec.ClientCPUs == "" {
		if !starts {
			return nil, nil
		}
		all := host.FormatCPUList(avail)
		return &result.CPUs{Client: all, Servers: all, Shared: true}, nil
	}
	client := spec.ClientCPUList()
	var servers []int
	for _, c := range avail {
		if !slices.Contains(client, c) {
			servers = append(servers, c)
		}
	}
	if starts && len(servers) == 0 {
		return nil, usageError{fmt.Errorf("--client-cpus %s: that is every CPU (%s), none is left for the servers tlsbench starts: leave at least one out, e.g. --client-cpus %d",
			spec.ClientCPUs, host.FormatCPUList(avail), avail[0])}
	}
	if !starts {
		servers = nil
	}
	if err := host.PinClient(client, servers); err != nil {
		return nil, err
	}
	return &result.CPUs{Client: spec.ClientCPUs, Servers: host.FormatCPUList(servers)}, nil
}
