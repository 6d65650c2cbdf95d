package cli

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/pflag"
)

// registerProfile adds the hidden --cpuprofile flag: a CPU profile of the
// whole command (go tool pprof FILE), for finding where tlsbench's own
// time goes on a hot path.
func registerProfile(fs *pflag.FlagSet, file *string) {
	fs.StringVar(file, "cpuprofile", "", "write a CPU profile of tlsbench itself to FILE (go tool pprof)")
	_ = fs.MarkHidden("cpuprofile")
}

// startProfile starts the CPU profile if file is set; stop ends it.
func startProfile(file string) (stop func(), err error) {
	if file == "" {
		return func() {}, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
