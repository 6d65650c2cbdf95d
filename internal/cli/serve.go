package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/server"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// serveFlags are the flags of the serve command: plan.Serve's, which
// defaults and validates them.
type serveFlags struct {
	plan.Serve
	jsonReady bool
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the built-in HTTPS/HTTP server until interrupted",
		Long: `serve runs the built-in server that tlsbench measures when given no target:
every path answers 200 with --size bytes over HTTP/1.1, in plain HTTP and in
HTTPS with one listener per server key (the first on --https, the others on
free ports of the same host). Without --cert-dir it makes a throw-away CA and
certificates for 127.0.0.1, ::1 and localhost, and deletes them when it stops.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			raw := f.Serve
			giveTable(cmd.Flags(), serveOptions, raw.Give)
			s, err := plan.NewServe(raw)
			if err != nil {
				return usageError{err}
			}
			return serve(ctx, s, f.jsonReady, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	registerTable(cmd.Flags(), serveOptions, onServe, &f, tableDefaults(serveOptions, onServe, func(string) (plan.Serve, error) {
		return plan.NewServe(plan.Serve{})
	}))
	return cmd
}

// serveOptions are serve's flags, fields of plan.Serve bar --json.
var serveOptions = []option[serveFlags, plan.Serve]{
	{flag: "key", field: "keys", section: secTarget, on: onServe, ptr: func(f *serveFlags) any { return &f.Keys },
		usage: "server key types, one HTTPS listener each: " + strings.Join(plan.KeyTypes, ", "), def: func(s plan.Serve) string { return strs(s.Keys) }},
	{flag: "tls-max", section: secTarget, on: onServe, ptr: func(f *serveFlags) any { return &f.TLSMax },
		usage: "highest TLS version served: 1.2 or 1.3", def: func(s plan.Serve) string { return s.TLSMax }},
	{flag: "cert-dir", section: secTarget, on: onServe, ptr: func(f *serveFlags) any { return &f.CertDir },
		usage: "load DIR/<key>.crt and DIR/<key>.key instead of generating certificates"},
	{flag: "client-ca", section: secTarget, on: onServe, ptr: func(f *serveFlags) any { return &f.ClientCA },
		usage: "also serve, for each key, an HTTPS listener that demands a client certificate signed by a CA of this PEM file"},
	{flag: "size", field: "response_size", section: secWorkload, on: onServe, ptr: func(f *serveFlags) any { return &f.Size },
		usage: "response body size in bytes", def: func(s plan.Serve) string { return strconv.Itoa(s.Size) }},
	{flag: "http", section: secOther, on: onServe, ptr: func(f *serveFlags) any { return &f.HTTP },
		usage: `plain HTTP listen address ("" for none)`, def: func(s plan.Serve) string { return s.HTTP }},
	{flag: "https", section: secOther, on: onServe, ptr: func(f *serveFlags) any { return &f.HTTPS },
		usage: `HTTPS listen address of the first key ("" for none)`, def: func(s plan.Serve) string { return s.HTTPS }},
	{flag: "json", field: "-", section: secOther, on: onServe, ptr: func(f *serveFlags) any { return &f.jsonReady },
		usage: "print only one JSON line with the listen addresses once ready"},
}

func serve(ctx context.Context, f plan.Serve, jsonReady bool, stdout, stderr io.Writer) error {
	cfg := server.Config{HTTPAddr: f.HTTP, HTTPSAddr: f.HTTPS, ResponseSize: f.Size, Log: stderr, MaxTLS: tls.VersionTLS13}
	if f.TLSMax == "1.2" {
		cfg.MaxTLS = tls.VersionTLS12
	}
	dir := f.CertDir
	if f.HTTPS != "" && dir == "" {
		tmp, err := os.MkdirTemp("", "tlsbench-serve-")
		if err != nil {
			return err
		}
		// The keys are throw-away: they go when the server does.
		defer os.RemoveAll(tmp)
		if err := server.WriteCerts(tmp, f.Keys); err != nil {
			return err
		}
		dir = tmp
	}
	if f.HTTPS != "" {
		cfg.Keys = f.Keys
		var err error
		if cfg.Certs, err = server.LoadCerts(dir, f.Keys); err != nil {
			return err
		}
	}

	if f.ClientCA != "" {
		var err error
		if cfg.ClientCAs, err = tlsx.LoadCAFile(f.ClientCA); err != nil {
			return usageError{fmt.Errorf("--client-ca: %w", err)}
		}
	}
	srv, err := server.Start(cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	if jsonReady {
		if err := json.NewEncoder(stdout).Encode(srv.Ready()); err != nil {
			return err
		}
	} else if err := printListeners(stdout, f.Keys, srv, dir); err != nil {
		return err
	}
	<-ctx.Done()
	return srv.Close()
}

// printListeners prints one line per listener, in --key order, and where
// the CA certificate is.
func printListeners(w io.Writer, keys []string, srv *server.Server, dir string) error {
	var b strings.Builder
	if a := srv.HTTPAddr(); a != "" {
		fmt.Fprintf(&b, "http   http://%s/\n", a)
	}
	addrs := srv.HTTPSAddrs()
	for _, k := range keys {
		if a, ok := addrs[k]; ok {
			fmt.Fprintf(&b, "https  https://%s/  key %s\n", a, k)
		}
		if a, ok := srv.MTLSAddrs()[k]; ok {
			fmt.Fprintf(&b, "https  https://%s/  key %s, demands a client certificate (--client-ca)\n", a, k)
		}
	}
	if len(addrs) > 0 {
		ca := filepath.Join(dir, "ca.crt")
		if _, err := os.Stat(ca); err == nil {
			fmt.Fprintf(&b, "ca     %s  (pass it to tlsbench with --ca)\n", ca)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
