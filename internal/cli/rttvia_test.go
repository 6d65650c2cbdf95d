package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/result"
)

// TestRTTViaLink runs the same variants at one RTT through the dialer's
// emulation and across a delay link, on the lab PostgreSQL and the
// built-in server: both keep the protocol's round trips, the link's tcp
// phase is the kernel's connect and still takes the RTT, the check
// reached the server's address on the link, the notes say how each RTT
// was made and that nothing was dropped, and no namespace is left.
func TestRTTViaLink(t *testing.T) {
	const rtt = 10.0 // ms
	pg := []string{"--lab", "postgres", "--auth", "trust", "--tables", "1", "--rows", "100"}
	for _, tt := range []struct {
		name   string
		args   []string
		prefix string // of the variant ids
	}{
		{"postgres", pg, ""},
		{"builtin", []string{"builtin"}, ""},
		// pgbench's and curl's processes run in the link's namespace.
		{"libpq", append([]string{"--client", "libpq"}, pg...), "libpq "},
		{"curl", []string{"builtin", "--client", "curl"}, "curl "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "postgres" || tt.name == "libpq" {
				needServer(t, labBinaries["postgres"])
			}
			if os.Geteuid() != 0 {
				t.Skip("a delay link needs root")
			}
			out := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"connect", "--tls", "1.3", "--rtt", "10ms", "--rtt-via", "dialer,link", "-n", "10", "--trials", "1", "-o", out}, tt.args...)
			code, _, stderr := runMain(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			r, err := result.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			var ids, trips []string
			for _, tr := range r.Trials {
				ids = append(ids, tr.Variant)
				trips = append(trips, phaseRoundTrips(tr))
				if tr.Ops != 10 || len(tr.Errors) > 0 {
					t.Errorf("%s: %d ops, errors %v", tr.Variant, tr.Ops, tr.Errors)
				}
				for _, p := range tr.Phases {
					if p.Name == "tcp" && (p.Latency.P50 < rtt || p.Latency.P50 > rtt+50) {
						t.Errorf("%s: tcp phase p50 %.2f ms, want about %v", tr.Variant, p.Latency.P50, rtt)
					}
				}
			}
			if len(ids) != 2 || !strings.HasPrefix(ids[0], tt.prefix+"tls1.3 ") || !strings.HasSuffix(ids[0], " rtt10ms") || ids[1] != ids[0]+" link" {
				t.Fatalf("variants %q, want the dialer's and the link's", ids)
			}
			if trips[0] != trips[1] || tt.prefix == "" && !strings.HasPrefix(trips[0], "tcp:1 ") {
				t.Errorf("phases [round trips]: the dialer's %s, the link's %s", trips[0], trips[1])
			}
			// A connection takes several round trips (tcp, startup or a
			// request, TLS) either way.
			for _, tr := range r.Trials {
				if tr.Latency.P50 < 3*rtt {
					t.Errorf("%s: a connection took %.2f ms (p50) at RTT %v ms", tr.Variant, tr.Latency.P50, rtt)
				}
			}
			for _, c := range r.Checks {
				if c.Variant == ids[1] && tt.prefix == "" && !strings.HasPrefix(c.Remote, "10.215.") {
					t.Errorf("the link's check reached %s, not the server's address on the link", c.Remote)
				}
			}
			notes := strings.Join(r.Notes, "\n")
			want := []string{"through a delay link (--rtt-via link)", ", 0 and 0 dropped"}
			if tt.prefix == "" {
				want = append(want, "emulated in user space by tlsbench's dialer")
			} else {
				want = append(want, "tlsbench's relay on loopback")
			}
			for _, want := range want {
				if !strings.Contains(notes, want) {
					t.Errorf("no note says %q: %s", want, notes)
				}
			}
			ns, _ := exec.Command("ip", "netns", "list").Output()
			if strings.Contains(string(ns), "tlsbench-dl-"+strconv.Itoa(os.Getpid())) {
				t.Errorf("a namespace of this run is left: %s", ns)
			}
		})
	}
}

// TestRTTViaRefused: a link for what it cannot carry is one line that says
// what to use.
func TestRTTViaRefused(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"connect", "postgres://u@db:5432/app", "--rtt", "10ms", "--rtt-via", "link"}, "--rtt-via link puts the server behind a delay link tlsbench builds"},
		{[]string{"connect", "--lab", "postgres", "--rtt-via", "fast"}, "--rtt-via fast: unknown way: use dialer"},
		{[]string{"connect", "--lab", "postgres", "--rtt-via", "link", "--via", "ssh"}, "--rtt-via link with --via ssh"},
	} {
		code, _, stderr := runMain(t, tt.args...)
		if lines := errorLines(stderr); code != 2 || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", tt.args, code, stderr, tt.want)
		}
	}
}
