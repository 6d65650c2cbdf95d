package plan

import (
	"slices"
	"strconv"
	"syscall"
)

// Storm is the experiment in which Spec.Clients clients connect at one
// instant (after a failover, a restart), and each may run the workload
// once (Spec.FirstOp): how long until all are back.
const Storm Experiment = "storm"

func init() { experimentKinds[Storm] = experimentKind{} }

// Bounds of Spec.Clients and Spec.Concurrency.
const (
	DefaultStormClients = 100
	MaxStormClients     = MaxConnections
	// MaxConnections bounds the connections a run holds at once (pool's
	// ⟨concurrency⟩, a storm's ⟨clients⟩).
	MaxConnections = 100000
	// spareFiles is what the process needs open besides one socket per
	// connection: the result file, logs, lab connections, Go's own.
	spareFiles = 256
)

// storm validates Spec.Clients and Spec.FirstOp and makes sure this
// process may open a socket for each client: a storm beyond the
// RLIMIT_NOFILE soft limit raises it up to the hard limit (the servers
// tlsbench starts inherit it); beyond the hard limit it is the user's to
// raise.
func (s *Spec) storm() error {
	if !slices.Contains(s.Experiments, Storm) {
		if len(s.Clients) > 0 {
			return errorf("⟨clients⟩ applies to the storm experiment: run storm (connect and pool take ⟨concurrency⟩)")
		}
		if s.FirstOp {
			return errorf("⟨first_op⟩ applies to the storm experiment: run storm")
		}
		return nil
	}
	if len(s.Clients) == 0 {
		s.Clients = []int{DefaultStormClients}
	}
	for _, n := range s.Clients {
		if n < 1 || n > MaxStormClients {
			return errorf("⟨clients⟩: %d is out of range: use 1 to %d", n, MaxStormClients)
		}
	}
	if err := twice("⟨clients⟩", s.Clients, strconv.Itoa); err != nil {
		return err
	}
	return ensureFiles("⟨clients⟩", slices.Max(s.Clients))
}

// ensureFiles makes sure this process may open a socket for each of n
// connections held at once (field names the setting, as errorf marks
// it): beyond the RLIMIT_NOFILE soft limit it raises it up to the hard
// limit (the servers tlsbench starts inherit it); beyond the hard limit it
// is the user's to raise.
func ensureFiles(field string, n int) error {
	need := uint64(n + spareFiles)
	have, err := RaiseFileLimit(need)
	if err != nil {
		return errorf("%s %d: reading the open-file limit: %v", field, n, err)
	}
	if have < need {
		return errorf("%s %d needs %d open files and this process may open %d (RLIMIT_NOFILE, hard limit): raise it, e.g. ulimit -n %d (as root, or in /etc/security/limits.conf), or give fewer",
			field, n, need, have, need)
	}
	return nil
}

// RaiseFileLimit raises this process's RLIMIT_NOFILE soft limit to need,
// as far as the hard limit allows, and returns the soft limit it has then.
// Children started afterwards (the servers tlsbench starts) inherit it.
func RaiseFileLimit(need uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	// Set even when it is high enough: Go raised the soft limit at start
	// and gives children the original one unless the program sets it.
	lim.Cur = max(lim.Cur, min(need, lim.Max))
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, nil
}

// StormLabel is the text of a storm's column or row in tables.
func StormLabel(clients int) string { return strconv.Itoa(clients) + " clients" }
