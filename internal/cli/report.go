package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/files"
	"github.com/tlsbench/tlsbench/internal/report"
	"github.com/tlsbench/tlsbench/internal/result"
)

// reportFormats are the renderings of `tlsbench report --format`.
var reportFormats = map[string]func(*report.Model, io.Writer) error{
	"text": (*report.Model).Text, // a preset's own table first, as the run printed it
	"csv":  (*report.Model).CSV,
	"json": (*report.Model).JSON,
}

func newReportCmd(stdout io.Writer) *cobra.Command {
	var format, html, pngDir, svgDir string
	cmd := &cobra.Command{
		Use:   "report RESULT.json",
		Short: "Render a result file again: tables, an HTML page with charts, chart images",
		Long: `Render a result file again, without running anything.

--format text (the default) prints the tables of the run; csv prints one row
per experiment, variant and concurrency; json a summary with the same fields
(see docs/result.md).

--html FILE writes one self-contained page (it loads nothing from the network):
findings in plain words, the charts, the tables, what was negotiated, notes,
warnings and the environment. --png DIR and --svg DIR write each chart as a
file of its own (DIR is created if missing). With any of them the tables are
printed only if --format is given too.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("report takes one result file, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			render, ok := reportFormats[format]
			if !ok {
				return usageError{fmt.Errorf("--format: unknown format %q: use text, csv or json", format)}
			}
			r, err := readResult(args[0])
			if err != nil {
				return err
			}
			m := report.Build(r)
			files := html != "" || pngDir != "" || svgDir != ""
			if !files || cmd.Flags().Changed("format") {
				if err := render(m, stdout); err != nil {
					return err
				}
			}
			// Written files are named on stderr, as a run names its result.
			stderr := cmd.ErrOrStderr()
			if html != "" {
				if err := m.WriteHTMLFile(html); err != nil {
					return err
				}
				fmt.Fprintf(stderr, "report: %s\n", html)
			}
			for _, c := range []struct{ dir, format string }{{pngDir, "png"}, {svgDir, "svg"}} {
				if c.dir == "" {
					continue
				}
				paths, err := m.WriteCharts(c.dir, c.format)
				if err != nil {
					return err
				}
				fmt.Fprintf(stderr, "charts: %d %s files in %s\n", len(paths), c.format, c.dir)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, csv or json")
	cmd.Flags().StringVar(&html, "html", "", "write the report as one self-contained HTML `FILE`")
	cmd.Flags().StringVar(&pngDir, "png", "", "write each chart as a PNG file into `DIR`")
	cmd.Flags().StringVar(&svgDir, "svg", "", "write each chart as an SVG file into `DIR`")
	return cmd
}

// readResult reads a result file named on the command line: a file that is
// not there is a usage error (exit 2), like any other mistyped argument.
func readResult(path string) (*result.Result, error) {
	r, err := result.Read(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, usageError{fmt.Errorf("%s: no such result file: give the path of a tlsbench result (.json)", path)}
	case errors.Is(err, files.ErrNotFile):
		return nil, usageError{err}
	}
	return r, err
}
