package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/gate"
	"github.com/tlsbench/tlsbench/internal/report"
)

func newCompareCmd(stdout io.Writer) *cobra.Command {
	var gf gateFlags
	cmd := &cobra.Command{
		Use:   "compare OLD.json NEW.json",
		Short: "Compare two result files: before and after a change, cell by cell",
		Long: `Compare two result files: before and after a change, cell by cell.

For each experiment, variant (matched by ID) and concurrency both runs
measured, it prints the throughput, p95 latency, mean connection latency
(connect), and client and server CPU per operation of the old and the new run,
each as mean ±95% CI, and the change in percent with its 95% interval. The
runs share no rounds, so the interval is Welch's; * marks a change whose
interval excludes 0, ~ one that does not. Cells and variants in one file only
are listed as such; a note says when the runs differ in target, workload,
duration or machine.

--gate 'compare: EXPERIMENT[VARIANT|*].QUANTITY.delta OP BOUND% [@ci95]'
judges those changes (exit 3 when one fails; docs/gates.md).`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageError{fmt.Errorf("compare takes two result files, OLD and NEW, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			gates, err := gf.parse()
			if err != nil {
				return err
			}
			var runs [2]report.Run
			for i, path := range args {
				r, err := readResult(path)
				if err != nil {
					return err
				}
				runs[i] = report.Run{Name: path, Result: r}
			}
			if gates, err = gate.CheckCompare(gates, runs[0].Result, runs[1].Result); err != nil {
				return usageError{err}
			}
			c := report.Compare(runs[0], runs[1])
			if err := report.CompareText(stdout, c); err != nil || len(gates) == 0 {
				return err
			}
			vs := gate.EvaluateCompare(gates, c)
			fmt.Fprintln(stdout)
			if err := report.GatesText(stdout, vs); err != nil {
				return err
			}
			return gf.finish(vs, "tlsbench compare", "", nil)
		},
	}
	gf.register(cmd, "a compare: gate on the change from OLD to NEW, repeatable, e.g. 'compare: pool[*].server_cpu_per_op.delta < +10% @ci95' (docs/gates.md)", "")
	return cmd
}
