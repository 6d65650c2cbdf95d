package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/speed"
)

func newCryptoCmd(argv []string, stdout, stderr io.Writer) *cobra.Command {
	var f cryptoFlags
	cmd := &cobra.Command{
		Use:   "crypto [PRIMITIVE...]",
		Short: "Measure the local crypto primitives, Go's and OpenSSL's, like openssl speed",
		Long: `Measure the local crypto primitives, in the shape of openssl speed: signatures
and verifications per second of every server key type, key agreements per second,
ML-KEM-768's key generation, encapsulation and decapsulation, each side's part of
a TLS 1.3 key exchange by group (x25519, ecdh-p256 and the post-quantum hybrid
x25519mlkem768, with the key share each side sends), and the record ciphers' MB/s
by record size, on one core and on all cores.

Go's own primitives are measured in-process; where openssl is on the machine, its
figures are measured too (openssl speed), since most servers use OpenSSL (OpenSSL
3.0 has no ML-KEM: the output says so). The
signature rates are the ceiling of a server's new TLS connections: every full
handshake costs it one signature.

PRIMITIVE is any of ` + strings.Join(plan.Primitives(), ", ") + ` (default all).
With all of them and openssl, a run takes about a minute on two cores: openssl
speed spends at least a second on each figure.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			raw := f.Crypto
			raw.Only = args
			giveTable(cmd.Flags(), cryptoOptions, raw.Give)
			o, err := plan.NewCrypto(raw)
			if err != nil {
				return err
			}
			return cryptoRun(cmd.Context(), o, f.openssl, f.output, f.quiet, argv, stdout, stderr)
		},
	}
	registerTable(cmd.Flags(), cryptoOptions, onCrypto, &f, tableDefaults(cryptoOptions, onCrypto, func(string) (plan.Crypto, error) {
		return plan.NewCrypto(plan.Crypto{})
	}))
	return cmd
}

// cryptoFlags are crypto's flags: plan.Crypto's, which defaults and
// validates them, and where the figures go.
type cryptoFlags struct {
	plan.Crypto
	openssl, output string
	quiet           bool
}

// cryptoOptions are crypto's flags.
var cryptoOptions = []option[cryptoFlags, plan.Crypto]{
	{flag: "duration", short: "d", section: secLoad, on: onCrypto, ptr: func(f *cryptoFlags) any { return &f.Duration },
		usage: "time of each Go figure (one operation, one size, on one core or all); openssl speed takes whole seconds, at least one",
		def:   func(c plan.Crypto) string { return c.Duration.String() }},
	{flag: "count", short: "n", section: secLoad, on: onCrypto, ptr: func(f *cryptoFlags) any { return &f.Count },
		usage: "operations per Go figure at most (then -d only bounds it)"},
	{flag: "output", short: "o", field: "-", section: secOutput, on: onCrypto, ptr: func(f *cryptoFlags) any { return &f.output },
		usage: "result file (default tlsbench-YYYYMMDD-HHMMSS.json)"},
	{flag: "quiet", short: "q", field: "-", section: secOutput, on: onCrypto, ptr: func(f *cryptoFlags) any { return &f.quiet },
		usage: "no progress on stderr (warnings and errors still show)"},
	{flag: "openssl", field: "-", section: secOther, on: onCrypto, ptr: func(f *cryptoFlags) any { return &f.openssl },
		usage: "openssl binary to measure too: auto (the one on the PATH, if any), off, or a path",
		def:   func(plan.Crypto) string { return "auto" }}, // cryptoRun's, not plan's: "" is auto
	{flag: "sizes", section: secOther, on: onCrypto, ptr: func(f *cryptoFlags) any { return &f.Sizes },
		usage: "cipher record sizes in bytes", def: func(c plan.Crypto) string { return ints(c.Sizes) }},
}

// cryptoRun measures Go's primitives and OpenSSL's, saves the result (also
// the part that finished when interrupted) and prints the tables.
func cryptoRun(ctx context.Context, o plan.Crypto, openssl, output string, quiet bool, argv []string, stdout, stderr io.Writer) error {
	var ossl *speed.OpenSSL
	var notes []string
	switch openssl {
	case "off":
	case "auto", "":
		var err error
		ossl, err = speed.FindOpenSSL(ctx, "")
		switch {
		case errors.Is(err, speed.ErrNoOpenSSL):
			notes = append(notes, "no openssl on this machine: Go's figures only")
		case err != nil:
			return err
		}
	default:
		var err error
		if ossl, err = speed.FindOpenSSL(ctx, openssl); err != nil {
			return usageError{fmt.Errorf("--openssl: %w", err)}
		}
	}
	out, err := openResultFile(output)
	if err != nil {
		return err
	}
	defer out.discard()
	res := newResult(argv)
	res.CryptoPlan = &o
	// The bounds in Spec too, where readers from before CryptoPlan look.
	res.Spec = plan.Spec{Duration: o.Duration, Count: o.Count}
	res.Target = result.Target{URL: "local", Kind: "crypto"}
	res.Trials = []result.Trial{}

	var bar *progress
	lines := newRunProgress(stderr, quiet, "")
	ps, more, err := speed.Run(ctx, o, ossl, func(stage string) func(done, total int) {
		if bar != nil {
			bar.finish()
		}
		lines.printf("measuring %s", stage)
		bar = &progress{}
		if !quiet {
			bar = newCountBar(stderr, stage)
		}
		return func(done, total int) { bar.set(int64(done), int64(total)) }
	})
	if bar != nil {
		bar.finish()
	}
	res.Crypto = append(res.Crypto, ps...)
	res.Notes = append(res.Notes, more...)
	res.Notes = append(res.Notes, notes...)
	res.End(ctx, err)
	return out.finish(res, len(res.Crypto) > 0, "the figures taken", err, stdout, stderr)
}

// ceilings measures, before a connect run, the server-side ceiling of each
// key of its TLS variants (see lab.Ceilings).
func ceilings(ctx context.Context, spec plan.Spec, variants []plan.Variant) ([]result.Ceiling, []string, error) {
	return lab.Ceilings(ctx, spec, variants)
}
