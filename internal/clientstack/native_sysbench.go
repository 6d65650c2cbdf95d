package clientstack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// sysbench runs libmariadb's stack: sysbench 1.0.20's oltp_point_select,
// a connection a thread (--threads = the concurrency), pool only: it has
// no reconnect option. It prints aggregates: a run's Totals, the
// percentiles from its latency histogram.
//
// With --mysql-ssl=on it loads cacert.pem, client-cert.pem and
// client-key.pem from its working directory, always: its TLS is mutual
// and checks the server's chain (not its name), so a TLS variant needs a
// CA and a client certificate the server trusts. The run's directory
// holds links of those names to the variant's files.
type sysbench struct {
	*nativeClient
	exe string
}

func startSysbench(ctx context.Context, cfg Config) (Client, error) {
	if err := refuseSysbench(cfg); err != nil {
		return nil, err
	}
	exe, err := lookTool(cfg.Stack.Name, "sysbench")
	if err != nil {
		return nil, err
	}
	v := "-" // mariadb_config comes with libmariadb-dev, which may be missing
	if mc, err := exec.LookPath("mariadb_config"); err == nil {
		v = toolVersion(ctx, mc, "--cc_version")
	}
	n, err := newNative(cfg, Hello{Driver: "libmariadb/" + v, TLS: opensslVersion(ctx), Model: "threads"})
	if err != nil {
		return nil, err
	}
	return &sysbench{nativeClient: n, exe: exe}, nil
}

func refuseSysbench(cfg Config) error {
	switch {
	case cfg.Workload != "point-select":
		return refuse(cfg, "workload %s: sysbench here runs oltp_point_select (point-select)", cfg.Workload)
	case cfg.QueryMode != "" && cfg.QueryMode != "prepared" && cfg.QueryMode != "simple":
		return refuse(cfg, "query mode %s: sysbench has prepared (--db-ps-mode=auto) and simple (disable)", cfg.QueryMode)
	case strings.ContainsAny(cfg.Password, "\r\n"):
		return refuse(cfg, "a password with a line break: sysbench's --config-file holds one option a line")
	case cfg.TLS == "off":
		return nil
	case cfg.Verify != "ca" || cfg.CA == "":
		return refuse(cfg, "verify %s: sysbench's --mysql-ssl=on checks the server's chain against cacert.pem in its directory, never its name, and cannot skip it: it runs against a server tlsbench started (--lab mariadb); against yours use --client mysqlclient (libmariadb too, the name checked)", cfg.Verify)
	case cfg.Cert == "" || cfg.Key == "":
		return refuse(cfg, "TLS without a client certificate: sysbench's --mysql-ssl=on always presents client-cert.pem and client-key.pem from its directory (mutual TLS): give one the server's CA signed")
	case cfg.Resume:
		return refuse(cfg, "resumption: sysbench opens one connection a thread, and libmariadb keeps no TLS session")
	}
	return refuseCommon(cfg)
}

var (
	sysbenchEvents = regexp.MustCompile(`(?m)^\s*total number of events:\s+(\d+)`)
	sysbenchErrors = regexp.MustCompile(`(?m)^\s*ignored errors:\s+(\d+)`)
	sysbenchSum    = regexp.MustCompile(`(?m)^\s*sum:\s+([0-9.]+)`)
	sysbenchMax    = regexp.MustCompile(`(?m)^\s*max:\s+([0-9.]+)`)
	sysbenchBucket = regexp.MustCompile(`(?m)^\s*([0-9.]+) \|\**\s+(\d+)$`)
	// A connection's error, or a statement's.
	sysbenchFatal = regexp.MustCompile(`FATAL: (?:error (\d+): (.*)|MySQL error: (\d+) "(.*)")`)
)

func (s *sysbench) Run(ctx context.Context, r Run) (rep Report, err error) {
	switch {
	case r.Duration <= 0:
		return rep, fmt.Errorf("client %s: a run needs a duration", s.cfg.Stack.Name)
	case r.Experiment != "pool":
		return rep, refuse(s.cfg, "experiment %s: sysbench 1.0.20 keeps a connection a thread for its run and has no reconnect option (pool only)", r.Experiment)
	}
	dir, err := s.runDir()
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	if err := s.files(dir); err != nil {
		return rep, err
	}
	rep.Extra = exactly(0) // a connection a thread, opened as it starts
	if r.Warmup > 0 {
		// sysbench 1.0.20 has no --warmup-time: a first run, unreported.
		if _, _, err := s.once(ctx, dir, r, 0, r.Warmup); err != nil {
			return rep, err
		}
		rep.Extra = exactly(int64(max(r.Concurrency, 1)))
	}
	r.warmed()
	res, tot, err := s.once(ctx, dir, r, r.MaxOps, r.Duration)
	rep.Elapsed, rep.CPU = res.ended.Sub(res.began), res.cpu
	if err != nil {
		return rep, err
	}
	rep.Totals = tot
	return rep, nil
}

// files writes the run's directory: the password in a 0600 --config-file,
// the OPENSSL_CONF, and sysbench's fixed TLS file names, linked.
func (s *sysbench) files(dir string) error {
	c := s.cfg
	if err := os.WriteFile(filepath.Join(dir, "sysbench.conf"), []byte("mysql-password="+c.Password+"\n"), 0o600); err != nil {
		return err
	}
	if c.TLS == "off" {
		return nil
	}
	for name, file := range map[string]string{"cacert.pem": c.CA, "client-cert.pem": c.Cert, "client-key.pem": c.Key} {
		abs, err := filepath.Abs(file)
		if err != nil {
			return err
		}
		if err := os.Symlink(abs, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// once runs sysbench for d (whole seconds) or n events, whichever first.
func (s *sysbench) once(ctx context.Context, dir string, r Run, n int64, d time.Duration) (toolResult, *Totals, error) {
	c := s.cfg
	mode := "auto"
	if c.QueryMode == "simple" {
		mode = "disable"
	}
	args := []string{"oltp_point_select", "--config-file=sysbench.conf",
		"--mysql-host=" + c.Host, "--mysql-port=" + strconv.Itoa(c.Port), "--mysql-user=" + c.User, "--mysql-db=" + c.Database,
		"--mysql-ssl=" + map[bool]string{true: "on", false: "off"}[c.TLS != "off"], "--db-ps-mode=" + mode,
		"--tables=" + strconv.Itoa(max(c.Tables, 1)), "--table-size=" + strconv.Itoa(max(c.Rows, 1)),
		"--threads=" + strconv.Itoa(max(r.Concurrency, 1)), "--time=" + strconv.Itoa(wholeSeconds(d)),
		"--events=" + strconv.FormatInt(max(n, 0), 10), "--histogram=on", "run"}
	env, err := opensslConf(dir, c, true)
	if err != nil {
		return toolResult{}, nil, err
	}
	cmd := exec.Command(s.exe, args...)
	cmd.Env = toolEnv(env...)
	cmd.Dir = dir
	// sysbench ends with "FATAL: Thread initialization failed!", on its
	// stdout: the library's error is an earlier line, its code put last
	// (a "N: … 'user'@'host'" reads as a URL's password to plan.Redact).
	t := tool{stack: c.Stack.Name, cmd: cmd, netns: c.Netns, password: c.Password, limit: limitOf(c, r) + d,
		explain: func(stdout []byte) string {
			if m := sysbenchFatal.FindSubmatch(stdout); m != nil {
				if len(m[1]) == 0 {
					m[1], m[2] = m[3], m[4]
				}
				return fmt.Sprintf("%s (error %s)", m[2], m[1])
			}
			return ""
		}}
	res, err := t.run(ctx)
	if err != nil {
		return res, nil, err
	}
	tot, err := parseSysbench(string(res.stdout))
	if err != nil {
		return res, nil, fmt.Errorf("client %s: sysbench's output: %w", c.Stack.Name, err)
	}
	return res, tot, nil
}

// parseSysbench reads sysbench's report: the events, the errors it
// ignored, the latency's sum and max (ms, the mean being sum/events) and
// the histogram (--histogram: a line a bucket, "value |*** count", in ms)
// for the percentiles.
func parseSysbench(out string) (*Totals, error) {
	ms := func(s string) time.Duration {
		v, _ := strconv.ParseFloat(s, 64)
		return time.Duration(v * float64(time.Millisecond))
	}
	m := sysbenchEvents.FindStringSubmatch(out)
	sum, mx := sysbenchSum.FindStringSubmatch(out), sysbenchMax.FindStringSubmatch(out)
	if m == nil || sum == nil || mx == nil {
		return nil, fmt.Errorf("no events, sum or max in %q", clip(out))
	}
	tot := &Totals{Max: ms(mx[1])}
	tot.Ops, _ = strconv.ParseInt(m[1], 10, 64)
	if e := sysbenchErrors.FindStringSubmatch(out); e != nil {
		tot.Errors, _ = strconv.ParseInt(e[1], 10, 64)
	}
	if tot.Ops > 0 {
		tot.Mean = ms(sum[1]) / time.Duration(tot.Ops)
	}
	type bucket struct {
		v time.Duration
		n int64
	}
	var hist []bucket
	var count int64
	for _, b := range sysbenchBucket.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.ParseInt(b[2], 10, 64)
		hist = append(hist, bucket{ms(b[1]), n})
		count += n
	}
	for _, p := range []struct {
		q   float64
		dst *time.Duration
	}{{0.50, &tot.P50}, {0.95, &tot.P95}, {0.99, &tot.P99}} {
		var seen int64
		for _, b := range hist {
			if seen += b.n; float64(seen) >= p.q*float64(count) {
				*p.dst = b.v
				break
			}
		}
	}
	return tot, nil
}
