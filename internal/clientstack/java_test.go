package clientstack

import (
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
)

// TestJavaStacks runs every Java stack (clients/java/Client.java) against
// its real server, as TestPythonStacks does: plain and TLS 1.3 connect runs
// whose operations are each one connection the server counted, TLS 1.3 as
// the stack says, and a pool of 2 opening 2. A JVM compiling the source
// file costs seconds of CPU, so the TLS connect run and the pool run share
// one process, and the stacks run side by side (one engine each).
func TestJavaStacks(t *testing.T) {
	labtest.Slow(t)
	for _, tc := range []struct{ engine, stack string }{
		{"postgres", "pgjdbc"},
		{"mysql", "connector-j"},
		{"redis", "jedis"},
		{"mongodb", "mongodb-java"},
		{"http", "java-httpclient"},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			// Side by side: each stack has a server (an engine) of its
			// own to count, and nothing here is timed.
			t.Parallel()
			srv := sharedLab(t, tc.engine)
			cfg := srv.config(t, tc.stack, "off")
			checkConnect(t, startStack(t, cfg), srv, cfg, connectOps)
			cfg = srv.config(t, tc.stack, "1.3")
			c := startStack(t, cfg)
			checkConnect(t, c, srv, cfg, connectOps)
			checkPool(t, c, srv, cfg, poolRun)
		})
	}
}
