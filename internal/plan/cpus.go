package plan

import (
	"slices"

	"github.com/tlsbench/tlsbench/internal/host"
)

// clientCPUs checks Spec.ClientCPUs, taskset's list syntax ("0", "0-1",
// "0,2-3"), against the CPUs this process may run on, writes it in its
// canonical form and keeps it parsed (ClientCPUList).
func (s *Spec) clientCPUs() error {
	if s.ClientCPUs == "" {
		return nil
	}
	cpus, err := host.ParseCPUList(s.ClientCPUs)
	if err != nil {
		return errorf("⟨client_cpus⟩: %v", err)
	}
	avail := host.CPUs()
	for _, c := range cpus {
		if !slices.Contains(avail, c) {
			return errorf("⟨client_cpus⟩: CPU %d is not available here: use CPUs of %s", c, host.FormatCPUList(avail))
		}
	}
	s.ClientCPUs, s.clientCPUList = host.FormatCPUList(cpus), cpus
	return nil
}

// ClientCPUList is ClientCPUs as New parsed it, sorted; nil for all CPUs
// (or a Spec New did not make).
func (s Spec) ClientCPUList() []int { return slices.Clone(s.clientCPUList) }
