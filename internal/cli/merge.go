package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/files"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
)

// shardSpec fills the spec's Shard from --shard and --start-at, and
// checks -o - (a framed result on stdout), which a shard alone writes.
func (f *runFlags) shardSpec(s *plan.Spec) error {
	if f.startAt != "" && f.shard == "" {
		return usageError{errors.New("--start-at schedules the shards of a split run: give --shard INDEX/COUNT too (0/1 for one machine)")}
	}
	if f.output == "-" && f.shard == "" {
		return usageError{fmt.Errorf("-o -: the result on stdout is framed for tlsbench merge, which takes shards: give --shard INDEX/COUNT too (0/1 for one machine)")}
	}
	if f.shard == "" {
		return nil
	}
	index, count, err := plan.ParseShard(f.shard)
	if err != nil {
		return usageError{fmt.Errorf("--shard %w", err)}
	}
	s.Shard = &plan.Shard{Index: index, Count: count}
	if f.startAt != "" {
		if s.Shard.StartAt, err = plan.ParseStartAt(f.startAt, time.Now()); err != nil {
			return usageError{fmt.Errorf("--start-at: %w", err)}
		}
	}
	return nil
}

// refuseShard is the --shard of a command that does not split: it says
// why instead of "unknown flag".
func refuseShard(cmd *cobra.Command, why string) {
	var shard string
	cmd.Flags().StringVar(&shard, "shard", "", "not taken: "+why)
	cmd.Flags().MarkHidden("shard")
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if c.Flags().Changed("shard") {
			return usageError{fmt.Errorf("--shard: %s", why)}
		}
		return run(c, args)
	}
}

// writeStream writes a shard's result to stdout, framed for merge, and
// its tables to stderr (-o -).
func writeStream(res *result.Result, stdout, stderr io.Writer) error {
	if err := report.Build(res).Text(stderr); err != nil {
		return err
	}
	return result.WriteFrame(stdout, res)
}

func newMergeCmd(argv []string, stdout io.Writer) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "merge SHARD... -o RESULT.json",
		Short: "Join the results of a run's shards (--shard I/N) into one result",
		Long: `Join the results of the shards of one run (each run with --shard I/N and the
same --start-at) into the result of the whole run, which report, compare and
the HTML page read like any other.

Each SHARD is a result file, or any text holding the framed results that shard
runs with -o - write to stdout: a kubectl logs dump of every pod, with or
without --prefix, works as it is.

merge checks that the shards ran one plan (the same spec but the shard index,
the same --start-at) and that every shard 0 to N-1 is there once. Operations,
rates and client CPU add; latency histograms merge exactly (their counts add);
each shard's machine is kept. The note says how far apart the shards' trials
started and ended, and warns above 5% of -d (at least 20ms).`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("merge takes the shards' result files (or kubectl logs dumps), got none")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if output == "" {
				return usageError{errors.New("merge: give -o RESULT.json, where the merged result goes")}
			}
			for _, p := range []string{output, pageBeside(output)} {
				if err := result.CheckOutput(p); err != nil {
					return usageError{fmt.Errorf("-o: %w", err)}
				}
			}
			var parts []result.Part
			for _, path := range args {
				ps, err := result.ReadParts(path)
				switch {
				case errors.Is(err, fs.ErrNotExist):
					return usageError{fmt.Errorf("%s: no such file: give the shards' result files or a kubectl logs dump", path)}
				case errors.Is(err, files.ErrNotFile):
					return usageError{err}
				case err != nil:
					return usageError{err}
				}
				parts = append(parts, ps...)
			}
			merged, err := result.Merge(parts, append([]string{"tlsbench"}, redactArgs(argv)...))
			if err != nil {
				return usageError{fmt.Errorf("merge: %w", err)}
			}
			stderr := cmd.ErrOrStderr()
			if err := result.Write(output, merged); err != nil {
				return err
			}
			m := report.Build(merged)
			if err := m.Text(stdout); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "result: %s\n", output)
			return writePage(output, m, stderr)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "the merged result file (an HTML page is written beside it)")
	return cmd
}
