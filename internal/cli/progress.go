package cli

import (
	"fmt"
	"io"
	"os"
	"time"

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

// runProgress shows a run's progress from the pipeline's (the rows a lab
// server is filled with, the check, the trials): bars on a terminal; off
// one (a CI log, a file), a line per phase (progressLines); nothing with
// --quiet.
type runProgress struct {
	w               io.Writer
	prepare, trials *progress
	lines           *progressLines // off a terminal; nil on one or when quiet
	quiet           bool
}

// newRunProgress shows progress on w; unit names what a fill counts
// (rows, keys, documents).
func newRunProgress(w io.Writer, quiet bool, unit string) *runProgress {
	p := &runProgress{w: w, quiet: quiet}
	if !quiet && !isTerminal(w) {
		p.lines = newProgressLines(w, unit)
	}
	return p
}

func (p *runProgress) update(ev bench.Progress) {
	if p.lines != nil {
		p.lines.update(ev)
		return
	}
	if p.quiet {
		return
	}
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
	if p.lines != nil {
		p.lines.endFill()
	}
	for _, b := range []*progress{p.prepare, p.trials} {
		if b != nil {
			b.finish()
		}
	}
}

// printf writes a progress line off a terminal (see progressLines.printf);
// on a terminal, whose bars say enough, and with --quiet, nothing.
func (p *runProgress) printf(format string, args ...any) {
	if p.lines != nil {
		p.lines.printf(format, args...)
	}
}

// fillEvery is how often a line tells how a fill goes.
const fillEvery = 10 * time.Second

// progressLines writes progress as plain lines, each led by the seconds
// since the run began ("[  12.3s] "): what a CI log can show of a run
// that takes minutes, where a bar would be a stream of carriage returns.
type progressLines struct {
	w     io.Writer
	unit  string // what a fill counts
	now   func() time.Time
	start time.Time
	// The fill under way: when it began, the last line's time and count.
	filling           bool
	fillAt, lineAt    time.Time
	fillDone, fillTot int64
	next              string // the trial under way
}

func newProgressLines(w io.Writer, unit string) *progressLines {
	return &progressLines{w: w, unit: unit, now: time.Now, start: time.Now()}
}

// progressPrefix leads every progress line; errors and warnings never
// start with it.
const progressPrefix = "["

func (l *progressLines) printf(format string, args ...any) {
	fmt.Fprintf(l.w, progressPrefix+"%6.1fs] %s\n", l.now().Sub(l.start).Seconds(), fmt.Sprintf(format, args...))
}

func (l *progressLines) update(ev bench.Progress) {
	if ev.Stage != bench.StagePrepare {
		l.endFill()
	}
	switch ev.Stage {
	case bench.StagePrepare:
		l.fill(ev.Done, ev.Total)
	case bench.StageCheck:
		held := ""
		if ev.Stacks > 0 {
			held = fmt.Sprintf("; then each client stack (%d) holds a pool of one open for %v while the server is asked what it saw, where it can say", ev.Stacks, bench.StackHold)
		}
		l.printf("checking the variants (%d): one connection each%s", ev.Total, held)
	case bench.StageCeilings:
		l.printf("signing ceilings of the server keys, where they apply (connect on servers tlsbench starts)")
	case bench.StageTrials:
		switch {
		case ev.Next != "":
			l.next = ev.Next
			l.printf("trial %d/%d begins: %s", ev.Done+1, ev.Total, ev.Next)
		case ev.Trial != nil:
			t := ev.Trial
			errs := ""
			var failed int64
			for _, n := range t.Errors {
				failed += n
			}
			if failed > 0 {
				errs = fmt.Sprintf(", %d failed", failed)
			}
			l.printf("trial %d/%d ended: %s: %d ops in %.2f s, %s/s%s", ev.Done, ev.Total, l.next, t.Ops, t.Elapsed.Seconds(), rate(t.Throughput()), errs)
		default:
			l.printf("trials: %d planned, the variants interleaved", ev.Total)
		}
	}
}

// fill tells how a fill goes: as it begins, every fillEvery, and as it
// ends (endFill).
func (l *progressLines) fill(done, total int64) {
	now := l.now()
	if !l.filling {
		l.filling, l.fillAt, l.lineAt = true, now, now
		l.printf("filling the server with the workload's data")
	}
	l.fillDone, l.fillTot = done, total
	if now.Sub(l.lineAt) < fillEvery {
		return
	}
	l.lineAt = now
	count := fmt.Sprintf("%d %s", done, l.unit)
	if total > 0 {
		count = fmt.Sprintf("%d of %d %s (%.0f%%)", done, total, l.unit, 100*float64(done)/float64(total))
	}
	l.printf("filling: %s, %s %s/s", count, rate(float64(done)/now.Sub(l.fillAt).Seconds()), l.unit)
}

func (l *progressLines) endFill() {
	if !l.filling {
		return
	}
	l.filling = false
	took := l.now().Sub(l.fillAt)
	per := ""
	if took > 0 {
		per = fmt.Sprintf(", %s %s/s", rate(float64(l.fillDone)/took.Seconds()), l.unit)
	}
	if l.fillTot > 0 && l.fillDone < l.fillTot {
		l.printf("filling stopped: %d of %d %s in %.1f s%s", l.fillDone, l.fillTot, l.unit, took.Seconds(), per)
		return
	}
	l.printf("filled: %d %s in %.1f s%s", l.fillDone, l.unit, took.Seconds(), per)
}

// rate prints a rate as a log reader wants it: whole above 100, three
// significant digits below.
func rate(x float64) string {
	if x >= 100 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.3g", x)
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
