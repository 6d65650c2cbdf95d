package plan

import (
	"strconv"
	"strings"
)

// Engine is the engine of the lab cluster: Lab without its version
// ("postgres" of "postgres:18").
func (r Replication) Engine() string {
	engine, _, _ := strings.Cut(r.Lab, ":")
	return engine
}

// Version is the lab cluster's major version, as ⟨lab⟩ postgres:18 names
// it for connect and pool; "" is the distribution's.
func (r Replication) Version() string {
	_, version, _ := strings.Cut(r.Lab, ":")
	return version
}

// version checks the version ⟨lab⟩ names, if it names one.
func (r Replication) version() error {
	engine, version, versioned := strings.Cut(r.Lab, ":")
	if !versioned {
		return nil
	}
	if n, err := strconv.Atoi(version); engine != "postgres" || err != nil || n < 10 {
		return errorf("⟨lab⟩ %s: only PostgreSQL comes in versions here, as postgres:15 or postgres:18", r.Lab)
	}
	return nil
}
