package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/bench"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/site"
)

func newPrepareCmd(stdout, stderr io.Writer) *cobra.Command {
	var tables, rows, records int
	var ca, cert, certKey string
	var insecure, quiet bool
	cmd := &cobra.Command{
		Use:   "prepare URL",
		Short: "Create the sysbench-compatible sbtest tables (or Redis keys, or MongoDB's YCSB usertable) the workloads read",
		Long: `Create the data the database workloads read: sysbench-compatible sbtest
tables (id, k, c, pad, with the k index) in PostgreSQL and MySQL/MariaDB, keys
in Redis, and in MongoDB a YCSB-shaped ycsb.usertable of --rows documents
(_id "user..." as YCSB names them, field0..field9 of 100 random bytes), as the
runs' --rows reads them.
Idempotent: tables that already hold exactly --rows rows are kept; a MongoDB
load cut short is continued.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("prepare takes one database URL, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// One variant: the URL's own TLS setting (plain when it allows).
			t, err := plan.ParseTarget(args[0])
			if err != nil {
				return err
			}
			if t.Lab != "" || t.Builtin || t.Scheme == "http" || t.Scheme == "https" {
				return usageError{fmt.Errorf("prepare takes a postgres://, mysql://, redis:// or mongodb:// URL (a --lab server is prepared by the run itself)")}
			}
			if cmd.Flags().Changed("records") {
				// --rows is the one spelling (the runs read --rows documents);
				// --records, YCSB's word, is kept as an alias.
				switch {
				case t.Scheme != "mongodb":
					return usageError{fmt.Errorf("--records is MongoDB's: for %s use --rows", t.Redacted)}
				case cmd.Flags().Changed("rows") && rows != records:
					return usageError{fmt.Errorf("--records %d and --rows %d: --records is an alias of --rows, give one", records, rows)}
				}
				rows = records
				fmt.Fprintln(stderr, "note: --records is an alias of --rows, the spelling the runs use too (pool --lab mongodb --rows N)")
			}
			mode := []string{t.OwnTLS}
			if (cert != "" || t.CertFile != "") && slices.Contains(t.DefaultTLS, "auto") {
				mode = []string{"auto"} // a client certificate goes in a TLS handshake
			}
			// The engine's first workload reads the data prepare makes (a
			// URL's connect alone would ping).
			spec, err := plan.New(plan.Spec{Target: args[0], TLS: mode, Workload: plan.Workloads[t.Engine()][0], Tables: tables, Rows: rows, CAFile: ca, Insecure: insecure,
				CertFile: cert, CertKeyFile: certKey, Timeout: 10 * time.Minute})
			if err != nil {
				return err
			}
			st, err := site.Open(cmd.Context(), spec)
			if err != nil {
				return err
			}
			defer st.Stop()
			for _, w := range st.Warnings() {
				fmt.Fprintln(stderr, "warning: "+w)
			}
			bars := newRunProgress(stderr, quiet, fillUnit(spec))
			err = bench.Prepare(cmd.Context(), spec, st, func(done, total int64) {
				bars.update(bench.Progress{Stage: bench.StagePrepare, Done: done, Total: total})
			})
			bars.finish()
			switch {
			case errors.Is(err, bench.ErrNothingToPrepare):
				return fmt.Errorf("%s: %w", spec.Target, err)
			case err != nil && cmd.Context().Err() != nil:
				return errInterrupted
			case err != nil:
				return err
			}
			if t.Scheme == "mongodb" {
				fmt.Fprintf(stdout, "prepared %d documents in ycsb.usertable in %s\n", spec.Rows, spec.Target)
				return nil
			}
			fmt.Fprintf(stdout, "prepared %d tables of %d rows in %s\n", spec.Tables, spec.Rows, spec.Target)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&tables, "tables", plan.DefaultTables, "sbtest tables")
	fs.IntVar(&rows, "rows", plan.DefaultRows, "rows per table (Redis: keys; MongoDB: documents)")
	fs.IntVar(&records, "records", plan.DefaultRows, "MongoDB: an alias of --rows (YCSB's recordcount)")
	fs.MarkHidden("records")
	fs.StringVar(&ca, "ca", "", "PEM file of the CA that signed the server's certificate")
	fs.BoolVar(&insecure, "insecure", false, "do not verify the server's certificate")
	fs.StringVar(&cert, "cert", "", "client certificate (PEM) for a server that requires one")
	fs.StringVar(&certKey, "cert-key", "", "the client certificate's private key (PEM, not encrypted; default: the --cert file)")
	fs.BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr (warnings and errors still show)")
	return cmd
}
