package report

import "github.com/tlsbench/tlsbench/internal/result"

// cpusLine says where the client and the servers tlsbench started ran, and
// whether they shared CPUs (then the client's CPU was the servers' too).
func cpusLine(c *result.CPUs) string {
	switch {
	case c.Shared:
		return "tlsbench and the servers it started shared CPUs " + c.Client + " (--client-cpus keeps them apart)"
	case c.Servers == "":
		return "tlsbench on CPUs " + c.Client + " (--client-cpus)"
	}
	return "tlsbench on CPUs " + c.Client + ", the servers it started on " + c.Servers + ": not shared"
}
