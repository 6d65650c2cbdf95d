package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/tlsbench/tlsbench/internal/export"
	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
)

// exportConfig is where --otlp and --prometheus-push send the run's
// series; the run fills in what identifies it (startExport).
func (f *runFlags) exportConfig() export.Config {
	return export.Config{OTLP: f.otlp, PushURL: f.promPush}
}

// otlpMisread catches --otlp given bare before its endpoint: pflag reads
// "--otlp URL" as --otlp alone and a URL TARGET.
func (f *runFlags) otlpMisread(args []string) error {
	if f.otlp != export.FromEnv {
		return nil
	}
	for _, a := range args {
		u, err := url.Parse(a)
		if err == nil && (u.Scheme == "http" || u.Scheme == "https") && (f.lab != "" || len(args) > 1 || f.cmd == onRoot) {
			return usageError{fmt.Errorf("--otlp takes its endpoint after '=': --otlp=%s (%s was read as a TARGET)", a, a)}
		}
	}
	return nil
}

// startExport starts the export of res's run to cfg's destinations, nil
// for none; a bad endpoint is a usage error, before anything runs.
func startExport(ctx context.Context, cfg export.Config, res *result.Result) (*export.Feed, error) {
	spec := res.Spec
	cfg.Run = export.Run{ID: "tlsbench-" + res.Started.UTC().Format("20060102-150405"), Version: res.Tool.Version,
		TLSLibrary: res.Tool.TLSLibrary, Engine: spec.ParsedTarget().Engine(), Started: res.Started}
	if sh := spec.Shard; sh != nil {
		// Every shard has the same --start-at, and so the same run id.
		cfg.Run.ID = "tlsbench-" + sh.StartAt.UTC().Format("20060102-150405")
		cfg.Run.Shard = fmt.Sprintf("%d/%d", sh.Index, sh.Count)
	}
	feed, err := export.Start(ctx, cfg)
	if err != nil {
		return nil, usageError{err}
	}
	return feed, nil
}

// endExport sends the run's last series, the overhead against the
// baseline from the report model among them, and says once per
// destination whether exports failed. An interrupted run (ctx done)
// sends none: its trials went out as they finished.
func endExport(ctx context.Context, feed *export.Feed, res *result.Result, stderr io.Writer) {
	if feed == nil {
		return
	}
	var m *report.Model
	if len(res.Trials) > 0 {
		m = report.Build(res)
	}
	verdicts := make([]export.Verdict, len(res.Gates))
	for i, g := range res.Gates {
		verdicts[i] = export.Verdict{Gate: g.Name, Pass: g.Pass}
	}
	for _, line := range feed.End(ctx, m, verdicts) {
		fmt.Fprintln(stderr, "warning: "+strings.TrimSpace(line))
	}
}
