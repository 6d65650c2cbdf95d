package cli

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
)

// TestShards runs one connect plan as 2 and as 4 shard processes (this
// test binary as tlsbench) with a common --start-at against one lab
// PostgreSQL, and merges them: 2 shards write framed results to stdout
// (-o -), joined into one kubectl-logs-like dump with pod prefixes, 4
// write files. The merged operations are the sums of the shards' and the
// server's own count of sessions (one per connect operation, and one per
// shard for its check); histogram counts add exactly; the shards' trials
// of one round overlapped in time.
func TestShards(t *testing.T) {
	labtest.Slow(t)
	_, raw := sharedLab(t, "postgres")
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	// The shards are processes: the password goes in a passfile, never
	// on their command lines.
	target := passfileURL(t, raw, "*:*:*:*:%s")(u.Host) + "&sslmode=disable"
	sessions := pgSessions(t, target)
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := t.TempDir()
			before := sessions()
			startAt := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
			stream := n == 2
			cmds := make([]*exec.Cmd, n)
			outs := make([]strings.Builder, n)
			errs := make([]strings.Builder, n)
			for i := range n {
				out := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
				if stream {
					out = "-"
				}
				cmds[i] = exec.Command(os.Args[0], "connect", target, "-c", "4", "-d", "700ms", "--trials", "2",
					"--tables", "1", "--rows", "100", "--shard", fmt.Sprintf("%d/%d", i, n), "--start-at", startAt, "-o", out)
				cmds[i].Stdout, cmds[i].Stderr = &outs[i], &errs[i]
				if err := cmds[i].Start(); err != nil {
					t.Fatal(err)
				}
			}
			for i, c := range cmds {
				if err := c.Wait(); err != nil {
					t.Fatalf("shard %d/%d: %v: %s", i, n, err, errs[i].String())
				}
			}
			after := sessions()
			var inputs []string
			if stream {
				var dump strings.Builder
				for i := range n {
					for line := range strings.Lines(outs[i].String()) {
						fmt.Fprintf(&dump, "[pod/shards-%d-abcde/tlsbench] %s", i, line)
					}
					if !strings.Contains(errs[i].String(), fmt.Sprintf("shard:  %d of %d", i+1, n)) {
						t.Errorf("shard %d's tables on stderr have no shard line:\n%s", i, errs[i].String())
					}
				}
				inputs = []string{filepath.Join(dir, "logs.txt")}
				if err := os.WriteFile(inputs[0], []byte(dump.String()), 0o600); err != nil {
					t.Fatal(err)
				}
			} else {
				for i := n - 1; i >= 0; i-- {
					inputs = append(inputs, filepath.Join(dir, fmt.Sprintf("shard-%d.json", i)))
				}
			}
			merged := filepath.Join(dir, "merged.json")
			code, stdout, stderr := runMain(t, append(append([]string{"merge"}, inputs...), "-o", merged)...)
			if code != 0 {
				t.Fatalf("merge: exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, fmt.Sprintf("shards: %d client machines", n)) {
				t.Errorf("the merged report's header does not say %d client machines:\n%s", n, stdout)
			}
			m, err := result.Read(merged)
			if err != nil {
				t.Fatal(err)
			}
			var shards []*result.Result
			for _, in := range inputs {
				ps, err := result.ReadParts(in)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range ps {
					shards = append(shards, p.Result)
				}
			}
			if len(shards) != n || len(m.Trials) != 2 || len(m.Shards) != n {
				t.Fatalf("%d shards, %d merged trials, %d shards in the merged result", len(shards), len(m.Trials), len(m.Shards))
			}
			var ops int64
			for k, tr := range m.Trials {
				var sum, count, tcp int64
				var c int
				for _, s := range shards {
					st := s.Trials[k]
					sum, count, c = sum+st.Ops, count+st.Latency.Count, c+st.Concurrency
					tcp += phaseCount(st, "tcp")
					if len(st.Errors) > 0 {
						t.Errorf("shard %d trial %d failed operations: %v", s.Shard.Index, k, st.ErrorSamples)
					}
				}
				if tr.Ops != sum || tr.Latency.Count != count || tr.Latency.Count != tr.Ops || phaseCount(tr, "tcp") != tcp || c != 4 || tr.Concurrency != 4 {
					t.Errorf("trial %d: merged ops %d, latency count %d, tcp count %d, c %d; the shards' %d, %d, %d, %d",
						k, tr.Ops, tr.Latency.Count, phaseCount(tr, "tcp"), tr.Concurrency, sum, count, tcp, c)
				}
				ops += tr.Ops
				// The shards' windows of this round overlapped: each began
				// before every other ended.
				for _, a := range shards {
					for _, b := range shards {
						if at, bt := a.Trials[k], b.Trials[k]; !at.Start.Before(bt.Start.Add(bt.Elapsed)) {
							t.Errorf("round %d: shard %d started at %v, after shard %d ended (%v)", k, a.Shard.Index, at.Start, b.Shard.Index, bt.Start.Add(bt.Elapsed))
						}
					}
				}
			}
			// Each shard's check opened one session besides the trials'.
			if got := after - before - int64(n); got != ops {
				t.Errorf("the server counted %d sessions for the trials, the merged result %d operations", got, ops)
			}
			// The skew is recorded, and a note says it (with a warning
			// above the bound); how small it is on one machine is up to
			// the scheduler: a loaded one starts the shards 100 ms apart.
			if m.Skew == nil || m.Skew.StartSpread < 0 || m.Skew.Bound <= 0 {
				t.Fatalf("skew %+v", m.Skew)
			}
			warned := slices.ContainsFunc(m.Notes, func(n string) bool { return strings.Contains(n, "warning: above the bound") })
			if warned != (m.Skew.StartSpread > m.Skew.Bound) {
				t.Errorf("skew %+v, notes %q: want the warning exactly when the spread is above the bound", m.Skew, m.Notes)
			}
			if _, err := os.Stat(filepath.Join(dir, "merged.html")); err != nil {
				t.Errorf("no page beside the merged result: %v", err)
			}
			if code, _, stderr := runMain(t, "report", merged); code != 0 {
				t.Errorf("report of the merged result: exit %d: %s", code, stderr)
			}
		})
	}
}

func phaseCount(tr result.Trial, name string) int64 {
	for _, p := range tr.Phases {
		if p.Name == name {
			return p.Latency.Count
		}
	}
	return -1
}

// pgSessions returns a reader of the sessions PostgreSQL has counted in
// target's database, read from another database (reading adds none), once
// two reads 300 ms apart agree: a backend reports its session as it exits.
func pgSessions(t *testing.T, target string) func() int64 {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	ctx := context.Background()
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	read := func() int64 {
		var n int64
		if _, err := c.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRow(ctx, "SELECT sessions FROM pg_stat_database WHERE datname = $1", db).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	return func() int64 {
		a := read()
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
			time.Sleep(300 * time.Millisecond)
			if b := read(); b != a {
				a = b
				continue
			}
			break
		}
		return a
	}
}

// TestShardBadInput: one line each, exit 2.
func TestShardBadInput(t *testing.T) {
	url := "http://127.0.0.1:9/"
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	dir := t.TempDir()
	notShard := filepath.Join(dir, "whole.json")
	r := result.New()
	if err := result.Write(notShard, r); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"connect", url, "--shard", "3/2", "--start-at", soon}, "--shard 3/2: INDEX counts from 0 to COUNT-1: use 0/2 to 1/2"},
		{[]string{"connect", url, "--shard", "x", "--start-at", soon}, `--shard "x" is not INDEX/COUNT`},
		{[]string{"connect", url, "--shard", "0/2", "--start-at", "2020-01-01T00:00:00Z"}, "--start-at 2020-01-01T00:00:00Z is in the past"},
		{[]string{"connect", url, "--shard", "0/2", "--start-at", "soon"}, `--start-at: "soon" is not a time`},
		{[]string{"connect", url, "--shard", "0/2"}, "--shard needs --start-at"},
		{[]string{"connect", url, "--start-at", soon}, "--start-at schedules the shards of a split run: give --shard"},
		{[]string{"connect", url, "-o", "-"}, "-o -: the result on stdout is framed for tlsbench merge"},
		{[]string{"pool", url, "-c", "3", "--shard", "0/4", "--start-at", soon}, "-c/--concurrency 3 split over 4 shards leaves shard 3 none"},
		// The README's sharded connect (-c 64) at --rate auto: the search is
		// the conflict, not -c.
		{[]string{"connect", url, "-c", "64", "--rate", "auto", "--shard", "0/2", "--start-at", soon}, "--shard with a rate search (--rate auto or FROM..TO): each step depends on what the last trial saw, which shards cannot agree on: search on one client machine, or give the shards fixed --rate"},
		{[]string{"connect", "builtin", "--shard", "0/2", "--start-at", soon}, "--shard splits the clients of a run over machines"},
		{[]string{"connect", "--lab", "postgres", "--shard", "0/2", "--start-at", soon}, "give the URL of one server"},
		{[]string{"crypto", "--shard", "0/2"}, "--shard: crypto measures this machine's own primitives"},
		{[]string{"merge", notShard, "-o", filepath.Join(dir, "m.json")}, "is not a shard's result"},
		{[]string{"merge", filepath.Join(dir, "none.json"), "-o", filepath.Join(dir, "m.json")}, "no such file"},
		{[]string{"merge", notShard}, "give -o RESULT.json"},
	}
	for _, tt := range tests {
		code, _, stderr := runMain(t, tt.args...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q", tt.args, code, stderr, exitUsage, tt.want)
		}
	}
}
