package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/server"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

// serveFlags are the flags of the serve command.
type serveFlags struct {
	keys      []string
	http      string
	https     string
	size      int
	tlsMax    string
	certDir   string
	clientCA  string
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
			return f.run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringSliceVar(&f.keys, "key", []string{"rsa2048"}, "server key types, one HTTPS listener each: "+strings.Join(plan.KeyTypes, ", "))
	fs.StringVar(&f.http, "http", "127.0.0.1:8080", `plain HTTP listen address ("" for none)`)
	fs.StringVar(&f.https, "https", "127.0.0.1:8443", `HTTPS listen address of the first key ("" for none)`)
	fs.IntVar(&f.size, "size", plan.DefaultSize, "response body size in bytes")
	fs.StringVar(&f.tlsMax, "tls-max", "1.3", "highest TLS version served: 1.2 or 1.3")
	fs.StringVar(&f.certDir, "cert-dir", "", "load DIR/<key>.crt and DIR/<key>.key instead of generating certificates")
	fs.StringVar(&f.clientCA, "client-ca", "", "also serve, for each key, an HTTPS listener that demands a client certificate signed by a CA of this PEM file")
	fs.BoolVar(&f.jsonReady, "json", false, "print only one JSON line with the listen addresses once ready")
	return cmd
}

func (f *serveFlags) run(ctx context.Context, stdout, stderr io.Writer) error {
	cfg := server.Config{HTTPAddr: f.http, HTTPSAddr: f.https, ResponseSize: f.size, Log: stderr}
	switch f.tlsMax {
	case "1.2":
		cfg.MaxTLS = tls.VersionTLS12
	case "1.3":
		cfg.MaxTLS = tls.VersionTLS13
	default:
		return usageError{fmt.Errorf("--tls-max: %q is not 1.2 or 1.3", f.tlsMax)}
	}
	if f.size < 0 || f.size > 1<<30 {
		return usageError{fmt.Errorf("--size: %d is out of range: use 0 to 1 GiB", f.size)}
	}
	for i, k := range f.keys {
		if !slices.Contains(plan.KeyTypes, k) {
			return usageError{fmt.Errorf("--key: unknown key type %q: use one of %s", k, strings.Join(plan.KeyTypes, ", "))}
		}
		if slices.Contains(f.keys[:i], k) {
			return usageError{fmt.Errorf("--key: %s is given twice", k)}
		}
	}
	if f.https != "" && len(f.keys) == 0 {
		return usageError{fmt.Errorf("--https needs at least one --key")}
	}

	dir := f.certDir
	if f.https != "" && dir == "" {
		tmp, err := os.MkdirTemp("", "tlsbench-serve-")
		if err != nil {
			return err
		}
		// The keys are throw-away: they go when the server does.
		defer os.RemoveAll(tmp)
		if err := server.WriteCerts(tmp, f.keys); err != nil {
			return err
		}
		dir = tmp
	}
	if f.https != "" {
		cfg.Keys = f.keys
		var err error
		if cfg.Certs, err = server.LoadCerts(dir, f.keys); err != nil {
			return err
		}
	}

	if f.clientCA != "" {
		if f.https == "" {
			return usageError{fmt.Errorf("--client-ca needs --https")}
		}
		var err error
		if cfg.ClientCAs, err = tlsx.LoadCAFile(f.clientCA); err != nil {
			return usageError{fmt.Errorf("--client-ca: %w", err)}
		}
	}
	srv, err := server.Start(cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	if f.jsonReady {
		if err := json.NewEncoder(stdout).Encode(srv.Ready()); err != nil {
			return err
		}
	} else if err := f.printListeners(stdout, srv, dir); err != nil {
		return err
	}
	<-ctx.Done()
	return srv.Close()
}

// printListeners prints one line per listener, in --key order, and where
// the CA certificate is.
func (f *serveFlags) printListeners(w io.Writer, srv *server.Server, dir string) error {
	var b strings.Builder
	if a := srv.HTTPAddr(); a != "" {
		fmt.Fprintf(&b, "http   http://%s/\n", a)
	}
	addrs := srv.HTTPSAddrs()
	for _, k := range f.keys {
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
