// Package export sends a run's series live, per trial and at its end, to
// an OpenTelemetry receiver (OTLP over HTTP or gRPC) and a Prometheus
// Pushgateway, off the measuring path: an endpoint that is down or slow
// costs exports, never a trial's timing or the run.
package export

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
)

// Config says where a run's series go.
type Config struct {
	// OTLP is the OTLP endpoint (a URL), FromEnv for the standard
	// OTEL_EXPORTER_OTLP_* variables' or "" for none.
	OTLP string
	// PushURL is a Pushgateway's URL, "" for none.
	PushURL string
	Run     Run
	// Timeout bounds each export; 0 is DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout bounds an export: a slow endpoint holds the exporting
// goroutine no longer, and the end of a run at most twice as long.
const DefaultTimeout = 5 * time.Second

// Run is what identifies a run's series: resource attributes in OTLP,
// grouping labels (run_id, shard) and tlsbench_info in Prometheus.
type Run struct {
	ID         string // the same on every shard of a sharded run
	Shard      string // "INDEX/COUNT", "" unsharded
	Version    string
	TLSLibrary string
	Engine     string // the engine label of every series
	Started    time.Time
}

// sink is one destination.
type sink interface {
	name() string
	export(ctx context.Context, snap snapshot) error
	shutdown(ctx context.Context) error
}

// Feed takes a run's finished trials and exports them from its own
// goroutine: Trial never waits for an export. Trials that arrive while an
// export is under way go out together in the next one. A nil Feed takes
// everything and does nothing.
type Feed struct {
	sinks   []sink
	timeout time.Duration
	st      *state

	mu      sync.Mutex
	pending []result.Trial
	wake    chan struct{}
	stopped chan struct{}
	// ctx is the exporting goroutine's: End cancels it, and with it an
	// export under way, which the last export carries anyway.
	ctx    context.Context
	cancel context.CancelFunc

	// ended is set by End or Close, the first of them that runs.
	ended sync.Once

	// Written by the exporting goroutine, read after it stopped.
	tries, fails []int
	last         []error
	bad          error // a trial whose histograms did not decode
}

// Start makes the feed of cfg, nil when cfg exports nothing. A bad
// endpoint or protocol is its error, before the run begins.
func Start(ctx context.Context, cfg Config) (*Feed, error) {
	if cfg.OTLP == "" && cfg.PushURL == "" {
		return nil, nil
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	f := &Feed{timeout: cfg.Timeout, st: newState(cfg.Run.Engine), wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	var push sink
	if cfg.PushURL != "" { // checked first: it makes no connection
		p, err := newProm(cfg.PushURL, cfg.Run, cfg.Timeout)
		if err != nil {
			return nil, err
		}
		push = p
	}
	if cfg.OTLP != "" {
		o, err := newOTLP(ctx, cfg.OTLP, cfg.Run, cfg.Timeout)
		if err != nil {
			return nil, err
		}
		f.sinks = append(f.sinks, o)
	}
	if push != nil {
		f.sinks = append(f.sinks, push)
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.tries, f.fails, f.last = make([]int, len(f.sinks)), make([]int, len(f.sinks)), make([]error, len(f.sinks))
	go f.loop()
	return f, nil
}

// Trial hands a finished trial to the exporting goroutine.
func (f *Feed) Trial(t result.Trial) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.pending = append(f.pending, t)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default: // an export is due already
	}
}

func (f *Feed) loop() {
	defer close(f.stopped)
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-f.wake:
			if f.take() {
				f.exportAll(f.ctx)
			}
		}
	}
}

// take adds the pending trials to the series, true if there were any.
func (f *Feed) take() bool {
	f.mu.Lock()
	ts := f.pending
	f.pending = nil
	f.mu.Unlock()
	for _, t := range ts {
		if err := f.st.trial(t); err != nil && f.bad == nil {
			f.bad = fmt.Errorf("trial %d of %s: %w", t.Round+1, t.Variant, err)
		}
	}
	return len(ts) > 0
}

// exportAll sends the series so far to every destination at once, each
// within the timeout. An export that parent cancelled (End's) is not
// counted.
func (f *Feed) exportAll(parent context.Context) {
	snap := f.st.snapshot()
	var wg sync.WaitGroup
	for i, s := range f.sinks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(parent, f.timeout)
			defer cancel()
			err := s.export(ctx, snap)
			if parent.Err() != nil {
				return
			}
			f.tries[i]++
			if err != nil {
				f.fails[i]++
				f.last[i] = err
			}
		})
	}
	wg.Wait()
}

// End exports the run's last trials and what only the end has (the
// overhead against the baseline from the report model m, the gates'
// verdicts), closes the exporters, and says in one line per destination
// how many exports failed, none if all went out. An export under way is
// cancelled (the last carries what it would have); the last takes at most
// the timeout, and none once ctx is done (an interrupted run).
func (f *Feed) End(ctx context.Context, m *report.Model, gates []Verdict) (lines []string) {
	if f == nil {
		return nil
	}
	f.ended.Do(func() { lines = f.end(ctx, m, gates) })
	return lines
}

// Close stops the feed without a last export (a run that failed before
// its trials): a no-op after End.
func (f *Feed) Close() {
	if f == nil {
		return
	}
	f.ended.Do(func() {
		f.cancel()
		<-f.stopped
		for _, s := range f.sinks {
			ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
			s.shutdown(ctx)
			cancel()
		}
	})
}

func (f *Feed) end(ctx context.Context, m *report.Model, gates []Verdict) []string {
	f.cancel()
	<-f.stopped
	f.take()
	f.st.end(m, gates)
	f.exportAll(ctx)
	var lines []string
	for i, s := range f.sinks {
		ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
		if err := s.shutdown(ctx); err != nil && f.fails[i] == 0 {
			f.fails[i], f.last[i] = 1, err
		}
		cancel()
		if f.fails[i] > 0 {
			lines = append(lines, fmt.Sprintf("%s: %d of %d exports failed (last: %s); the figures are all in the result file",
				s.name(), f.fails[i], f.tries[i], oneLine(f.last[i])))
		}
	}
	if f.bad != nil {
		lines = append(lines, "metrics export: histograms left out: "+f.bad.Error())
	}
	return lines
}

func oneLine(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within the timeout"
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

func known(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
