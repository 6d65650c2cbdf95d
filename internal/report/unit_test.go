package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestUnits: each workload's rate is named as the docs name it: queries
// for SQL, passes for pgbench scripts, operations for Redis and MongoDB,
// requests for HTTP.
func TestUnits(t *testing.T) {
	for _, tt := range []struct {
		target, workload string
		want             string
	}{
		{"lab:postgres", "point-select", "queries/s"},
		{"lab:postgres", "script", "passes/s"},
		{"mysql://u@127.0.0.1/db", "script", "passes/s"},
		{"lab:redis", "get", "operations/s"},
		{"rediss://127.0.0.1:6380/0", plan.WorkloadCommand, "operations/s"},
		{"mongodb://127.0.0.1/", "find-one-id", "operations/s"},
		{"lab:mongodb", plan.WorkloadFilter, "operations/s"},
		{"builtin", "get", "requests/s"},
		{"https://127.0.0.1:8443/", plan.WorkloadRequest, "requests/s"},
	} {
		r := result.New()
		r.Spec = plan.Spec{Target: tt.target, Workload: tt.workload, Experiments: []plan.Experiment{plan.Pool}}
		ix := newIndex(r)
		if got := ix.metricName(plan.Pool); got != tt.want {
			t.Errorf("%s %s: metric %q, want %q", tt.target, tt.workload, got, tt.want)
		}
		if got := ix.unit(plan.Pool); got[:len(tt.want)] != tt.want {
			t.Errorf("%s %s: unit %q, want it to start %q", tt.target, tt.workload, got, tt.want)
		}
	}
}

// TestNegativeMemory: a trial whose server shrank while it held its
// connections (measured: the built-in server's start-up garbage returned
// to the system during the first trial) gets a footnote saying why its
// figure is below 0; a run without one gets none.
func TestNegativeMemory(t *testing.T) {
	for _, shrank := range []bool{false, true} {
		r := read(t, "measured-postgres-storm.json")
		if shrank {
			m := r.Trials[0].ServerMemory
			m.HeldBytes = m.IdleBytes - 180<<10*m.Conns
		}
		var b bytes.Buffer
		if err := Build(r).Text(&b); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "below 0: the server held less with the connections open than idle just before"); got != shrank {
			t.Errorf("shrank %v: footnote %v:\n%s", shrank, got, b.String())
		}
	}
}

// TestShownTarget: the title shows what is measured (scheme, user, host,
// database, sslmode, tls, authMechanism ...) and leaves out the
// parameters that name a local file, wherever they are in the query.
func TestShownTarget(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"builtin", "builtin"},
		{"lab:postgres", "lab:postgres"},
		{"postgres://bench_scram@127.0.0.1:36999/bench?passfile=%2Ftmp%2Fx%2Fpassfile&sslmode=require",
			"postgres://bench_scram@127.0.0.1:36999/bench?sslmode=require"},
		{"postgres://u@h:5432/db?sslmode=verify-full&sslrootcert=/etc/ca.pem&sslcert=c.pem&sslkey=k.pem&sslnegotiation=direct",
			"postgres://u@h:5432/db?sslmode=verify-full&sslnegotiation=direct"},
		{"mysql://u:xxxxx@h:3306/db?tls=true&ssl-ca=/ca.pem", "mysql://u:xxxxx@h:3306/db?tls=true"},
		{"mongodb://u@h/?tls=true&tlsCAFile=%2Fca.pem&tlsCertificateKeyFile=/k.pem&authMechanism=MONGODB-X509",
			"mongodb://u@h/?tls=true&authMechanism=MONGODB-X509"},
		{"mongodb://u@h/?tlscafile=/ca.pem", "mongodb://u@h/"},
		{"rediss://h:6380/0?passfile=/p", "rediss://h:6380/0"},
		{"https://h/p?q=1&passfile=/p#xxxxx", "https://h/p?q=1#xxxxx"},
	} {
		if got := shownTarget(tt.url); got != tt.want {
			t.Errorf("shownTarget(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}
