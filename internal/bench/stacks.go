package bench

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/clientstack"
	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/files"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// The variants of a client stack other than Go's (Variant.Client, --client)
// run through internal/clientstack: one client process per variant,
// started by the check and kept for the run, each trial one Client.Run
// whose Report becomes a result.Trial by stackTrial. The interleaving,
// rounds, failure policy and progress are the Runner's, as for Go's.

// stacks are the Runner's running client stacks and what they need.
type stacks struct {
	running map[string]clientstack.Client // by Variant.ID
	// tried holds the variants whose process ran a trial: the first one
	// warms a JVM up longer (firstWarmup).
	tried map[string]bool
	// dir holds the client certificates and keys given to the stacks as
	// PEM files (0600 in a 0700 directory), removed by Close.
	dir string
	// infos are the stacks as they said of themselves, once each.
	infos []result.ClientStack
	// relays carry the connections of the variants with an RTT (by
	// Variant.ID): Go's dialer cannot delay another process's socket.
	relays map[string]*netx.Relay
	// warned holds the variants warned of once (warnStack); uncounted
	// those whose server keeps no count of connections (stackcount.go).
	warned, uncounted map[string]bool
}

// startClient starts a stack's client: Runner.StartClient or
// clientstack.Start.
func (r *Runner) startClient(ctx context.Context, cfg clientstack.Config) (clientstack.Client, error) {
	if r.StartClient != nil {
		return r.StartClient(ctx, cfg)
	}
	return clientstack.Start(ctx, cfg)
}

// stackClient is the running client of variant v, started if it is not.
func (r *Runner) stackClient(ctx context.Context, v plan.Variant) (clientstack.Client, error) {
	if c, ok := r.stacks.running[v.ID]; ok {
		return c, nil
	}
	cfg, err := r.stackConfig(ctx, v)
	if err != nil {
		return nil, err
	}
	c, err := r.startClient(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if r.stacks.running == nil {
		r.stacks.running = map[string]clientstack.Client{}
	}
	r.stacks.running[v.ID] = c
	h := c.Hello()
	for _, s := range r.stacks.infos {
		if s.Name == cfg.Stack.Name {
			return c, nil
		}
	}
	r.stacks.infos = append(r.stacks.infos, result.ClientStack{Name: cfg.Stack.Name, Library: cfg.Stack.Library,
		Driver: h.Driver, TLS: h.TLS, Runtime: h.Runtime, Model: h.Model})
	return c, nil
}

// Clients are the client stacks other than Go's the run started, as each
// said of itself (result.Result.Clients).
func (r *Runner) Clients() []result.ClientStack { return r.stacks.infos }

// Close stops every client stack the Runner started, reaping their
// processes, then their relays, and removes the files it gave them.
func (r *Runner) Close() error {
	var errs []error
	for _, c := range r.stacks.running {
		errs = append(errs, c.Close())
	}
	r.stacks.running = nil
	for _, rl := range r.stacks.relays {
		errs = append(errs, rl.Close())
	}
	r.stacks.relays = nil
	if r.stacks.dir != "" {
		errs = append(errs, os.RemoveAll(r.stacks.dir))
		r.stacks.dir = ""
	}
	return errors.Join(errs...)
}

// stackConfig is the configuration of v's stack, from v's driver.Config:
// the address as an IP (the relay's with an RTT: stackRelay), the login
// of its URL (a passfile= read), the TLS settings of its tls.Config (the
// CA's file, the client certificate as PEM files), the spec's workload.
func (r *Runner) stackConfig(ctx context.Context, v plan.Variant) (clientstack.Config, error) {
	cfg, ok := r.Configs[v.ID]
	if !ok {
		return clientstack.Config{}, fmt.Errorf("no connection settings for variant %s", v.ID)
	}
	st, err := plan.LookupClient(r.Scheme, v.Client)
	if err != nil {
		return clientstack.Config{}, err
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return clientstack.Config{}, fmt.Errorf("%s: %w", cfg.Addr, err)
	}
	if _, err := netipParse(host); err != nil {
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			return clientstack.Config{}, fmt.Errorf("resolving %s for client %s: %v", host, st.Name, err)
		}
		host = addrs[0].Unmap().String()
	}
	server := host
	if v.RTT > 0 && v.RTTVia != plan.RTTViaLink { // the link delays itself
		rl, err := r.stackRelay(ctx, v, net.JoinHostPort(host, port))
		if err != nil {
			return clientstack.Config{}, err
		}
		host, port, _ = net.SplitHostPort(rl.Addr())
	}
	p, _ := strconv.Atoi(port)
	out := clientstack.Config{
		Stack: st, Host: host, Port: p, TLS: v.TLS, Resume: v.Resume,
		Workload: r.Spec.ClientWorkload(), Tables: r.Spec.Tables, Rows: r.Spec.Rows, QueryMode: r.Spec.QueryMode,
		Path: cfg.Path, Timeout: cfg.Timeout, Experiments: stackExperiments(r.Spec.Experiments),
	}
	if cfg.Dialer != nil {
		out.Netns = cfg.Dialer.Netns // a delay link's client side
	}
	if u := cfg.URL; u != nil {
		out.User = u.User.Username()
		out.Password, _ = u.User.Password()
		out.Database = strings.TrimPrefix(u.Path, "/")
		if pf := u.Query().Get("passfile"); pf != "" && out.Password == "" {
			_, sport, _ := net.SplitHostPort(cfg.Addr)
			if out.Password, err = passfilePassword(pf, r.Scheme, server, sport, out.Database, out.User); err != nil {
				return clientstack.Config{}, err
			}
		}
	}
	if c := cfg.TLS; c != nil {
		out.ServerName = c.ServerName
		if out.ServerName == "" {
			// The server's address, as a stack connecting to it names
			// it, not the relay's.
			out.ServerName = server
		}
		out.Verify = "full"
		switch {
		case c.InsecureSkipVerify && c.VerifyConnection != nil:
			out.Verify = "ca" // tlsx.SkipHostname
		case c.InsecureSkipVerify:
			out.Verify = "none"
		case st.ChainOnly() && (r.Spec.Lab != "" || r.Spec.Target == plan.Builtin):
			// tlsbench issued the certificate for the address the stack
			// dials: the name check it cannot make would pass.
			out.Verify = "ca"
			r.note(fmt.Sprintf("client %s checks the server's certificate chain, never its name: against the server tlsbench started (whose certificate names the address it is reached at) it runs with the chain checked", st.Name))
		}
		out.CA = r.Spec.CAFile
		if r.Locate != nil {
			ep, err := r.Locate(v)
			if err != nil {
				return clientstack.Config{}, err
			}
			if ep.CAFile != "" {
				out.CA = ep.CAFile
			}
		}
		if v.Group != "" {
			out.Group = plan.GroupLabelOf(v.Group)
		}
		if out.Cert, out.Key, err = r.clientCertFiles(v, c); err != nil {
			return clientstack.Config{}, err
		}
	}
	return out, nil
}

// stackRelay is the relay that carries v's connections to the server at
// target (an IP and port) over v's emulated RTT, started on first use and
// kept for the run (Close stops it). It listens on the loopback address
// of target's family, 127.0.0.1 for a lab server: the stack connects to
// the address it would have, at another port, and verifies the server's
// name as it would have (stackConfig). It dials from the variant's source
// addresses, as Go's connections of the variant do.
func (r *Runner) stackRelay(ctx context.Context, v plan.Variant, target string) (*netx.Relay, error) {
	if rl, ok := r.stacks.relays[v.ID]; ok {
		return rl, nil
	}
	d := r.Configs[v.ID].Dialer
	if d == nil {
		d = &netx.Dialer{}
	}
	// The relay outlives the trial that starts it; Close stops it.
	rl, err := netx.StartRelay(context.WithoutCancel(ctx), target, d.WithRTT(v.RTT))
	if err != nil {
		return nil, fmt.Errorf("the relay that emulates %s of RTT for client %s: %w", plan.RTTLabel(v.RTT), v.Client, err)
	}
	if r.stacks.relays == nil {
		r.stacks.relays = map[string]*netx.Relay{}
	}
	r.stacks.relays[v.ID] = rl
	return rl, nil
}

// relayFailures is how many connections v's relay could not carry to the
// server so far, and the first reason; 0 without a relay.
func (r *Runner) relayFailures(v plan.Variant) (int64, error) {
	rl, ok := r.stacks.relays[v.ID]
	if !ok {
		return 0, nil
	}
	return rl.Failed(), rl.Err()
}

// relayed puts the failures of a run's connections that v's relay could
// not carry to the server (n of them since the run began, the first for
// why) where they happened, in the tcp phase: the stack saw a connect
// that succeeded (to the relay), then a reset, and names the phase it was
// in. It rewrites that many failed operations; a run that failed with
// more left becomes a *relayFailed (stackTally counts its rest in the tcp
// phase); it returns those still left to count (those a tool counted
// only, or a driver retried), none silent.
func relayed(rep *clientstack.Report, runErr error, n int64, why error) (error, int64) {
	if n <= 0 || why == nil {
		return runErr, 0
	}
	f := newRelayFailed(why)
	for i := range rep.Ops {
		o := &rep.Ops[i]
		if n == 0 {
			break
		}
		// The server answered those: it was reached.
		if !o.Failed() || o.Kind == "server" || o.Kind == "auth" {
			continue
		}
		o.Phase, o.Message = netx.PhaseTCP, f.message()
		o.Kind = strings.TrimPrefix(f.kind, netx.PhaseTCP+": ")
		n--
	}
	var counted int64
	if tot := rep.Totals; tot != nil && tot.Errors > 0 {
		counted = min(n, tot.Errors)
		tot.Errors -= counted
		n -= counted
	}
	if runErr != nil && n > 0 {
		f.run = runErr
		return f, counted
	}
	return runErr, counted + n
}

// relayFailed is a stack's run that failed when the relay could not reach
// the server: the relay's error, in the tcp phase, with the stack's.
type relayFailed struct {
	kind     string // "tcp: refused"
	why, run error
}

func newRelayFailed(why error) *relayFailed {
	return &relayFailed{kind: driver.Kind(&driver.OpError{Phase: netx.PhaseTCP, Err: why}), why: why}
}

func (e *relayFailed) message() string { return "through the RTT relay: " + e.why.Error() }

func (e *relayFailed) Error() string {
	return fmt.Sprintf("%s (client: %v)", e.message(), e.run)
}

func (e *relayFailed) Unwrap() []error { return []error{e.why, e.run} }

// stackExperiments are the experiments a stack's runs ask for, as its
// configuration names them.
func stackExperiments(es []plan.Experiment) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e)
	}
	return out
}

// netipParse is net.ParseIP with an error: is host an IP address?
func netipParse(host string) (net.IP, error) {
	if ip := net.ParseIP(host); ip != nil {
		return ip, nil
	}
	return nil, fmt.Errorf("%s is not an IP address", host)
}

// clientCertFiles writes the client certificate c presents (the lab's
// of the variant's --client-cert, or --cert's) as PEM files only this
// user reads, for a stack that takes files; "" without one.
func (r *Runner) clientCertFiles(v plan.Variant, c *tls.Config) (certFile, keyFile string, err error) {
	var cert *tls.Certificate
	switch {
	case c.GetClientCertificate != nil:
		if cert, err = c.GetClientCertificate(&tls.CertificateRequestInfo{}); err != nil {
			return "", "", err
		}
	case len(c.Certificates) > 0:
		cert = &c.Certificates[0]
	}
	if cert == nil || len(cert.Certificate) == 0 {
		return "", "", nil
	}
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return "", "", fmt.Errorf("the client certificate's key for client %s: %w", v.Client, err)
	}
	if r.stacks.dir == "" {
		if r.stacks.dir, err = os.MkdirTemp("", "tlsbench-stacks-"); err != nil {
			return "", "", err
		}
	}
	var chain []byte
	for _, der := range cert.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	name := strings.NewReplacer(" ", "_", "/", "_").Replace(v.ID)
	certFile = filepath.Join(r.stacks.dir, name+".crt")
	keyFile = filepath.Join(r.stacks.dir, name+".key")
	if err := os.WriteFile(certFile, chain, 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// passfilePassword reads the password of a URL's passfile=: libpq's
// format (host:port:database:user:password, * matching anything) for
// PostgreSQL, as pgx reads it; the whole file for the others, as
// tlsbench's MySQL and MongoDB drivers read it.
func passfilePassword(path, engine, host, port, database, user string) (string, error) {
	data, err := files.Read(path, "passfile", files.MaxPEM)
	if err != nil {
		return "", err
	}
	if engine != "postgres" {
		return strings.TrimRight(string(data), "\r\n"), nil
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := splitPassLine(line)
		if len(f) != 5 {
			continue
		}
		match := func(pat, v string) bool { return pat == "*" || pat == v }
		if (match(f[0], host) || f[0] == "localhost" && host == "127.0.0.1") && match(f[1], port) && match(f[2], database) && match(f[3], user) {
			return f[4], nil
		}
	}
	return "", fmt.Errorf("passfile %s has no line for %s:%s:%s:%s", path, host, port, database, user)
}

// splitPassLine splits a libpq passfile line at its unescaped colons.
func splitPassLine(line string) []string {
	var f []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case line[i] == ':':
			f = append(f, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(f, cur.String())
}

// stackRun is the clientstack.Run of a trial: the spec's count and
// duration (a count-bounded trial is bounded in time too: plan gives it
// MaxCountDuration), and the spec's warm-up for connect as for pool: a
// stack's first TLS context, its JIT (a JVM's above all), its caches are
// cold in a process's first trial, which Go's connect trials are not
// (tlsbench itself ran the check and the trials before).
func (r *Runner) stackRun(e plan.Experiment, c, n int) clientstack.Run {
	return clientstack.Run{Experiment: string(e), Concurrency: c, PerConn: n, MaxOps: r.Spec.Count, Duration: r.Spec.Duration,
		Warmup: r.Spec.WarmupTime()}
}

// jvmWarmup is the warm-up of a Java stack's first trial: its JIT is
// cold until then. Measured here (pgjdbc, TLS 1.3 connect, client CPU per
// connection in the trials after the warm-up): 40.7 ms with none, 29.5
// with 1 s, 16.4 then 8–10 ms with 8 s.
const jvmWarmup = 10 * time.Second

// firstWarmup is the warm-up the first trial of a stack's process gets
// at least; the others get the spec's (stackRun).
func firstWarmup(stack string) time.Duration {
	for _, s := range plan.AllClientStacks() {
		if s.Name == stack && s.Lang == "java" {
			return jvmWarmup
		}
	}
	return 0
}

// clientFailed is the kind of error a trial counts when its client
// process failed mid-run (crashed, hung, printed what tlsbench cannot
// read): the operations it did not run.
const clientFailed = "client: failed"

// stackTrial runs one trial of a client stack's variant: one Client.Run.
// A client that fails mid-run keeps its operations; the rest of the
// trial counts as failed (stackTally), and the next trial starts it anew.
func (r *Runner) stackTrial(ctx context.Context, e plan.Experiment, v plan.Variant, c, n int) (result.Trial, error) {
	client, err := r.stackClient(ctx, v)
	if err != nil {
		return result.Trial{}, err
	}
	run := r.stackRun(e, c, n)
	if !r.stacks.tried[v.ID] {
		if r.stacks.tried == nil {
			r.stacks.tried = map[string]bool{}
		}
		r.stacks.tried[v.ID] = true
		run.Warmup = max(run.Warmup, firstWarmup(v.Client))
	}
	// The server's count before the run, on a session opened first.
	count := r.countStack(ctx, v)
	defer count.close()
	var server spanCPU
	server.serverCPU, server.keepGC = r.ServerCPU, true
	// The measured window starts when the client says its warm-up is
	// over; one that never says (it failed first, or a tool has no
	// warm-up) is measured from its command.
	var mu sync.Mutex
	began, warmed, ended := time.Now(), false, false
	server.start()
	run.Warmed = func() {
		mu.Lock()
		defer mu.Unlock()
		if !warmed && !ended {
			began, warmed = time.Now(), true
			server.start()
		}
	}
	failed, _ := r.relayFailures(v)
	rep, runErr := client.Run(ctx, run)
	mu.Lock()
	ended = true
	mu.Unlock()
	now, why := r.relayFailures(v)
	runErr, unnamed := relayed(&rep, runErr, now-failed, why)
	t := result.Trial{Start: began, Ended: time.Now()}
	server.stop(&t)
	if ctx.Err() != nil {
		return t, ctx.Err()
	}
	var refused *clientstack.Refused
	var missing *clientstack.NotInstalled
	if errors.As(runErr, &refused) || errors.As(runErr, &missing) {
		return t, runErr // a restart that cannot be
	}
	tl := stackTally(rep, run, runErr)
	if unnamed > 0 {
		f := newRelayFailed(why)
		tl.countFailure(f.kind, f.message(), unnamed)
	}
	err = tl.fill(&t, rep, run)
	if e == plan.Pool && t.Conns > 0 && client.Hello().Model == "event-loop-pipelined" {
		t.Conns = 1 // its concurrency's commands in flight on one
	}
	r.endCount(ctx, count, v, TrialLabel(e, v, c, n, 0), &t, rep)
	return t, err
}

// stackCounts is what a client's Report adds up to.
type stackCounts struct {
	*workerTally
	// span is the reported operations' time, first start to last end, on
	// the client's clock; 0 without operations.
	span time.Duration
}

// stackTally counts a Report as Go's workers count theirs: each
// operation's time (end - start) into the latency histogram, failures by
// kind "phase: kind" with the first message of each, or a tool's Totals;
// a new-client iteration's two phases as Go's seed trials count them
// (seedSample), their round trips not counted (0).
// A run that failed (err) counts what it did not run as failed under
// clientFailed: the count left of a count-bounded run, else the rate so
// far over the time left, at least one per worker.
func stackTally(rep clientstack.Report, run clientstack.Run, err error) stackCounts {
	tl := stackCounts{workerTally: newTally()}
	if tot := rep.Totals; tot != nil {
		tl.Ops = tot.Ops
		if tot.Errors > 0 {
			tl.countFailure("other: other", tot.ErrorSample, tot.Errors)
		}
	}
	var first, last int64
	for i, o := range rep.Ops {
		if i == 0 || o.Start < first {
			first = o.Start
		}
		last = max(last, o.End)
		if o.Failed() {
			tl.countFailure(o.Phase+": "+o.Kind, o.Phase+": "+o.Message, 1)
			continue
		}
		tl.Ops++
		tl.errRun = 0
		tl.Latency.Record(time.Duration(o.End - o.Start))
		if run.Experiment == string(plan.NewClient) {
			tl.RecordPhase(phaseOnlyConnection, time.Duration(o.Built-o.Start), 0)
			tl.RecordPhase(phaseFirstQuery, time.Duration(o.End-o.Built), 0)
		}
	}
	if len(rep.Ops) > 0 {
		tl.span = time.Duration(last - first)
	}
	if err != nil {
		rest := int64(run.Concurrency)
		if done := int64(len(rep.Ops)); run.MaxOps > 0 {
			rest = max(run.MaxOps-done, 1)
		} else if tl.span > 0 && tl.span < run.Duration {
			rest = max(rest, int64(float64(done)*float64(run.Duration-tl.span)/float64(tl.span)))
		}
		kind := clientFailed
		if f, ok := errors.AsType[*relayFailed](err); ok {
			kind = f.kind
		}
		tl.countFailure(kind, err.Error(), rest)
	}
	return tl
}

// countFailure counts n failures of kind with its message.
func (t *workerTally) countFailure(kind, msg string, n int64) {
	t.errors[kind] += n
	sample := ErrorSample(errors.New(msg))
	if _, ok := t.samples[kind]; !ok {
		t.samples[kind] = sample
	}
	if t.firstErr == nil {
		t.firstErr = errors.New(sample)
	}
	t.lastErr = t.firstErr
	t.errRun += int(n)
}

// fill writes the counts into a trial, as a Go trial's: Ops, Conns (each
// connect operation is a connection, each new client two: its monitor's
// and its first operation's; a pool, or a reused client, holds its
// concurrency),
// Latency, Errors and ErrorSamples, Negotiated from the stack's tls line,
// Elapsed (the reported operations' span, or the measured part's time),
// ClientCPU (the stack's processes' after the warm-up, not tlsbench's). A trial
// with no operation is an error, as Go's.
func (tl stackCounts) fill(t *result.Trial, rep clientstack.Report, run clientstack.Run) error {
	if tl.errRun < maxConsecutiveErrors {
		tl.errRun = 0 // the stack's workers do not give up: the error rate judges
	}
	switch {
	case run.Experiment == string(plan.Connect):
		tl.Conns = tl.Ops
	case run.Experiment == string(plan.NewClient):
		tl.Conns = 2 * tl.Ops
	case tl.Ops > 0:
		tl.Conns = int64(run.Concurrency)
	}
	if n := stackNegotiated(rep.TLS); n != nil {
		tl.negotiated = n
	}
	err := tl.workerTally.fill(t)
	t.Elapsed = tl.span
	if t.Elapsed <= 0 {
		t.Elapsed = rep.Elapsed
	}
	t.ClientCPU = rep.CPU
	if tot := rep.Totals; tot != nil && tot.Ops > 0 && t.Latency.Count == 0 {
		// A tool that prints aggregates: the summary without a histogram.
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		t.Latency = result.Hist{Count: tot.Ops, Mean: ms(tot.Mean), P50: ms(tot.P50), P95: ms(tot.P95), P99: ms(tot.P99), Max: ms(tot.Max)}
	}
	return err
}

// stackNegotiated is a stack's tls line as a result records it: TLS 1.3
// and the group (P-256 for OpenSSL's secp256r1) as Go's are, the suite as
// the stack names it; nil when it said nothing.
func stackNegotiated(n *clientstack.Negotiated) *result.Negotiated {
	if n == nil {
		return nil
	}
	dash := func(s string) string {
		if s == "-" {
			return ""
		}
		return s
	}
	out := &result.Negotiated{Version: dash(n.Version), Suite: dash(n.Cipher), Group: plan.GroupLabelOf(dash(n.Group))}
	if v := versionNumber(out.Version); v != "" && v != out.Version {
		out.Version = "TLS " + v
	}
	return out
}

// checkStack checks a client stack's variant before any trial: its client
// starts (a stack that cannot run the variant says why: *clientstack.Refused;
// one not installed: *clientstack.NotInstalled), runs one connection, and
// says it negotiated what the variant asks for (plain: nothing; TLS: the
// version, and the group where one is asked for and the stack says); then
// the server says what it saw of the stack's connections, where it can
// (stackServer).
func (r *Runner) checkStack(ctx context.Context, v plan.Variant) (result.Check, error) {
	c := result.Check{Variant: v.ID}
	if r.Before != nil {
		if err := r.Before(ctx, v); err != nil {
			return c, err
		}
	}
	client, err := r.stackClient(ctx, v)
	if err != nil {
		return c, err
	}
	// One connection; a pool of one on a stack that runs pool only.
	exp := plan.Connect
	if o := plan.ClientOnly(v.Client); o != "" {
		exp = o
	}
	run := clientstack.Run{Experiment: string(exp), Concurrency: 1, PerConn: 1, MaxOps: 1, Duration: r.Spec.Timeout}
	if plan.ClientTimed(v.Client) {
		// One second of connections, each checked as one would be.
		run.MaxOps, run.Duration = 0, time.Second
	}
	rep, err := client.Run(ctx, run)
	if n, why := r.relayFailures(v); n > 0 && (err != nil || slices.ContainsFunc(rep.Ops, clientstack.Op.Failed)) {
		// The stack saw a reset; the relay, why.
		return c, r.explain(&driver.OpError{Phase: netx.PhaseTCP, Err: why}, v)
	}
	if err != nil {
		return c, err
	}
	if len(rep.Ops) == 0 && rep.Totals == nil {
		return c, fmt.Errorf("client %s ran no connection within %v", v.Client, run.Duration)
	}
	for _, o := range rep.Ops {
		if o.Failed() {
			return c, fmt.Errorf("client %s: %s: %s: %s", v.Client, o.Phase, o.Kind, ErrorSample(errors.New(o.Message)))
		}
	}
	n := stackNegotiated(rep.TLS)
	c.Client = n
	if err := verifyStack(v, n); err != nil {
		return c, err
	}
	// What the server says of the stack's connections (stackserver.go).
	c.Server, c.ServerUnknown, err = r.stackServer(ctx, v, client)
	return c, err
}

// saysTLS reports whether a stack's client prints what it negotiated:
// the programs of clients/ do, the C tools (Lang native) do not.
func saysTLS(stack string) bool {
	for _, s := range plan.AllClientStacks() {
		if s.Name == stack {
			return s.Lang != "native"
		}
	}
	return true
}

// verifyStack checks what a stack said it negotiated against its
// variant: a plain variant that is encrypted, or a TLS one that is not or
// is another version or group, is an error, not a figure.
func verifyStack(v plan.Variant, n *result.Negotiated) error {
	switch {
	case v.Plain() && n != nil && n.Version != "":
		return fmt.Errorf("the plain variant negotiated %s (client %s)", n.Version, v.Client)
	case v.Plain():
		return nil
	case n == nil && saysTLS(v.Client):
		return fmt.Errorf("a TLS variant connected without TLS: client %s said nothing of TLS", v.Client)
	case n == nil:
		// A C tool prints nothing of what it negotiated; it is given
		// settings that cannot fall back to plaintext (sslmode=require
		// and up, --tls, s_time), pinned as TestNativeTLSPins checks.
		return nil
	}
	if want := v.TLS; (want == "1.2" || want == "1.3") && n.Version != "" && versionNumber(n.Version) != want {
		return fmt.Errorf("asked for TLS %s, client %s negotiated %s", want, v.Client, n.Version)
	}
	if got, _ := plan.GroupName(n.Group); v.Group != "" && n.Group != "" && got != v.Group {
		return fmt.Errorf("asked for the %s key-exchange group, client %s negotiated %s", v.Group, v.Client, n.Group)
	}
	return nil
}
