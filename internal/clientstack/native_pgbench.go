package clientstack

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/stats"
)

// pgbench runs libpq's stack: pgbench with a generated script, -j threads
// for -c clients (one thread a connection, as a threaded libpq
// application runs), -C for connect. A pool run for a duration reports
// pgbench's own count and a sample of its latencies (runSampled); connect
// and a count reports each operation from its per-transaction log (-l),
// whose times are one clock, pgbench's monotonic clock shifted to the
// Unix epoch, in µs.
type pgbench struct {
	*nativeClient
	exe string
}

func startPgbench(ctx context.Context, cfg Config) (Client, error) {
	if err := refusePgbench(cfg); err != nil {
		return nil, err
	}
	exe, err := lookTool(cfg.Stack.Name, "pgbench", "/usr/lib/postgresql/*/bin")
	if err != nil {
		return nil, err
	}
	v := field(toolVersion(ctx, exe, "--version"), "(PostgreSQL)")
	n, err := newNative(cfg, Hello{Driver: "libpq/" + v, TLS: opensslVersion(ctx), Model: "threads"})
	if err != nil {
		return nil, err
	}
	return &pgbench{nativeClient: n, exe: exe}, nil
}

func refusePgbench(cfg Config) error {
	switch {
	case cfg.Workload != "ping" && cfg.Workload != "point-select":
		return refuse(cfg, "workload %s: pgbench here runs ping (SELECT 1) and point-select", cfg.Workload)
	case cfg.QueryMode != "" && cfg.QueryMode != "prepared" && cfg.QueryMode != "simple":
		return refuse(cfg, "query mode %s: pgbench has -M prepared and -M simple", cfg.QueryMode)
	case cfg.TLS == "off":
		return nil
	case cfg.Resume:
		return refuse(cfg, "resumption: libpq keeps no TLS session between connections (and PostgreSQL's server disables resumption)")
	case cfg.Verify != "none" && cfg.CA == "":
		return refuse(cfg, "verification against the system's CAs: libpq 15 reads its CAs only from sslrootcert (a CA file)")
	}
	return refuseCommon(cfg)
}

// conninfo is libpq's connection string for cfg: no password (that is in
// a passfile), libpq's own TLS settings, the server name as host and the
// address as hostaddr so that verify-full checks the name.
func (p *pgbench) conninfo() string {
	c := p.cfg
	q := func(v string) string {
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
	}
	kv := [][2]string{{"hostaddr", c.Host}, {"port", strconv.Itoa(c.Port)}, {"user", c.User}, {"dbname", c.Database},
		{"gssencmode", "disable"}}
	if c.ServerName != "" {
		kv = append(kv, [2]string{"host", c.ServerName})
	} else {
		kv = append(kv, [2]string{"host", c.Host})
	}
	if c.Timeout > 0 {
		kv = append(kv, [2]string{"connect_timeout", strconv.Itoa(wholeSeconds(c.Timeout))})
	}
	switch {
	case c.TLS == "off":
		kv = append(kv, [2]string{"sslmode", "disable"})
	default:
		mode := map[string]string{"full": "verify-full", "ca": "verify-ca", "none": "require"}[c.Verify]
		if mode == "" {
			mode = "verify-full"
		}
		kv = append(kv, [2]string{"sslmode", mode})
		if mode != "require" {
			kv = append(kv, [2]string{"sslrootcert", c.CA})
		}
		if c.Cert != "" {
			kv = append(kv, [2]string{"sslcert", c.Cert}, [2]string{"sslkey", c.Key})
		}
		if c.TLS == "1.2" || c.TLS == "1.3" {
			kv = append(kv, [2]string{"ssl_min_protocol_version", "TLSv" + c.TLS}, [2]string{"ssl_max_protocol_version", "TLSv" + c.TLS})
		}
	}
	var s []string
	for _, p := range kv {
		s = append(s, p[0]+"="+q(p[1]))
	}
	return strings.Join(s, " ")
}

// script is the pgbench script of one transaction: perConn statements of
// the workload (PROTOCOL.md's: SELECT 1, or the point select on a table
// and row drawn uniformly).
func pgbenchScript(cfg Config, perConn int) string {
	var s strings.Builder
	for range max(perConn, 1) {
		if cfg.Workload == "ping" {
			s.WriteString("SELECT 1;\n")
			continue
		}
		fmt.Fprintf(&s, "\\set id random(1, %d)\n", max(cfg.Rows, 1))
		if cfg.Tables <= 1 {
			s.WriteString("SELECT c FROM sbtest1 WHERE id = :id;\n")
			continue
		}
		// A table name cannot be a parameter of a prepared statement:
		// one statement per table, chosen by \if.
		fmt.Fprintf(&s, "\\set t random(1, %d)\n", cfg.Tables)
		for t := 1; t <= cfg.Tables; t++ {
			kw := `\elif`
			if t == 1 {
				kw = `\if`
			}
			fmt.Fprintf(&s, "%s :t = %d\nSELECT c FROM sbtest%d WHERE id = :id;\n", kw, t, t)
		}
		s.WriteString("\\endif\n")
	}
	return s.String()
}

// passfile writes the password in libpq's passfile format, 0600.
func (p *pgbench) passfile() (string, error) {
	path := filepath.Join(p.dir, "passfile")
	pw := strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(p.cfg.Password)
	return path, os.WriteFile(path, []byte("*:*:*:*:"+pw+"\n"), 0o600)
}

var (
	pgbenchAbort     = regexp.MustCompile(`client (\d+) .*aborted`)
	pgbenchConnTime  = regexp.MustCompile(`(?m)^average connection time = ([0-9.]+) ms`)
	pgbenchProcessed = regexp.MustCompile(`(?m)^number of transactions actually processed: (\d+)`)
	pgbenchFailed    = regexp.MustCompile(`(?m)^number of failed transactions: (\d+)`)
	pgbenchTPS       = regexp.MustCompile(`(?m)^tps = ([0-9.]+) `)
)

// pgbenchSampling is the share of a pool run's transactions whose
// latencies pgbench logs (--sampling-rate): its per-transaction log
// costs it about 2 µs of CPU a transaction (a formatted line each: 12%
// of its 17 µs at 4 clients here, taken from the server it shares the
// CPUs with); one in ten costs a tenth of that and still samples 1,500
// latencies a second at 15,000 transactions/s.
const pgbenchSampling = 0.1

// pgbenchRun is what one pgbench process needs: the run's directory, its
// script and environment.
type pgbenchRun struct {
	dir, script string
	env         []string
}

func (p *pgbench) Run(ctx context.Context, r Run) (rep Report, err error) {
	if r.Duration <= 0 {
		return rep, fmt.Errorf("client %s: a run needs a duration", p.cfg.Stack.Name)
	}
	if r.Experiment != "connect" && r.Experiment != "pool" {
		return rep, refuse(p.cfg, "experiment %s: pgbench runs connect (-C) and pool", r.Experiment)
	}
	dir, err := p.runDir()
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	perConn := 1
	if r.Experiment == "connect" {
		perConn = max(r.PerConn, 1)
	}
	run := pgbenchRun{dir: dir, script: filepath.Join(dir, "workload.sql")}
	if err := os.WriteFile(run.script, []byte(pgbenchScript(p.cfg, perConn)), 0o600); err != nil {
		return rep, err
	}
	pass, err := p.passfile()
	if err != nil {
		return rep, err
	}
	conf, err := opensslConf(dir, p.cfg, false)
	if err != nil {
		return rep, err
	}
	run.env = toolEnv(append(conf, "PGPASSFILE="+pass)...)
	if r.Experiment == "pool" && r.MaxOps == 0 {
		return p.runSampled(ctx, r, run)
	}
	return p.runLogged(ctx, r, run)
}

// pgbenchAborted is a client pgbench aborted on an error, with the error
// it printed.
type pgbenchAborted struct {
	client int
	msg    string
}

// exec runs one pgbench process with the run's clients and threads and
// more arguments. Its aborted clients come back apart: a run with aborts
// exits with status 2, which is no error here.
func (p *pgbench) exec(ctx context.Context, r Run, run pgbenchRun, more ...string) (toolResult, []pgbenchAborted, error) {
	mode := p.cfg.QueryMode
	if mode == "" {
		mode = "prepared"
	}
	c := strconv.Itoa(max(r.Concurrency, 1))
	args := append([]string{"-n", "-M", mode, "-c", c, "-j", c, "-f", run.script}, more...)
	cmd := exec.Command(p.exe, append(args, p.conninfo())...)
	cmd.Env = run.env
	cmd.Dir = run.dir

	// pgbench aborts a client on an error (exit status 2): each abort is
	// an operation that failed, with the error printed before it.
	var mu sync.Mutex
	var aborts []pgbenchAborted
	lastErr := ""
	t := tool{stack: p.cfg.Stack.Name, cmd: cmd, netns: p.cfg.Netns, password: p.cfg.Password, limit: limitOf(p.cfg, r),
		onStderr: func(line string, _ time.Time) bool {
			mu.Lock()
			defer mu.Unlock()
			msg := strings.TrimPrefix(line, "pgbench: error: ")
			if m := pgbenchAbort.FindStringSubmatch(line); m != nil {
				id, _ := strconv.Atoi(m[1])
				// The error is printed before the abort (whose own words, in
				// prepared mode, are of the statement it could not prepare).
				why := lastErr
				if why == "" {
					_, why, _ = strings.Cut(msg, ": ")
				}
				aborts = append(aborts, pgbenchAborted{id, why})
			} else if i := strings.Index(line, "ERROR:"); i >= 0 {
				// Threads print at once: a line may start with another's
				// "pgbench:".
				lastErr = line[i:]
			} else if msg != line && !strings.HasPrefix(msg, "could not create connection") && !strings.HasPrefix(msg, "Run was aborted") {
				lastErr = msg
			}
			return false
		},
		explain: func([]byte) string {
			mu.Lock()
			defer mu.Unlock()
			return lastErr
		}}
	res, err := t.run(ctx)
	mu.Lock()
	defer mu.Unlock()
	if err != nil && res.exit && res.code == 2 && len(aborts) > 0 {
		err = nil
	}
	return res, aborts, err
}

// abortedOp is an aborted client's failed operation, from start to end.
func abortedOp(a pgbenchAborted, start, end int64) Op {
	phase, kind := errorKind(a.msg)
	if strings.Contains(a.msg, "ERROR:") {
		phase, kind = "query", "server"
	}
	return Op{Worker: a.client, Start: start, End: max(start, end), Phase: phase, Kind: kind, Message: clip(a.msg)}
}

// runSampled runs a pool for a duration: the warm-up as a pgbench run of
// its own, unreported, then the measured run, whose count of
// transactions is pgbench's own (exact) and whose latencies are a sample
// (pgbenchSampling) of its per-transaction log. Its time is pgbench's
// too: the count over its rate, which leaves out the connections' opening
// as a pool's warm-up does.
func (p *pgbench) runSampled(ctx context.Context, r Run, run pgbenchRun) (rep Report, err error) {
	// Each pgbench opens a first connection of its own, then its pool.
	rep.Extra = exactly(1)
	if r.Warmup > 0 {
		rep.Extra = exactly(1 + int64(max(r.Concurrency, 1)) + 1)
		res, _, err := p.exec(ctx, r, run, "-T", strconv.Itoa(wholeSeconds(r.Warmup)))
		rep.Warmup, rep.WarmupCPU = res.ended.Sub(res.began), res.cpu
		if err != nil {
			return rep, err
		}
	}
	r.warmed()
	res, aborts, err := p.exec(ctx, r, run, "-T", strconv.Itoa(wholeSeconds(r.Duration)),
		"-l", "--sampling-rate="+strconv.FormatFloat(pgbenchSampling, 'f', -1, 64), "--log-prefix="+filepath.Join(run.dir, "log"))
	rep.CPU, rep.Elapsed = res.cpu, res.ended.Sub(res.began)
	if err != nil {
		return rep, err
	}
	n, failed, tps, err := pgbenchTotals(res.stdout)
	if err != nil {
		return rep, fmt.Errorf("client %s: %w", p.cfg.Stack.Name, err)
	}
	if tps > 0 {
		rep.Elapsed = time.Duration(float64(n) / tps * float64(time.Second))
	}
	sample, err := readPgbenchLogs(run.dir, false, 0)
	if err != nil {
		return rep, fmt.Errorf("client %s: pgbench's log: %w", p.cfg.Stack.Name, err)
	}
	tot := &Totals{Ops: n, Errors: failed}
	if failed > 0 {
		tot.ErrorSample = "pgbench counted failed transactions (serialization or deadlock errors)"
	}
	rec := stats.NewRecorder()
	for _, o := range sample {
		if !o.Failed() {
			rec.Record(time.Duration(o.End - o.Start))
		}
	}
	if rec.Count() > 0 {
		h := rec.Hist()
		d := func(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
		tot.Mean, tot.P50, tot.P95, tot.P99, tot.Max = d(h.Mean), d(h.P50), d(h.P95), d(h.P99), d(h.Max)
	}
	rep.Totals = tot
	// An aborted client's failed operation spans the measured run (the
	// sampled log cannot say when its last transaction ended), so that
	// the operations' span stays the run's time.
	start := res.began.UnixNano()
	for _, a := range aborts {
		rep.Ops = append(rep.Ops, abortedOp(a, start, start+rep.Elapsed.Nanoseconds()))
	}
	return rep, nil
}

// pgbenchTotals reads pgbench's summary: the transactions it processed,
// those that failed (serialization and deadlock errors; other errors
// abort the client) and its rate, without the connections' opening.
func pgbenchTotals(stdout []byte) (n, failed int64, tps float64, err error) {
	m := pgbenchProcessed.FindSubmatch(stdout)
	if m == nil {
		return 0, 0, 0, fmt.Errorf("pgbench printed no count of transactions: %q", clip(firstLine(string(stdout))))
	}
	n, _ = strconv.ParseInt(string(m[1]), 10, 64)
	if m := pgbenchFailed.FindSubmatch(stdout); m != nil {
		failed, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	if m := pgbenchTPS.FindSubmatch(stdout); m != nil {
		tps, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	return n, failed, tps, nil
}

// runLogged runs connect, and a pool for a count: each transaction from
// pgbench's per-transaction log (-l), which -C needs to time each
// connection and a count needs to stop at MaxOps exactly. A pool's
// warm-up is the first Warmup of its run (its clients connect first):
// its operations are cut below by window.
func (p *pgbench) runLogged(ctx context.Context, r Run, run pgbenchRun) (rep Report, err error) {
	warmup := r.Warmup
	if r.Experiment == "connect" {
		warmup = 0
	}
	c := max(r.Concurrency, 1)
	args := []string{"-l", "--log-prefix=" + filepath.Join(run.dir, "log")}
	if r.Experiment == "connect" {
		args = append(args, "-C")
	}
	if r.MaxOps > 0 {
		args = append(args, "-t", strconv.FormatInt((r.MaxOps+int64(c)-1)/int64(c), 10))
	} else {
		args = append(args, "-T", strconv.Itoa(wholeSeconds(warmup+r.Duration)))
	}
	warm := time.AfterFunc(warmup, r.warmed)
	res, aborts, err := p.exec(ctx, r, run, args...)
	warm.Stop()
	rep.Elapsed, rep.CPU = max(res.ended.Sub(res.began)-warmup, 0), res.cpu
	if err != nil {
		return rep, err
	}
	var connAvg time.Duration
	if m := pgbenchConnTime.FindSubmatch(res.stdout); m != nil {
		ms, _ := strconv.ParseFloat(string(m[1]), 64)
		connAvg = time.Duration(ms * float64(time.Millisecond))
	}
	ops, err := readPgbenchLogs(run.dir, r.Experiment == "connect", connAvg)
	if err != nil {
		return rep, fmt.Errorf("client %s: pgbench's log: %w", p.cfg.Stack.Name, err)
	}
	// An aborted client's failed operation: from its last logged end to
	// the run's end (the log has no line for it).
	last := map[int]int64{}
	first := res.began.UnixNano()
	for i, o := range ops {
		last[o.Worker] = max(last[o.Worker], o.End)
		if i == 0 || o.Start < first {
			first = o.Start
		}
	}
	for _, a := range aborts {
		start, ok := last[a.client]
		if !ok {
			start = first
		}
		ops = append(ops, abortedOp(a, start, res.ended.UnixNano()))
	}
	all := len(ops)
	rep.Ops = window(ops, first, warmup, r)
	// pgbench's first connection, and under -C each transaction cut
	// (past a count, or the run's end) is one more.
	rep.Extra = exactly(1)
	if r.Experiment == "connect" {
		rep.Extra = exactly(int64(1 + all - len(rep.Ops)))
	}
	if len(rep.Ops) < all {
		// What ran in the warm-up or past the run's end (-T counts whole
		// seconds, -t whole transactions per client) is not the run's:
		// nor is its share of the CPU (pgbench meters only its whole
		// process).
		cpu := rep.CPU
		rep.CPU = time.Duration(float64(cpu) * float64(len(rep.Ops)) / float64(all))
		if warmup > 0 {
			warm := 0
			for _, o := range ops {
				if o.Start < first+warmup.Nanoseconds() {
					warm++
				}
			}
			rep.Warmup = warmup
			rep.WarmupCPU = time.Duration(float64(cpu) * float64(warm) / float64(all))
		}
	}
	return rep, nil
}

// window keeps the operations of the run: those that started after the
// warm-up and before its end, at most MaxOps, in the order they ended. A
// tool's own clock ends a run of whole seconds (its -T or --time starts
// a little before its first operation): only the part of a second it ran
// past the duration is cut here.
func window(ops []Op, first int64, warmup time.Duration, r Run) []Op {
	from := first + warmup.Nanoseconds()
	to := int64(math.MaxInt64)
	if whole := time.Duration(wholeSeconds(warmup+r.Duration)) * time.Second; whole != warmup+r.Duration {
		to = from + r.Duration.Nanoseconds()
	}
	var kept []Op
	for _, o := range ops {
		if o.Start >= from && o.Start < to {
			kept = append(kept, o)
		}
	}
	slices.SortStableFunc(kept, func(a, b Op) int { return int(a.End - b.End) })
	if r.MaxOps > 0 && int64(len(kept)) > r.MaxOps {
		kept = kept[:r.MaxOps]
	}
	return kept
}

// readPgbenchLogs reads pgbench's per-transaction logs (one file per
// thread): "client_id transaction_no latency_us script_no epoch_s epoch_us",
// the epoch time being the transaction's end. A transaction's latency
// excludes -C's connect and close (pgbench.c times them apart, as
// conn_duration): under connect an operation is a client's whole cycle,
// from the end of its previous transaction (so its previous close, its
// connect, its statements), and a client's first starts at its first
// transaction's start less pgbench's average connection time.
func readPgbenchLogs(dir string, connect bool, connAvg time.Duration) ([]Op, error) {
	files, err := filepath.Glob(filepath.Join(dir, "log.*"))
	if err != nil {
		return nil, err
	}
	type tx struct {
		client int
		no     int64
		op     Op
	}
	var txs []tx
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 6 {
				fh.Close()
				return nil, fmt.Errorf("a line of %d fields, not 6: %q", len(fs), clip(sc.Text()))
			}
			client, err1 := strconv.Atoi(fs[0])
			no, err2 := strconv.ParseInt(fs[1], 10, 64)
			sec, err3 := strconv.ParseInt(fs[4], 10, 64)
			usec, err4 := strconv.ParseInt(fs[5], 10, 64)
			if err := firstErr(err1, err2, err3, err4); err != nil {
				fh.Close()
				return nil, fmt.Errorf("%q: %w", clip(sc.Text()), err)
			}
			end := (sec*1e6 + usec) * 1e3
			o := Op{Worker: client, End: end}
			if lat, err := strconv.ParseInt(fs[2], 10, 64); err == nil {
				o.Start = end - lat*1e3
			} else { // "failed" (or "skipped"): no latency
				o.Start, o.Phase, o.Kind, o.Message = end, "query", "server", "pgbench logged the transaction "+fs[2]
			}
			txs = append(txs, tx{client, no, o})
		}
		err = sc.Err()
		fh.Close()
		if err != nil {
			return nil, err
		}
	}
	if connect {
		slices.SortFunc(txs, func(a, b tx) int {
			if a.client != b.client {
				return a.client - b.client
			}
			return int(a.no - b.no)
		})
		for i := range txs {
			if i > 0 && txs[i-1].client == txs[i].client {
				txs[i].op.Start = txs[i-1].op.End
			} else {
				txs[i].op.Start -= connAvg.Nanoseconds()
			}
		}
	}
	ops := make([]Op, len(txs))
	for i, t := range txs {
		ops[i] = t.op
	}
	return ops, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
