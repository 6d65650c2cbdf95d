package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/host"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestClientCPUs: --client-cpus puts tlsbench on its CPUs and the built-in
// server on the others, the result records the split and the report says
// they did not share CPUs; without it they shared, and the report says
// so. Bad lists are one line naming --client-cpus.
func TestClientCPUs(t *testing.T) {
	labtest.Slow(t)
	all := host.CPUs()
	if len(all) < 2 {
		t.Skipf("%d CPU: nothing to split", len(all))
	}
	// The run pins this test process: undo it for the tests after.
	t.Cleanup(func() { host.PinClient(all, nil) })
	for _, tc := range []struct {
		name string
		args []string
		want result.CPUs
		line string
	}{
		{"pinned", []string{"--client-cpus", "0"}, result.CPUs{Client: "0", Servers: host.FormatCPUList(all[1:])},
			"tlsbench on CPUs 0, the servers it started on " + host.FormatCPUList(all[1:]) + ": not shared"},
		{"shared", nil, result.CPUs{Client: host.FormatCPUList(all), Servers: host.FormatCPUList(all), Shared: true},
			"shared CPUs " + host.FormatCPUList(all)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Cleanup(func() { host.PinClient(all, nil) })
			out := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"pool", "builtin", "--tls", "1.3", "--key", "ecdsa-p256", "-n", "100", "--trials", "1", "-o", out}, tc.args...)
			code, stdout, stderr := runMain(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			r, err := result.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if r.Env.CPUs == nil || *r.Env.CPUs != tc.want {
				t.Errorf("result's CPUs %+v, want %+v", r.Env.CPUs, tc.want)
			}
			if !strings.Contains(stdout, tc.line) {
				t.Errorf("the report does not say %q:\n%s", tc.line, stdout)
			}
		})
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"pool", "builtin", "--client-cpus", ""}, "--client-cpus: the CPU list is empty"},
		{[]string{"pool", "builtin", "--client-cpus", "4096"}, "--client-cpus: \"4096\" is not a CPU"},
		{[]string{"pool", "builtin", "--client-cpus", "1000"}, "--client-cpus: CPU 1000 is not available here"},
		{[]string{"pool", "builtin", "--client-cpus", host.FormatCPUList(all)}, "none is left for the servers tlsbench starts"},
	} {
		code, _, stderr := runMain(t, tt.args...)
		if lines := errorLines(stderr); code != 2 || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", tt.args, code, stderr, tt.want)
		}
	}
}
