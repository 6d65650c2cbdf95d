package clientstack

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// sTime runs OpenSSL's own loop: `openssl s_time`, connect only (-new, or
// -reuse to resume the session), one connection at a time per process:
// concurrency is that many processes. It prints a count only: Totals with
// no latency. With a path it GETs it on each connection (-www); without,
// it only handshakes, so it serves any port that speaks TLS first.
type sTime struct {
	*nativeClient
	exe string
}

func startSTime(ctx context.Context, cfg Config) (Client, error) {
	if err := refuseSTime(cfg); err != nil {
		return nil, err
	}
	exe, err := lookTool(cfg.Stack.Name, "openssl")
	if err != nil {
		return nil, err
	}
	v := opensslVersion(ctx)
	n, err := newNative(cfg, Hello{Driver: "s_time/" + v[len("OpenSSL/"):], TLS: v, Model: "processes"})
	if err != nil {
		return nil, err
	}
	return &sTime{nativeClient: n, exe: exe}, nil
}

func refuseSTime(cfg Config) error {
	switch {
	case cfg.TLS == "off":
		return refuse(cfg, "plaintext: openssl s_time times TLS connections only")
	case cfg.Verify == "full":
		return refuse(cfg, "verify full: s_time sends no server name and checks none: against a server tlsbench did not start run it with --insecure (no check at all), or use --client curl (OpenSSL 3 too, the name checked)")
	case cfg.Resume && cfg.TLS != "1.2" && cfg.Path == "":
		return refuse(cfg, "resumption over TLS 1.3 without a path: s_time -reuse reads nothing after the handshake, so it never gets TLS 1.3's session ticket (pin TLS 1.2, or give a path to GET)")
	case cfg.Cert != "" && cfg.Key == "":
		return refuse(cfg, "a client certificate without its key")
	}
	return refuseCommon(cfg)
}

var sTimeCount = regexp.MustCompile(`(?m)^(\d+) connections in \d+ real seconds`)

func (s *sTime) Run(ctx context.Context, r Run) (rep Report, err error) {
	switch {
	case r.Duration <= 0:
		return rep, fmt.Errorf("client %s: a run needs a duration", s.cfg.Stack.Name)
	case r.Experiment != "connect":
		return rep, refuse(s.cfg, "experiment %s: s_time opens a connection a time (connect) and keeps none", r.Experiment)
	case r.PerConn > 1:
		return rep, refuse(s.cfg, "%d operations a connection: s_time makes one request a connection", r.PerConn)
	case r.MaxOps > 0:
		return rep, refuse(s.cfg, "a count of operations: s_time runs for whole seconds (-time), not a count")
	}
	dir, err := s.runDir()
	if err != nil {
		return rep, err
	}
	conf, err := opensslConf(dir, s.cfg, false)
	if err != nil {
		return rep, err
	}
	c := s.cfg
	args := []string{"s_time", "-connect", net.JoinHostPort(c.Host, strconv.Itoa(c.Port)), "-time", strconv.Itoa(wholeSeconds(r.Duration))}
	if c.Resume {
		args = append(args, "-reuse")
	} else {
		args = append(args, "-new")
	}
	if c.Path != "" {
		args = append(args, "-www", c.Path)
	}
	switch c.TLS {
	case "1.2":
		args = append(args, "-tls1_2")
	case "1.3":
		args = append(args, "-tls1_3")
	}
	if c.Verify == "ca" {
		args = append(args, "-verify", "9")
		if c.CA != "" {
			args = append(args, "-CAfile", c.CA)
		}
	}
	if c.Cert != "" {
		args = append(args, "-cert", c.Cert, "-key", c.Key)
	}
	n := max(r.Concurrency, 1)
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		tot  Totals
		errs []error
	)
	began := time.Now()
	r.warmed() // C: nothing to warm up
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(s.exe, args...)
			cmd.Env = toolEnv(conf...)
			cmd.Dir = dir
			res, err := tool{stack: c.Stack.Name, cmd: cmd, netns: c.Netns, limit: limitOf(c, r)}.run(ctx)
			mu.Lock()
			defer mu.Unlock()
			rep.CPU += res.cpu
			if err == nil {
				m := sTimeCount.FindSubmatch(res.stdout)
				if m == nil {
					err = fmt.Errorf("client %s: s_time printed no count: %s", c.Stack.Name, clip(firstLine(string(res.stdout))))
				} else {
					k, _ := strconv.ParseInt(string(m[1]), 10, 64)
					tot.Ops += k
				}
			}
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	rep.Elapsed = time.Since(began)
	if len(errs) > 0 {
		return rep, errs[0]
	}
	rep.Totals = &tot
	return rep, nil
}
