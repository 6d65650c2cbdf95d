package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

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
