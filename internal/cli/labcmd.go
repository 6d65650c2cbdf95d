package cli

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/plan"
)

func newLabCmd(stdout io.Writer) *cobra.Command {
	var f plan.Lab
	cmd := &cobra.Command{
		Use:   "lab ENGINE...",
		Short: "Start throw-away postgres, mariadb, redis, mongodb or sshd servers, print their URLs, stop them on Ctrl-C",
		Long: `Start throw-away real servers from the system's binaries: in a temp dir, on
free loopback ports, with a certificate for every --key (the first is
presented), TLS on and plaintext allowed. Their URLs are printed without the
password, which is in a 0600 file named by passfile=. sshd gets a generated
host key and a key for the current user, and allows port forwarding only.
Ctrl-C stops the servers and removes their keys.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("lab takes one or more engines: %s, sshd", strings.Join(lab.Engines(), ", "))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			// Every engine and key is checked before any server starts:
			// a mistyped last engine must not leave the first running.
			l, err := plan.NewLab(plan.Lab{Engines: args, Keys: f.Keys})
			if err != nil {
				return err
			}
			keys := l.Keys
			sweepStale(cmd.ErrOrStderr())
			for _, engine := range l.Engines {
				if engine == plan.LabSSHD {
					srv, err := lab.StartSSHD(ctx)
					if err != nil {
						if ctx.Err() != nil {
							return errInterrupted
						}
						return err
					}
					defer srv.Stop()
					fmt.Fprintf(stdout, "sshd %s, user %s, every cipher of --via ssh:CIPHER offered\n", srv.Version(), srv.User())
					fmt.Fprintf(stdout, "  --via %s\n", srv.URL())
					fmt.Fprintf(stdout, "  ssh -i %s -o UserKnownHostsFile=%s -p %s -N -L PORT:HOST:PORT %s@127.0.0.1\n", srv.IdentityFile(), srv.KnownHostsFile(), srv.Addr()[strings.LastIndex(srv.Addr(), ":")+1:], srv.User())
					continue
				}
				srv, err := lab.Start(ctx, engine, lab.Options{Keys: keys})
				if err != nil {
					if ctx.Err() != nil {
						return errInterrupted
					}
					return err
				}
				defer srv.Stop()
				info := srv.Info()
				fmt.Fprintf(stdout, "%s %s, presenting %s; certificates for %s\n", engine, info.Version, keys[0], strings.Join(keys, ", "))
				for _, auth := range srv.Auths() {
					plain, err := srv.URL(auth, false)
					if err != nil {
						return err
					}
					secure, err := srv.URL(auth, true)
					if err != nil {
						return err
					}
					if plain == secure {
						fmt.Fprintf(stdout, "  %-22s %s\n", auth, printableURL(plain, srv.PasswordFile()))
						continue
					}
					fmt.Fprintf(stdout, "  %-22s plain %s\n", auth, printableURL(plain, srv.PasswordFile()))
					fmt.Fprintf(stdout, "  %-22s tls   %s\n", auth, printableURL(secure, srv.PasswordFile()))
				}
				fmt.Fprintf(stdout, "  ca %s\n", srv.CAFile())
				for _, n := range srv.Notes() {
					fmt.Fprintf(stdout, "  note: %s\n", n)
				}
			}
			fmt.Fprintln(stdout, "Ctrl-C stops the servers.")
			<-ctx.Done()
			return errInterrupted
		},
	}
	registerTable(cmd.Flags(), labOptions, onLab, &f, tableDefaults(labOptions, onLab, func(string) (plan.Lab, error) {
		return plan.NewLab(plan.Lab{})
	}))
	return cmd
}

// labOptions are lab's flags, fields of plan.Lab.
var labOptions = []option[plan.Lab, plan.Lab]{
	{flag: "key", field: "keys", section: secTarget, on: onLab, ptr: func(l *plan.Lab) any { return &l.Keys },
		usage: "server key types, the first presented: " + strings.Join(plan.KeyTypes, ", "), def: func(l plan.Lab) string { return strs(l.Keys) }},
}

// printableURL replaces a URL's password by a passfile= parameter.
func printableURL(raw, passfile string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return plan.Redact(raw)
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	q.Set("passfile", passfile)
	u.RawQuery = q.Encode()
	return u.String()
}
