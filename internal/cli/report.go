package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
)

// reportFormats are the renderings of `tlsbench report --format`.
var reportFormats = map[string]func(io.Writer, *result.Result) error{
	"text": report.Text,
	"csv":  report.CSV,
	"json": report.JSON,
}

func newReportCmd(stdout io.Writer) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "report RESULT.json",
		Short: "Render the tables of a result file again, without running anything",
		Long: `Render the tables of a result file again, without running anything.

--format text (the default) prints the tables of the run; csv prints one row
per experiment, variant and concurrency; json a summary with the same fields
(see docs/result.md).`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("report takes one result file, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			render, ok := reportFormats[format]
			if !ok {
				return usageError{fmt.Errorf("--format: unknown format %q: use text, csv or json", format)}
			}
			r, err := result.Read(args[0])
			if err != nil {
				return err
			}
			return render(stdout, r)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, csv or json")
	return cmd
}
