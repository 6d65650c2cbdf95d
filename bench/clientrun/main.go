// Command clientrun runs one run of a client stack through
// internal/clientstack, the path `tlsbench --client` takes, and prints its
// figures: bench/peers-db.sh's tlsbench-driving-libpq row, until the CLI
// has --client.
//
//	clientrun -stack libpq -engine postgres -host 127.0.0.1 -port 5432 -user u -db d \
//	  -passfile F -tls auto -verify none -workload point-select -rows 100000 -c 4 -d 5s
//
// prints "ops errors span_ns elapsed_ns cpu_ns": the operations and the
// failed ones, from the first start to the last end, the run as tlsbench
// saw it, and the tool's CPU (rusage).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/clientstack"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "clientrun:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg clientstack.Config
	var stack, engine, passfile string
	var r clientstack.Run
	flag.StringVar(&stack, "stack", "libpq", "the client stack")
	flag.StringVar(&engine, "engine", "postgres", "the engine")
	flag.StringVar(&cfg.Host, "host", "127.0.0.1", "the server's IP address")
	flag.IntVar(&cfg.Port, "port", 5432, "the server's port")
	flag.StringVar(&cfg.User, "user", "", "the user")
	flag.StringVar(&cfg.Database, "db", "", "the database")
	flag.StringVar(&passfile, "passfile", "", "a file holding the password (alone, or libpq's *:port:*:*:password)")
	flag.StringVar(&cfg.TLS, "tls", "off", "off, 1.2, 1.3 or auto")
	flag.StringVar(&cfg.Verify, "verify", "none", "full, ca or none")
	flag.StringVar(&cfg.CA, "ca", "", "the CA file")
	flag.StringVar(&cfg.ServerName, "server-name", "", "the name to verify")
	flag.StringVar(&cfg.Workload, "workload", "point-select", "ping or point-select, get, request")
	flag.IntVar(&cfg.Tables, "tables", 1, "tables")
	flag.IntVar(&cfg.Rows, "rows", 100000, "rows a table")
	flag.StringVar(&cfg.QueryMode, "query-mode", "prepared", "prepared or simple")
	flag.StringVar(&r.Experiment, "experiment", "pool", "pool or connect")
	flag.IntVar(&r.Concurrency, "c", 4, "concurrency")
	flag.DurationVar(&r.Duration, "d", 5*time.Second, "duration")
	flag.DurationVar(&r.Warmup, "warmup", 0, "warm-up (pool)")
	flag.Parse()
	cfg.Timeout = 10 * time.Second
	var err error
	if cfg.Stack, err = clientstack.Lookup(engine, stack); err != nil {
		return err
	}
	if passfile != "" {
		b, err := os.ReadFile(passfile)
		if err != nil {
			return err
		}
		cfg.Password = strings.TrimSpace(string(b))
		if f := strings.Split(cfg.Password, ":"); len(f) == 5 {
			cfg.Password = f[4]
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := clientstack.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	rep, err := c.Run(ctx, r)
	if err != nil {
		return err
	}
	var errs, first, last int64
	for i, o := range rep.Ops {
		if o.Failed() {
			errs++
		}
		if i == 0 || o.Start < first {
			first = o.Start
		}
		last = max(last, o.End)
	}
	fmt.Println(len(rep.Ops), errs, last-first, rep.Elapsed.Nanoseconds(), rep.CPU.Nanoseconds())
	return nil
}
