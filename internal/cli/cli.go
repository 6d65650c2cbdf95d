// Package cli is tlsbench's command line: subcommands, flags into a
// plan.Spec, signals, exit codes, the progress display, and saving and
// printing results. It measures nothing itself (see bench and site).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/clientstack"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// Version is the tool's version; release builds set it with -ldflags.
var Version = "0.1.0-dev"

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1   // the run failed: server, network, TLS
	exitUsage       = 2   // bad flags or arguments
	exitGate        = 3   // the run went well, a gate failed (gates.go)
	exitInterrupted = 130 // Ctrl-C: what finished is kept
)

// usageError marks errors in what the user typed.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// errInterrupted ends a run stopped by a signal, after its results are saved.
var errInterrupted = errors.New("interrupted")

// Main runs tlsbench with args (without the program name) and returns the
// exit code. Only Main prints errors.
func Main(args []string, stdout, stderr io.Writer) (code int) {
	// A panic is a bug: one line and exit 1, not a stack trace. run has
	// already saved the finished trials and stopped the servers (its
	// defers ran); this catches what happens outside a run.
	defer func() {
		if p := recover(); p != nil {
			err := &bench.PanicError{Value: p, Stack: debug.Stack()}
			fmt.Fprintln(stderr, "tlsbench: "+oneLine(err.Error()))
			code = exitFailed
		}
	}()
	ctx, stop := notifyContext()
	defer stop()
	root := newRootCmd(args, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errInterrupted):
		fmt.Fprintln(stderr, "tlsbench: interrupted")
		return exitInterrupted
	}
	if errors.As(err, new(gateFailed)) {
		fmt.Fprintln(stderr, "tlsbench: "+oneLine(err.Error()))
		return exitGate
	}
	msg := err.Error()
	var pe *plan.Error
	if errors.As(err, &pe) {
		// plan names fields; the command line spells them as flags.
		msg = strings.Replace(msg, pe.Error(), pe.Spell(flagName), 1)
	}
	fmt.Fprintln(stderr, "tlsbench: "+oneLine(msg))
	var ue usageError
	// A client stack not installed, or one that cannot run a variant
	// (clientstack's errors, before any trial), is the user's to fix.
	var missing *clientstack.NotInstalled
	var refused *clientstack.Refused
	if errors.As(err, &ue) || pe != nil || errors.As(err, &missing) || errors.As(err, &refused) {
		return exitUsage
	}
	return exitFailed
}

// signalWindow is how long after the first SIGINT or SIGTERM more of them
// count as the same request to stop: `timeout -s INT` (and CI runners)
// signal tlsbench and then its process group, so one stop arrives twice.
// Once it has passed, a second Ctrl-C ends tlsbench at once (the servers
// it started die with it; the next run removes their directories).
const signalWindow = 2 * time.Second

// notifyContext is a context cancelled by the first SIGINT or SIGTERM,
// which saves what finished and stops the servers; stop ends the
// catching.
func notifyContext() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		cancel()
		window := time.NewTimer(signalWindow)
		defer window.Stop()
		for {
			select {
			case <-sigs: // the same stop, delivered again
			case <-window.C:
				signal.Stop(sigs) // the next one takes its default action
				return
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// flagName spells a plan.Spec field (as plan.Error names it) as the flag
// that sets it (fieldFlags, from every command's options).
func flagName(field string) string {
	if f, ok := fieldFlags[field]; ok {
		return f
	}
	return "--" + strings.ReplaceAll(field, "_", "-")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func newRootCmd(argv []string, stdout, stderr io.Writer) *cobra.Command {
	var f runFlags
	root := &cobra.Command{
		Use:   "tlsbench",
		Short: "Measure what TLS costs: connections, pools, phases and round trips",
		Long:  rootLong(),
		Args: func(cmd *cobra.Command, args []string) error {
			if err := f.otlpMisread(args); err != nil {
				return err
			}
			if len(args) == 0 {
				return nil
			}
			return usageError{fmt.Errorf("unknown command %q%s (see tlsbench --help)", args[0], didYouMean(cmd.SuggestionsFor(args[0])))}
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			target := plan.Builtin
			if f.lab != "" {
				target = ""
			}
			raw, err := f.spec(cmd, target, nil)
			if err != nil {
				return err
			}
			stop, err := startProfile(f.cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
			return run(cmd.Context(), raw, runOutput{path: f.output, wire: f.wire, quiet: f.quiet, gate: f.gate, export: f.exportConfig()}, argv, stdout, stderr)
		},
	}
	root.SuggestionsMinimumDistance = 2 // SuggestionsFor's own default is 0
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%v%s (see tlsbench %s --help)", err, flagHint(cmd, err), cmd.Name())}
	})
	f.register(root, onRoot, nil)
	root.SetUsageFunc(runUsage)
	root.AddCommand(newExperimentCmd(plan.Connect, argv, stdout, stderr),
		newExperimentCmd(plan.Pool, argv, stdout, stderr),
		newExperimentCmd(plan.Stream, argv, stdout, stderr),
		newExperimentCmd(plan.Storm, argv, stdout, stderr),
		newPrepareCmd(stdout, stderr), newLabCmd(stdout),
		newServeCmd(), newReportCmd(stdout), newCompareCmd(stdout), newVersionCmd(stdout),
		newCryptoCmd(argv, stdout, stderr), newMergeCmd(argv, stdout), newWireCmd(argv, stdout, stderr),
		newAdviseCmd(argv, stdout, stderr), newReplicateCmd(argv, stdout, stderr))
	for _, c := range root.Commands() {
		if c.Name() == "crypto" {
			refuseShard(c, "crypto measures this machine's own primitives, with no server to share: run it on each machine")
		}
	}
	root.AddCommand(newKubeCmd(stdout), newForwardCmd(os.Stdin, stdout))
	return root
}

// rootLong is the root command's help: the default matrix as plan has it.
func rootLong() string {
	m := plan.DefaultMatrix
	exps := make([]string, len(m.Experiments))
	for i, e := range m.Experiments {
		exps[i] = string(e)
	}
	return `tlsbench measures the same workload with and without TLS, side by side, and
reports the difference with its uncertainty, phase by phase.

` + wrap(fmt.Sprintf("With no command it starts its built-in HTTPS/HTTP server and runs the default matrix: the %s experiments over TLS modes %s and server keys %s, with the defaults below.",
		strings.Join(exps, " and "), strings.Join(m.TLS, ", "), strings.Join(m.Keys, ", ")), 79, 0)
}

func newExperimentCmd(e plan.Experiment, argv []string, stdout, stderr io.Writer) *cobra.Command {
	var f runFlags
	short := map[plan.Experiment]string{
		plan.Connect: "Open, use once and close connections as fast as C workers can",
		plan.Pool:    "Run requests or transactions over C persistent connections",
		plan.Stream:  "Read one large result (a whole table) over C connections: MB/s",
		plan.Storm:   stormShort,
	}[e]
	cmd := &cobra.Command{
		Use:   string(e) + " TARGET | --lab ENGINE",
		Short: short,
		Long: short + `.

TARGET is a URL: http:// or https:// of any web server; postgres:// (sslmode as
libpq spells it), mysql:// (MySQL and MariaDB; tls=false|preferred|skip-verify|true),
redis:// or rediss://; mongodb:// (one host, direct; tls=true, tlsCAFile=,
tlsInsecure=, tlsAllowInvalidHostnames=); or "builtin" for the built-in HTTPS
server. With --lab ENGINE, tlsbench starts a throw-away postgres, mariadb,
redis or mongodb (FerretDB) server itself, with a certificate per --key,
fills it with the sbtest data (--tables, --rows; MongoDB: a YCSB usertable of
--rows documents) and stops it at the end. --preset mongodb-seed replays the
MongoDB seed study.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := f.otlpMisread(args); err != nil {
				return err
			}
			if len(args) > 1 || (len(args) == 0 && f.lab == "") {
				return usageError{fmt.Errorf("%s takes one TARGET (a URL or builtin) or --lab ENGINE, got %d arguments", e, len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target := ""
			if len(args) == 1 {
				if target = args[0]; strings.TrimSpace(target) == "" {
					return usageError{fmt.Errorf("%s: the TARGET given is empty (an unset variable?): give a URL, builtin, or --lab ENGINE", e)}
				}
			}
			raw, err := f.spec(cmd, target, []plan.Experiment{e})
			if err != nil {
				return err
			}
			stop, err := startProfile(f.cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
			return run(cmd.Context(), raw, runOutput{path: f.output, wire: f.wire, quiet: f.quiet, gate: f.gate, export: f.exportConfig()}, argv, stdout, stderr)
		},
	}
	f.register(cmd, commandSet(e), []plan.Experiment{e})
	if e == plan.Storm {
		cmd.Long += stormLong
	}
	cmd.SetUsageFunc(runUsage)
	return cmd
}

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			fmt.Fprintln(stdout, "tlsbench", Version)
		},
	}
}

// didYouMean words cobra's suggestions for a mistyped command.
func didYouMean(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return ": did you mean " + strings.Join(names, " or ") + "?"
}

// flagHint suggests, for an unknown flag, the command that has it (pool
// --clients: storm's), or the command's own flag it is a typo of
// (--trails: --trials).
func flagHint(cmd *cobra.Command, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	// Another command's flag, spelled right (stream --wire), before a
	// typo of one of this command's (--size).
	var owners []string
	for _, c := range cmd.Root().Commands() {
		if f := c.Flags().Lookup(name); c != cmd && f != nil && !f.Hidden {
			owners = append(owners, c.Name())
		}
	}
	if len(owners) > 0 {
		return fmt.Sprintf(": --%s belongs to %s", name, strings.Join(owners, ", "))
	}
	best, bestDist := "", 3 // at most two edits
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if d := editDistance(name, f.Name); d < bestDist && !f.Hidden {
			best, bestDist = f.Name, d
		}
	})
	if best != "" {
		return ": did you mean --" + best + "?"
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev = cur
	}
	return prev[len(b)]
}
