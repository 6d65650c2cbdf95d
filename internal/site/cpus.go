package site

import (
	"slices"

	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// PinCPUs applies spec's client CPUs (--client-cpus): this process moves
// onto them, and the servers it starts go to the other CPUs. It returns
// the split for the result: nil when the run starts no server and is not
// pinned.
func PinCPUs(spec plan.Spec) (*result.CPUs, error) {
	starts := StartsServers(spec)
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
		return nil, plan.Errorf("⟨client_cpus⟩ %s: that is every CPU (%s), none is left for the servers tlsbench starts: leave at least one out, e.g. ⟨client_cpus⟩ %d",
			spec.ClientCPUs, host.FormatCPUList(avail), avail[0])
	}
	if !starts {
		servers = nil
	}
	if err := host.PinClient(client, servers); err != nil {
		return nil, err
	}
	return &result.CPUs{Client: spec.ClientCPUs, Servers: host.FormatCPUList(servers)}, nil
}
