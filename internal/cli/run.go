package cli

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/tlsbench/tlsbench/internal/bench"
	_ "github.com/tlsbench/tlsbench/internal/driver/httpdrv" // registers http, https, builtin
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// loopbackSources is how many source addresses connect loops spread over.
const loopbackSources = 64

// run measures raw against its target, saves the result (also the part that
// finished when interrupted or failed) and prints the tables.
func run(ctx context.Context, raw plan.Spec, output string, argv []string, stdout, stderr io.Writer) error {
	spec, err := plan.New(raw)
	if err != nil {
		return err
	}
	if output == "" {
		output = time.Now().Format("tlsbench-20060102-150405.json")
	}
	res := result.New()
	res.Tool = result.Tool{Name: "tlsbench", Version: Version, Go: runtime.Version(), TLSLibrary: "Go crypto/tls " + runtime.Version()}
	res.Env = bench.Environment()
	res.Command = append([]string{"tlsbench"}, redactArgs(argv)...)
	res.Started = time.Now().UTC()
	res.Spec = spec
	res.Variants = spec.Variants()

	target, _ := plan.ParseTarget(raw.Target)
	dialer := &netx.Dialer{Sources: netx.LoopbackSources(loopbackSources)}
	runner := &bench.Runner{Spec: spec, Variants: res.Variants}
	var roots *x509.CertPool
	var endpoint bench.Locate
	if target.Builtin {
		srv, err := lab.StartBuiltin(ctx, lab.BuiltinOptions{Keys: spec.Keys, ResponseSize: spec.ResponseSize})
		if err != nil {
			if ctx.Err() != nil {
				return errInterrupted
			}
			return fmt.Errorf("starting the built-in server: %w", err)
		}
		defer srv.Stop()
		info := srv.Info()
		res.Target = result.Target{URL: plan.Builtin, Kind: "builtin", Server: &info}
		runner.Scheme, runner.ServerCPU = "builtin", srv.CPU
		roots = srv.RootCAs()
		endpoint = func(v plan.Variant) (bench.Endpoint, error) {
			if v.Plain() {
				return bench.Endpoint{Addr: srv.Endpoint(""), Host: "127.0.0.1"}, nil
			}
			return bench.Endpoint{Addr: srv.Endpoint(v.Key), Host: "127.0.0.1"}, nil
		}
	} else {
		res.Target = result.Target{URL: spec.Target, Kind: target.Scheme}
		runner.Scheme = target.Scheme
		if spec.CAFile != "" {
			if roots, err = tlsx.LoadCAFile(spec.CAFile); err != nil {
				return usageError{fmt.Errorf("--ca: %w", err)}
			}
		}
		host, _, _ := net.SplitHostPort(target.Host)
		endpoint = func(plan.Variant) (bench.Endpoint, error) { return bench.Endpoint{Addr: target.Host, Host: host}, nil }
	}
	runner.Configs, err = bench.Configs(spec, res.Variants, endpoint, tlsx.ClientOptions{RootCAs: roots, Insecure: spec.Insecure, ALPN: []string{"http/1.1"}}, dialer)
	if err != nil {
		return err
	}
	res.Notes = append(res.Notes, dialer.PortNote())
	if slices.Contains(spec.Experiments, plan.Connect) {
		res.Notes = append(res.Notes, "connect: each request says Connection: close and the client reads until the server closes, so TIME_WAIT stays with the server")
	}

	if err := runner.Check(ctx); err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		return err
	}

	bar := newProgress(stderr, runner.Total())
	runner.Done = func(t result.Trial, done, total int) {
		res.Trials = append(res.Trials, t)
		bar.step(t, done)
	}
	runErr := runner.Run(ctx)
	bar.finish()
	res.Ended = time.Now().UTC()
	switch {
	case ctx.Err() != nil:
		res.Interrupted = true
	case runErr != nil:
		res.Error = runErr.Error()
	}
	if len(res.Trials) > 0 {
		if err := result.Write(output, res); err != nil {
			return err
		}
		if err := report.Text(stdout, res); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "result: %s\n", output)
	}
	switch {
	case res.Interrupted:
		return errInterrupted
	case runErr != nil:
		if len(res.Trials) > 0 {
			return fmt.Errorf("%w (the %d finished trials are in %s)", runErr, len(res.Trials), output)
		}
		return runErr
	}
	return nil
}

// redactArgs removes secrets from a command line: URL passwords and
// credential parameters, also in --flag=URL form.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		prefix, val := "", a
		if k := strings.Index(a, "="); strings.HasPrefix(a, "-") && k > 0 {
			prefix, val = a[:k+1], a[k+1:]
		}
		out[i] = prefix + val
		if strings.Contains(val, "://") {
			out[i] = prefix + plan.Redact(val)
		}
	}
	return out
}

// progress shows a bar on a terminal and nothing otherwise.
type progress struct{ bar *progressbar.ProgressBar }

func newProgress(w io.Writer, total int) *progress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &progress{}
	}
	return &progress{bar: progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("trials"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish(),
	)}
}

func (p *progress) step(t result.Trial, done int) {
	if p.bar == nil {
		return
	}
	p.bar.Describe(fmt.Sprintf("%-7s %-22s c=%-3d %8.1f/s", t.Experiment, t.Variant, t.Concurrency, t.Throughput()))
	p.bar.Set(done)
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
