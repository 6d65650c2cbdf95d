package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
)

func newReportCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "report RESULT.json",
		Short: "Render the tables of a result file again, without running anything",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("report takes one result file, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			r, err := result.Read(args[0])
			if err != nil {
				return err
			}
			return report.Text(stdout, r)
		},
	}
}
