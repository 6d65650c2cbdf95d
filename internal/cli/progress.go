package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/result"
)

// progress shows a bar on a terminal and nothing otherwise.
type progress struct{ bar *progressbar.ProgressBar }

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func newBar(w io.Writer, total int64, desc string) *progress {
	if !isTerminal(w) {
		return &progress{}
	}
	return &progress{bar: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish(),
	)}
}

// newProgress is the bar of a run's trials.
func newProgress(w io.Writer, total int) *progress { return newBar(w, int64(total), "trials") }

// newCountBar is a bar whose total is learned as it goes (rows prepared).
func newCountBar(w io.Writer, desc string) *progress { return newBar(w, -1, desc) }

// runProgress draws a run's bars from the pipeline's progress: the rows a
// lab server is filled with, then the trials.
type runProgress struct {
	w               io.Writer
	prepare, trials *progress
}

func (p *runProgress) update(ev bench.Progress) {
	if ev.Stage != bench.StagePrepare && p.prepare != nil {
		p.prepare.finish()
		p.prepare = nil
	}
	switch ev.Stage {
	case bench.StagePrepare:
		if p.prepare == nil {
			p.prepare = newCountBar(p.w, "preparing data")
		}
		p.prepare.set(ev.Done, ev.Total)
	case bench.StageTrials:
		if p.trials == nil {
			p.trials = newProgress(p.w, int(ev.Total))
		}
		if ev.Trial != nil {
			p.trials.step(*ev.Trial, int(ev.Done))
		}
	}
}

func (p *runProgress) finish() {
	for _, b := range []*progress{p.prepare, p.trials} {
		if b != nil {
			b.finish()
		}
	}
}

func (p *progress) step(t result.Trial, done int) {
	if p.bar == nil {
		return
	}
	p.bar.Describe(fmt.Sprintf("%-7s %-22s c=%-3d %8.1f/s", t.Experiment, t.Variant, t.Concurrency, t.Throughput()))
	p.bar.Set(done)
}

func (p *progress) set(done, total int64) {
	if p.bar == nil {
		return
	}
	if p.bar.GetMax64() != total {
		p.bar.ChangeMax64(total)
	}
	p.bar.Set64(done)
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
