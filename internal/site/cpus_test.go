package site

import (
	"errors"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestPinCPUsPolicy: without client CPUs a run that starts servers shares
// every CPU with them, one that starts none records nothing; client CPUs
// that leave none for the servers are refused, naming the field. (The
// pinning itself moves this process: cli's TestClientCPUs runs it.)
func TestPinCPUsPolicy(t *testing.T) {
	all := host.FormatCPUList(host.CPUs())
	got, err := PinCPUs(spec(t, plan.Spec{}))
	if want := (result.CPUs{Client: all, Servers: all, Shared: true}); err != nil || got == nil || *got != want {
		t.Errorf("the built-in server: %+v, %v; want %+v", got, err, want)
	}
	if got, err := PinCPUs(spec(t, plan.Spec{Target: "https://127.0.0.1:1/"})); err != nil || got != nil {
		t.Errorf("a URL: %+v, %v; want nothing", got, err)
	}
	_, err = PinCPUs(spec(t, plan.Spec{ClientCPUs: all}))
	var pe *plan.Error
	if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "client_cpus "+all+": that is every CPU") {
		t.Errorf("every CPU for the client: %v", err)
	}
}
