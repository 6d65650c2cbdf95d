package clientstack

import (
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
)

// TestPythonStacks runs every Python stack against its real lab server:
// plain and TLS 1.3 connect runs whose operations are each one connection
// the server counted (and, where it says, one TLS accept), the stack's
// own word that it negotiated TLS 1.3, and a pool run whose pool opened
// exactly its concurrency's connections. PyMongo's connect opens a new
// MongoClient per operation, as the seed did: its monitor's connection
// does not log in, so FerretDB's count of logins is one per operation too.
func TestPythonStacks(t *testing.T) {
	labtest.Slow(t)
	for _, tc := range []struct {
		engine string
		stacks []string
	}{
		{"postgres", []string{"psycopg"}},
		{"mysql", []string{"pymysql", "mysqlclient"}},
		{"redis", []string{"redis-py"}},
		{"mongodb", []string{"pymongo"}},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			// Side by side: each engine's server counts its own
			// stacks' connections, and nothing here is timed.
			t.Parallel()
			srv := sharedLab(t, tc.engine)
			for _, name := range tc.stacks {
				t.Run(name, func(t *testing.T) {
					for _, tls := range []string{"off", "1.3"} {
						cfg := srv.config(t, name, tls)
						checkConnect(t, startStack(t, cfg), srv, cfg, connectOps)
					}
					cfg := srv.config(t, name, "1.3")
					checkPool(t, startStack(t, cfg), srv, cfg, poolRun)
				})
			}
		})
	}
}

// connectOps and poolRun are the connect and pool runs of the Python and
// Java tests: a pool of 2 opening 2.
const connectOps = 20

var poolRun = Run{Experiment: "pool", Concurrency: 2, MaxOps: 50, Duration: time.Minute, Warmup: 100 * time.Millisecond}
