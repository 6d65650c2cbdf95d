package clientstack

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// redisBenchmark runs hiredis's stack: redis-benchmark, -c connections on
// its one event loop, -k 1 for pool and -k 0 (a new connection per
// request) for connect. It prints aggregates only: a run's Totals.
type redisBenchmark struct {
	*nativeClient
	exe string
}

func startRedisBenchmark(ctx context.Context, cfg Config) (Client, error) {
	if err := refuseRedisBenchmark(cfg); err != nil {
		return nil, err
	}
	exe, err := lookTool(cfg.Stack.Name, "redis-benchmark")
	if err != nil {
		return nil, err
	}
	v := field(toolVersion(ctx, exe, "--version"), "redis-benchmark")
	n, err := newNative(cfg, Hello{Driver: "redis-benchmark/" + v, TLS: opensslVersion(ctx), Model: "event-loop"})
	if err != nil {
		return nil, err
	}
	return &redisBenchmark{nativeClient: n, exe: exe}, nil
}

func refuseRedisBenchmark(cfg Config) error {
	switch {
	case cfg.Password != "":
		return refuse(cfg, "a password: redis-benchmark takes one only on its command line (-a, -u), where every user of the machine can read it, and reads none from the environment or a file (no REDISCLI_AUTH, unlike redis-cli): use --client redis-py, jedis or ioredis, which read it from a 0600 file")
	case cfg.Workload != "ping" && cfg.Workload != "get":
		return refuse(cfg, "workload %s: redis-benchmark here runs ping and get", cfg.Workload)
	case cfg.TLS == "off":
		return nil
	case cfg.Verify == "full":
		return refuse(cfg, "verify full: hiredis checks the certificate's chain, never its name: against a server tlsbench did not start run it with --insecure (no check at all), or use --client redis-py, jedis or ioredis")
	case cfg.Resume:
		return refuse(cfg, "resumption: hiredis keeps no TLS session between connections")
	}
	return refuseCommon(cfg)
}

// args are redis-benchmark's arguments for n requests of the workload.
// GET's key is key:__rand_int__, which -r makes a 12-digit number in
// 0..rows-1 (key:000000000042): not the prepared key:1..key:rows, so its
// replies are nil; the command and its round trip are the workload's.
func (b *redisBenchmark) args(r Run, n int64, keepAlive bool) []string {
	c := b.cfg
	a := []string{"-h", c.Host, "-p", strconv.Itoa(c.Port), "-c", strconv.Itoa(max(r.Concurrency, 1)),
		"-n", strconv.FormatInt(n, 10), "--csv", "-k", map[bool]string{true: "1", false: "0"}[keepAlive]}
	if c.TLS != "off" {
		a = append(a, "--tls")
		if c.ServerName != "" {
			a = append(a, "--sni", c.ServerName)
		}
		if c.Verify == "none" {
			a = append(a, "--insecure")
		} else if c.CA != "" {
			a = append(a, "--cacert", c.CA)
		}
		if c.Cert != "" {
			a = append(a, "--cert", c.Cert, "--key", c.Key)
		}
	}
	if c.Workload == "get" {
		return append(a, "-r", strconv.Itoa(max(c.Rows, 1)), "GET", "key:__rand_int__")
	}
	return append(a, "PING")
}

func (b *redisBenchmark) Run(ctx context.Context, r Run) (rep Report, err error) {
	if r.Duration <= 0 {
		return rep, fmt.Errorf("client %s: a run needs a duration", b.cfg.Stack.Name)
	}
	keepAlive := r.Experiment == "pool"
	if !keepAlive && r.Experiment != "connect" {
		return rep, refuse(b.cfg, "experiment %s: redis-benchmark runs connect (-k 0) and pool (-k 1)", r.Experiment)
	}
	if !keepAlive && r.PerConn > 1 {
		return rep, refuse(b.cfg, "%d operations a connection: redis-benchmark -k 0 sends one request a connection", r.PerConn)
	}
	dir, err := b.runDir()
	if err != nil {
		return rep, err
	}
	conf, err := opensslConf(dir, b.cfg, true)
	if err != nil {
		return rep, err
	}
	c := int64(max(r.Concurrency, 1))
	// redis-benchmark's own connection, for the server's CONFIG; under
	// -k 0 a client that ends its request while others are in flight
	// connects anew, and up to one a client but one may connect as the
	// run ends and send nothing (redis-benchmark.c's clientDone: n + 1
	// to n + c in all).
	own := Extra{Min: 1, Max: c, Known: true}
	if keepAlive {
		own = exactly(1)
	}
	rep.Extra = own
	n := r.MaxOps
	if n <= 0 {
		// redis-benchmark counts requests, not time: a first run (the
		// warm-up: hiredis is C, with nothing else to warm) measures the
		// rate, the second runs for the duration.
		probe := max(2000, 200*c)
		if !keepAlive {
			probe = max(100, 20*c)
		}
		res, _, err := b.once(ctx, dir, conf, r, probe, keepAlive)
		if err != nil {
			return rep, err
		}
		rate := float64(probe) / res.ended.Sub(res.began).Seconds()
		n = max(1, int64(math.Ceil(rate*r.Duration.Seconds())))
		rep.Warmup, rep.WarmupCPU = res.ended.Sub(res.began), res.cpu
		// The warm-up run's connections: a pool's, or one a request.
		first := probe
		if keepAlive {
			first = c
		}
		rep.Extra = Extra{Min: own.Min + first + own.Min, Max: own.Max + first + own.Max, Known: true}
	}
	r.warmed()
	res, tot, err := b.once(ctx, dir, conf, r, n, keepAlive)
	rep.Elapsed, rep.CPU = res.ended.Sub(res.began), res.cpu
	if err != nil {
		return rep, err
	}
	rep.Totals = tot
	return rep, nil
}

// once runs redis-benchmark for n requests and reads its CSV line.
func (b *redisBenchmark) once(ctx context.Context, dir string, conf []string, r Run, n int64, keepAlive bool) (toolResult, *Totals, error) {
	cmd := exec.Command(b.exe, b.args(r, n, keepAlive)...)
	cmd.Env = toolEnv(conf...)
	cmd.Dir = dir
	res, err := tool{stack: b.cfg.Stack.Name, cmd: cmd, netns: b.cfg.Netns, limit: limitOf(b.cfg, r) + r.Duration}.run(ctx)
	if err != nil {
		return res, nil, err
	}
	tot, err := parseRedisCSV(string(res.stdout))
	if err != nil {
		return res, nil, fmt.Errorf("client %s: redis-benchmark's output: %w: %s", b.cfg.Stack.Name, err, res.stderr.String())
	}
	tot.Ops = n
	return res, tot, nil
}

// parseRedisCSV reads redis-benchmark --csv: a header
// "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
// "p95_latency_ms","p99_latency_ms","max_latency_ms" and a line a test.
func parseRedisCSV(out string) (*Totals, error) {
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) != 2 || len(rows[0]) != 8 || len(rows[1]) != 8 || rows[0][2] != "avg_latency_ms" || rows[0][7] != "max_latency_ms" {
		return nil, fmt.Errorf("not a header and one test of 8 fields: %q", clip(out))
	}
	var ms [8]time.Duration
	for i := 2; i < 8; i++ {
		v, err := strconv.ParseFloat(rows[1][i], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rows[0][i], err)
		}
		ms[i] = time.Duration(v * float64(time.Millisecond))
	}
	return &Totals{Mean: ms[2], P50: ms[4], P95: ms[5], P99: ms[6], Max: ms[7]}, nil
}
