package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
			cmd.Flags().Visit(func(fl *pflag.Flag) { raw.Give(serveFields[fl.Name]) })
			s, err := plan.NewServe(raw)
			if err != nil {
				return usageError{err}
			}
			return serve(ctx, s, f.jsonReady, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	// The defaults shown are plan.NewServe's.
	fs.StringSliceVar(&f.Keys, "key", []string{plan.DefaultKey}, "server key types, one HTTPS listener each: "+strings.Join(plan.KeyTypes, ", "))
	fs.StringVar(&f.HTTP, "http", plan.DefaultServeHTTP, `plain HTTP listen address ("" for none)`)
	fs.StringVar(&f.HTTPS, "https", plan.DefaultServeHTTPS, `HTTPS listen address of the first key ("" for none)`)
	fs.IntVar(&f.Size, "size", plan.DefaultSize, "response body size in bytes")
	fs.StringVar(&f.TLSMax, "tls-max", plan.DefaultServeTLS, "highest TLS version served: 1.2 or 1.3")
	fs.StringVar(&f.CertDir, "cert-dir", "", "load DIR/<key>.crt and DIR/<key>.key instead of generating certificates")
	fs.StringVar(&f.ClientCA, "client-ca", "", "also serve, for each key, an HTTPS listener that demands a client certificate signed by a CA of this PEM file")
	fs.BoolVar(&f.jsonReady, "json", false, "print only one JSON line with the listen addresses once ready")
	return cmd
}

// serveFields names the plan.Serve field each serve flag sets, as
// plan.Error names it (and flagName spells it back).
var serveFields = map[string]string{"key": "keys", "http": "http", "https": "https", "size": "response_size",
	"tls-max": "tls_max", "cert-dir": "cert_dir", "client-ca": "client_ca"}

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
