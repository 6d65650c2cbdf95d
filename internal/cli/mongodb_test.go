package cli

import (
	"bytes"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestMongoDBRuns runs the three experiments against the lab MongoDB
// (FerretDB) through the command line: the checks, the workloads, and the
// connect phases with their exact round trips.
func TestMongoDBRuns(t *testing.T) {
	needServer(t, "ferretdb")
	besideOthers(t)
	tests := []struct {
		exp, workload string
		ops           int
	}{
		{"connect", "find-one-id", 20},
		{"pool", "find-one", 200},
		{"stream", "", 3},
	}
	for _, tt := range tests {
		t.Run(tt.exp, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			args := []string{tt.exp, "--lab", "mongodb", "--tls", "off,1.2,1.3", "--key", "ecdsa-p256",
				"-n", strconv.Itoa(tt.ops), "--warmup", "0s", "--trials", "1", "--rows", "300", "-o", out}
			if tt.workload != "" {
				args = append(args, "--workload", tt.workload)
			}
			code, stdout, stderr := runProcess(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			r, err := result.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Trials) != 3 || r.Target.Server == nil || r.Target.Server.Software != "FerretDB" {
				t.Fatalf("%d trials, server %+v", len(r.Trials), r.Target.Server)
			}
			for _, c := range r.Checks {
				want := map[string]string{"plain": "", "tls1.2 ecdsa-p256": "TLS 1.2", "tls1.3 ecdsa-p256": "TLS 1.3"}[c.Variant]
				if got := negotiatedVersion(c.Client); got != want || (c.Client != nil && c.Client.PeerKey != "ECDSA-P256") {
					t.Errorf("%s: negotiated %+v", c.Variant, c.Client)
				}
			}
			for _, tr := range r.Trials {
				if tr.Ops != int64(tt.ops) || len(tr.Errors) > 0 {
					t.Errorf("%s: ops %d, errors %v", tr.Variant, tr.Ops, tr.Errors)
				}
				if tt.exp == "stream" && tr.BytesReceived < int64(tt.ops)*300*1000 {
					t.Errorf("%s: %d bytes for %d reads of 300 documents", tr.Variant, tr.BytesReceived, tt.ops)
				}
				if tt.exp != "connect" {
					continue
				}
				hs := map[string]int{"plain": 0, "tls1.2 ecdsa-p256": 2, "tls1.3 ecdsa-p256": 1}[tr.Variant]
				want := []string{"tcp 1"}
				if hs > 0 {
					want = append(want, "tls-handshake "+strconv.Itoa(hs))
				}
				want = append(want, "hello 1", "auth 2", "query 1", "close 1")
				if got := phaseTrips(tr); !slices.Equal(got, want) {
					t.Errorf("%s: phases %v, want %v", tr.Variant, got, want)
				}
			}
			if !strings.Contains(stdout, "FerretDB") {
				t.Errorf("the report does not name the server:\n%s", stdout)
			}
		})
	}
}

func negotiatedVersion(n *result.Negotiated) string {
	if n == nil {
		return ""
	}
	return n.Version
}

// phaseTrips is "name round-trips" of each phase of a trial whose
// connections all took the same round trips.
func phaseTrips(tr result.Trial) []string {
	var out []string
	for _, p := range tr.Phases {
		s := p.Name + " " + strconv.Itoa(p.RoundTrips.Min)
		if p.RoundTrips.Max != p.RoundTrips.Min {
			s += "-" + strconv.Itoa(p.RoundTrips.Max)
		}
		out = append(out, s)
	}
	return out
}

// TestMongoDBSeedPreset runs --preset mongodb-seed on the lab server: the
// seed's table on stdout, and a result with its three experiments.
func TestMongoDBSeedPreset(t *testing.T) {
	needServer(t, "ferretdb")
	besideOthers(t)
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := runProcess(t, "connect", "--preset", "mongodb-seed", "--lab", "mongodb", "--key", "ecdsa-p256",
		"-n", "10", "--trials", "2", "--rows", "100", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"MongoDB seed study", "only-connection", "first-query", "connection-and-first-query", "reused-client query"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	r, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Spec.Preset != plan.PresetMongoDBSeed || len(r.Trials) != 2*3*2 {
		t.Fatalf("preset %q, %d trials", r.Spec.Preset, len(r.Trials))
	}
	for _, tr := range r.Trials {
		if tr.Ops != 10 || len(tr.Errors) > 0 {
			t.Errorf("%s %s: ops %d, errors %v", tr.Experiment, tr.Variant, tr.Ops, tr.Errors)
		}
		tls := strings.HasPrefix(tr.Variant, "tls")
		switch tr.Experiment {
		case plan.NewClient:
			// Both connections' round trips: tcp and hello each, auth 2
			// and the find on the pool's; TLS 1.3 adds one per connection.
			want := []string{"only-connection 0", "first-query 7"}
			if tls {
				want[1] = "first-query 9"
			}
			if got := phaseTrips(tr); !slices.Equal(got, want) || tr.Conns != 20 {
				t.Errorf("new-client %s: phases %v, %d connections", tr.Variant, got, tr.Conns)
			}
		case plan.ReusedClient:
			if got := phaseTrips(tr); !slices.Equal(got, []string{"find_one 1"}) || tr.Conns != 1 {
				t.Errorf("reused-client %s: phases %v", tr.Variant, got)
			}
		}
		if tls && (tr.Negotiated == nil || tr.Negotiated.Version != "TLS 1.3") {
			t.Errorf("%s %s: negotiated %+v", tr.Experiment, tr.Variant, tr.Negotiated)
		}
	}
	// `report` renders the seed's table from the file.
	code, again, stderr := runProcess(t, "report", out)
	if code != 0 || !strings.Contains(again, "new-client") {
		t.Errorf("report: exit %d, %s\n%s", code, stderr, again)
	}
}

// TestMongoDBSeedPyMongo runs --preset mongodb-seed through pymongo and
// Go's driver in one run, plain and TLS 1.3: every trial counts its
// iterations, with the client's and the server's CPU (a new client's take
// more than /proc's tick); pymongo's new-client
// iterations are two connections each and their two phases add up to
// their latency, as Go's; the seed's table has both stacks' rows for each
// of its four figures.
func TestMongoDBSeedPyMongo(t *testing.T) {
	needServer(t, "ferretdb")
	stdout, r := runClients(t, filepath.Join(t.TempDir(), "r.json"), "connect", "--preset", "mongodb-seed", "--lab", "mongodb",
		"--key", "ecdsa-p256", "--client", "pymongo,go", "--tls", "off,1.3", "-n", "10", "--trials", "1", "--warmup", "0s", "--rows", "100", "-q")
	if len(r.Trials) != 3*4 {
		t.Fatalf("%d trials, want 12", len(r.Trials))
	}
	for _, tr := range r.Trials {
		// Ten reused-client find_one()s may take less than one of /proc's
		// 10 ms ticks on either side.
		reused := tr.Experiment == plan.ReusedClient
		if tr.Ops != 10 || len(tr.Errors) > 0 || !reused && (tr.ClientCPU <= 0 || tr.ServerCPU <= 0) {
			t.Errorf("%s %s: ops %d, errors %v, client CPU %v, server CPU %v", tr.Experiment, tr.Variant, tr.Ops, tr.Errors, tr.ClientCPU, tr.ServerCPU)
		}
		if tls := strings.HasSuffix(tr.Variant, "tls1.3"); tls && (tr.Negotiated == nil || tr.Negotiated.Version != "TLS 1.3") {
			t.Errorf("%s %s: negotiated %+v", tr.Experiment, tr.Variant, tr.Negotiated)
		}
		if tr.Experiment != plan.NewClient {
			continue
		}
		if len(tr.Phases) != 2 || tr.Phases[0].Name != "only-connection" || tr.Phases[1].Name != "first-query" || tr.Conns != 20 {
			t.Errorf("new-client %s: phases %v, %d connections", tr.Variant, phaseTrips(tr), tr.Conns)
			continue
		}
		if sum, all := tr.Phases[0].Latency.Mean+tr.Phases[1].Latency.Mean, tr.Latency.Mean; math.Abs(sum-all) > 0.01*all {
			t.Errorf("new-client %s: phases add up to %v ms, iterations to %v", tr.Variant, sum, all)
		}
	}
	// The seed's table: a row per figure and variant, pymongo's first.
	table, _, _ := strings.Cut(stdout, "\n\n")
	for _, fig := range []string{"only-connection", "first-query", "connection-and-first-query", "reused-client query"} {
		if !regexp.MustCompile(`(?m)^` + fig + `\s+pymongo plain\s+10\s`).MatchString(table) {
			t.Errorf("the seed's table has no pymongo plain row for %s:\n%s", fig, table)
		}
	}
	for _, v := range []string{"pymongo tls1.3", "go plain", "go tls1.3"} {
		if n := strings.Count(table, " "+v+" "); n != 4 {
			t.Errorf("the seed's table has %d rows of %s, want 4:\n%s", n, v, table)
		}
	}
}

// TestMongoDBBadInput: wrong URLs and flags are usage errors, and a server
// that refuses what the variant asks is one clear line.
func TestMongoDBBadInput(t *testing.T) {
	srv := labtest.Start(t, "mongodb", lab.Options{PlainOnly: true})
	plainURL, err := srv.URL("", false)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(plainURL)
	q := u.Query()
	q.Set("tls", "true")
	q.Set("tlsCAFile", srv.CAFile())
	u.RawQuery = q.Encode()
	tlsToPlain := u.String()
	short := []string{"--trials", "1", "-n", "3"}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"srv", []string{"connect", "mongodb+srv://u:secret@cluster0.example.net/"}, 2, "mongodb+srv:// finds its hosts by DNS"},
		{"hosts", []string{"connect", "mongodb://u:secret@a:1,b:2/?replicaSet=rs"}, 2, "lists 2 hosts"},
		{"bad tls option", []string{"connect", "mongodb://127.0.0.1/?tls=maybe"}, 2, "tls=maybe: use true or false"},
		{"bad URI option", append([]string{"connect", "mongodb://u:secret@127.0.0.1" + port(u.Host) + "/?authMechanism=NOPE"}, short...), 1, "NOPE"},
		{"preset elsewhere", []string{"connect", "--preset", "mongodb-seed", "--lab", "redis"}, 2, "replays a MongoDB study"},
		{"records elsewhere", []string{"prepare", "redis://127.0.0.1:1/0", "--records", "5"}, 2, "--records is MongoDB's"},
		{"records and rows", []string{"prepare", "mongodb://127.0.0.1:1/", "--records", "5", "--rows", "6"}, 2, "--records is an alias of --rows, give one"},
		{"refused", append([]string{"connect", "mongodb://127.0.0.1:1/"}, short...), 1, "cannot connect to 127.0.0.1:1: connection refused"},
		{"TLS refused", append([]string{"connect", tlsToPlain, "--tls", "auto"}, short...), 1, "is it a plaintext port?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runMain(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) || len(errorLines(stderr)) != 1 {
				t.Errorf("exit %d, stderr %q: want exit %d and one line with %q", code, stderr, tt.code, tt.want)
			}
			if strings.Contains(stderr, "secret") {
				t.Errorf("stderr shows the password: %q", stderr)
			}
		})
	}
}

// TestMongoDBServerKilledMidRun kills the lab FerretDB during a preset
// run: the run ends with a clear error, keeps the finished trials and
// exits 1.
func TestMongoDBServerKilledMidRun(t *testing.T) {
	needServer(t, "ferretdb")
	besideOthers(t)
	tmp := t.TempDir()
	ferretdb := func() []int {
		for _, p := range processesMentioning(tmp) {
			if cmdline, _ := os.ReadFile(filepath.Join("/proc", p, "cmdline")); bytes.Contains(cmdline, []byte("--handler=sqlite")) {
				pid, _ := strconv.Atoi(p)
				return []int{pid}
			}
		}
		return nil
	}
	r := killMidRun(t, tmp, ferretdb, "", "connect", "--preset", "mongodb-seed", "--lab", "mongodb", "--key", "ecdsa-p256",
		"-n", "20", "--trials", "100", "--rows", "100")
	t.Logf("%d trials kept; error: %s", len(r.Trials), r.Error)
}

// TestMongoDBLabCommand starts `tlsbench lab mongodb`, reads the URLs it
// prints (no password, a passfile instead), prepares data through the
// plain one twice (idempotent) and measures through the TLS one.
func TestMongoDBLabCommand(t *testing.T) {
	needServer(t, "ferretdb")
	tmp := t.TempDir()
	cmd, out := startLab(t, tmp, "mongodb")
	defer cmd.Process.Kill()
	var plainURL, tlsURL string
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, "mongodb://") {
			if strings.Contains(f, "tls=true") {
				tlsURL = f
			} else if plainURL == "" {
				plainURL = f
			}
		}
	}
	u, err := url.Parse(plainURL)
	if plainURL == "" || tlsURL == "" || err != nil || u.Query().Get("passfile") == "" {
		t.Fatalf("no plain and TLS URLs with a passfile in:\n%s", out)
	}
	if _, has := u.User.Password(); has {
		t.Errorf("the printed URL holds the password: %s", plan.Redact(plainURL))
	}
	for i := range 2 {
		code, so, se := runMain(t, "prepare", plainURL, "--records", "300")
		if code != 0 || !strings.Contains(so, "prepared 300 documents") {
			t.Fatalf("prepare #%d: exit %d, %q %q", i+1, code, so, se)
		}
	}
	res := filepath.Join(t.TempDir(), "r.json")
	if code, _, se := runMain(t, "connect", tlsURL, "--rows", "300", "-n", "5", "--trials", "1", "-o", res); code != 0 {
		t.Fatalf("connect through the printed TLS URL: exit %d, %s", code, se)
	}
	if r, err := result.Read(res); err != nil || len(r.Checks) != 1 || r.Checks[0].Client == nil {
		t.Errorf("connect through the TLS URL: %v, %+v", err, r)
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("lab after Ctrl-C: exit %d, want 130 as every interrupted command", code)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
