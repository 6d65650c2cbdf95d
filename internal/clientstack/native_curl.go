package clientstack

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// curl runs libcurl's stack: one curl process a run, its transfers of one
// URL (a glob in the fragment, which curl does not send, makes a bounded
// count of the same request) run --parallel on its one event loop, at
// most the concurrency at once, as curl users run N concurrent
// transfers. Pool reuses a connection per transfer slot (HTTP/1.1, no
// multiplexing); connect closes each (Connection: close) and keeps no TLS
// session unless resuming. Each transfer's -w line comes on its stderr,
// which C leaves unbuffered: the line's arrival is the operation's end,
// on tlsbench's clock, and its start is that end less curl's time_total.
type curl struct {
	*nativeClient
	exe string
}

func startCurl(ctx context.Context, cfg Config) (Client, error) {
	if err := refuseCurl(cfg); err != nil {
		return nil, err
	}
	exe, err := lookTool(cfg.Stack.Name, "curl")
	if err != nil {
		return nil, err
	}
	v := field(toolVersion(ctx, exe, "--version"), "libcurl/")
	n, err := newNative(cfg, Hello{Driver: "libcurl/" + v, TLS: opensslVersion(ctx), Model: "event-loop"})
	if err != nil {
		return nil, err
	}
	return &curl{nativeClient: n, exe: exe}, nil
}

func refuseCurl(cfg Config) error {
	switch {
	case cfg.Workload != "request":
		return refuse(cfg, "workload %s: curl makes HTTP requests (request)", cfg.Workload)
	case strings.ContainsAny(cfg.Path, " \r\n\"\\#"):
		return refuse(cfg, "path %q: curl's URL here takes no space, quote, backslash or #", cfg.Path)
	case cfg.TLS == "off":
		return nil
	case cfg.Verify == "ca":
		return refuse(cfg, "verify ca: curl checks the name whenever it checks the chain (its -k turns off both): it runs with both checked, or neither (--insecure)")
	case cfg.Cert != "" && cfg.Key == "":
		return refuse(cfg, "a client certificate without its key")
	}
	return refuseCommon(cfg)
}

// curlLine is the -w line of one transfer: a word no other line of curl's
// starts with, then time_connect, time_appconnect and time_total in
// seconds, curl's exit code, the HTTP status and the error message.
const (
	curlMark  = "tlsbench-op"
	curlWrite = "%{stderr}" + curlMark + " %{time_connect} %{time_appconnect} %{time_total} %{exitcode} %{http_code} %{errormsg}\\n"
)

// config is curl's -K file for n transfers: every option, so that curl's
// command line holds none (curl -q -K file), 0600 as a header or a user
// would need.
func (c *curl) config(r Run, n int64) string {
	cfg := c.cfg
	scheme, host := "http", cfg.Host
	if cfg.TLS != "off" {
		scheme = "https"
		if cfg.ServerName != "" {
			host = cfg.ServerName
		}
	}
	port := strconv.Itoa(cfg.Port)
	path := cfg.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	url := scheme + "://" + net.JoinHostPort(host, port) + path + "#[1-" + strconv.FormatInt(n, 10) + "]"
	timeout := strconv.FormatFloat(max(cfg.Timeout, time.Millisecond).Seconds(), 'f', 3, 64)
	opts := [][2]string{{"no-progress-meter", ""}, {"http1.1", ""}, {"parallel", ""},
		{"parallel-max", strconv.Itoa(max(r.Concurrency, 1))},
		{"connect-timeout", timeout}, {"max-time", timeout},
		{"write-out", curlWrite}, {"url", url}, {"output", os.DevNull}}
	if r.Experiment == "connect" {
		opts = append(opts, [2]string{"header", "Connection: close"})
	}
	if cfg.TLS != "off" {
		if host != cfg.Host && net.ParseIP(host) == nil {
			opts = append(opts, [2]string{"resolve", host + ":" + port + ":" + cfg.Host})
		}
		if cfg.TLS == "1.2" || cfg.TLS == "1.3" {
			opts = append(opts, [2]string{"tlsv" + cfg.TLS, ""}, [2]string{"tls-max", cfg.TLS})
		}
		switch {
		case cfg.Verify == "none":
			opts = append(opts, [2]string{"insecure", ""})
		case cfg.CA != "":
			opts = append(opts, [2]string{"cacert", cfg.CA})
		}
		if cfg.Cert != "" {
			opts = append(opts, [2]string{"cert", cfg.Cert}, [2]string{"key", cfg.Key})
		}
		if cfg.Group != "" {
			opts = append(opts, [2]string{"curves", cfg.Group})
		}
		if !cfg.Resume {
			opts = append(opts, [2]string{"no-sessionid", ""})
		}
	}
	q := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	var s strings.Builder
	for _, o := range opts {
		s.WriteString("--" + o[0])
		if o[1] != "" {
			v := q.Replace(o[1])
			if o[0] == "write-out" { // its \n is curl's escape
				v = o[1]
			}
			s.WriteString(` "` + v + `"`)
		}
		s.WriteString("\n")
	}
	return s.String()
}

func (c *curl) Run(ctx context.Context, r Run) (rep Report, err error) {
	switch {
	case r.Duration <= 0:
		return rep, fmt.Errorf("client %s: a run needs a duration", c.cfg.Stack.Name)
	case r.Experiment != "connect" && r.Experiment != "pool":
		return rep, refuse(c.cfg, "experiment %s: curl runs connect (Connection: close) and pool", r.Experiment)
	case r.Experiment == "connect" && r.PerConn > 1:
		return rep, refuse(c.cfg, "%d requests a connection: curl's transfers are independent, one a connection under Connection: close", r.PerConn)
	}
	warmup := r.Warmup
	if r.Experiment == "connect" {
		warmup = 0
	}
	dir, err := c.runDir()
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	// The count bounds the run as the time does: MaxOps, or as many as a
	// million a second could make (curl has no bound of time itself).
	n := int64((warmup+r.Duration).Seconds()*1e6) + 1
	if r.MaxOps > 0 {
		n = r.MaxOps
		if warmup > 0 {
			n += int64(warmup.Seconds()*1e6) + 1
		}
	}
	conf := filepath.Join(dir, "curl.conf")
	if err := os.WriteFile(conf, []byte(c.config(r, n)), 0o600); err != nil {
		return rep, err
	}
	env, err := opensslConf(dir, c.cfg, false)
	if err != nil {
		return rep, err
	}
	cmd := exec.Command(c.exe, "-q", "-K", conf)
	cmd.Env = toolEnv(env...)
	cmd.Dir = dir

	var (
		mu       sync.Mutex
		ops      []Op
		bad      string
		kept     int64
		from     time.Time
		stop     = make(chan struct{})
		stopOnce sync.Once
	)
	stopRun := func() { stopOnce.Do(func() { close(stop) }) }
	t := tool{stack: c.cfg.Stack.Name, cmd: cmd, netns: c.cfg.Netns, limit: limitOf(c.cfg, r), stop: stop,
		onStderr: func(line string, at time.Time) bool {
			rest, ok := strings.CutPrefix(line, curlMark+" ")
			if !ok {
				return false
			}
			o, err := parseCurlLine(rest, at, c.cfg.TLS != "off")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				bad = err.Error()
				return true
			}
			ops = append(ops, o)
			if o.Start >= from.UnixNano() {
				if kept++; r.MaxOps > 0 && kept >= r.MaxOps {
					stopRun()
				}
			}
			return true
		}}
	mu.Lock()
	from = time.Now().Add(warmup)
	mu.Unlock()
	timer := time.AfterFunc(time.Until(from.Add(r.Duration)), stopRun)
	defer timer.Stop()
	warm := time.AfterFunc(warmup, r.warmed)
	defer warm.Stop()
	res, err := t.run(ctx)
	rep.Elapsed, rep.CPU = res.ended.Sub(res.began), res.cpu
	mu.Lock()
	defer mu.Unlock()
	// curl exits with the code of its last failed transfer: those are
	// operations that failed, not a failed run.
	if err != nil && !(res.exit && len(ops) > 0) {
		return rep, err
	}
	if bad != "" {
		return rep, fmt.Errorf("client %s: curl's -w line: %s", c.cfg.Stack.Name, bad)
	}
	all := len(ops)
	curlWorkers(ops, max(r.Concurrency, 1))
	rep.Ops = window(ops, from.Add(-warmup).UnixNano(), warmup, r)
	if warm := all - len(rep.Ops); warm > 0 {
		cpu := rep.CPU
		rep.CPU = time.Duration(float64(cpu) * float64(len(rep.Ops)) / float64(all))
		rep.WarmupCPU = cpu - rep.CPU
	}
	return rep, nil
}

// parseCurlLine reads the rest of a -w line that arrived at at.
func parseCurlLine(s string, at time.Time, secure bool) (Op, error) {
	f := strings.SplitN(s, " ", 6)
	if len(f) < 5 {
		return Op{}, fmt.Errorf("%q has %d fields, not 6", clip(s), len(f))
	}
	var secs [3]float64
	for i := range secs {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return Op{}, fmt.Errorf("%q: %w", clip(s), err)
		}
		secs[i] = v
	}
	code, err := strconv.Atoi(f[3])
	if err != nil {
		return Op{}, fmt.Errorf("%q: the exit code: %w", clip(s), err)
	}
	status, _ := strconv.Atoi(f[4])
	msg := ""
	if len(f) == 6 {
		msg = strings.TrimSpace(f[5])
	}
	end := at.UnixNano()
	o := Op{Start: end - int64(secs[2]*1e9), End: end}
	switch {
	case code != 0:
		o.Phase, o.Kind = curlErrorKind(code, msg, secs[0] > 0, secs[1] > 0, secure)
		o.Message = clip(fmt.Sprintf("curl: (%d) %s", code, msg))
	case status >= 400 || status == 0:
		o.Phase, o.Kind, o.Message = "query", "server", "HTTP status "+f[4]
	}
	return o, nil
}

// curlErrorKind sorts curl's exit codes (libcurl's CURLcode) into
// PROTOCOL.md's phase and kind; a timeout is in the phase it had not
// finished.
func curlErrorKind(code int, msg string, connected, secured, secure bool) (phase, kind string) {
	switch code {
	case 7:
		return "tcp", "refused"
	case 28:
		switch {
		case !connected:
			return "tcp", "timeout"
		case secure && !secured:
			return "tls-handshake", "timeout"
		}
		return "query", "timeout"
	case 35, 51, 53, 54, 58, 59, 60, 66, 77, 80, 82, 83, 90, 91, 98:
		return "tls-handshake", "tls"
	case 52, 55, 56:
		if secure && !secured {
			return "tls-handshake", "reset"
		}
		return "query", "reset"
	}
	return errorKind(msg)
}

// curlWorkers numbers the operations' workers: curl does not say which
// of its transfer slots ran one, so each goes, in the order they started,
// to the slot that ended first (free, when the clock is right: there are
// never more than n at once).
func curlWorkers(ops []Op, n int) {
	order := make([]int, len(ops))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(ops[a].Start - ops[b].Start) })
	ends := make([]int64, n)
	for _, i := range order {
		w := 0
		for k := range ends {
			if ends[k] < ends[w] {
				w = k
			}
		}
		ops[i].Worker, ends[w] = w, ops[i].End
	}
}
