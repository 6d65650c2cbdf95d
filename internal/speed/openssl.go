package speed

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// OpenSSL runs `openssl speed`, whose figures are those of the library most
// servers (PostgreSQL, MariaDB, Redis on Debian) link.
type OpenSSL struct {
	Path string
	// Library is the libcrypto version the binary reports, e.g.
	// "OpenSSL 3.0.19": the library, not the command, is what servers use.
	Library string
}

// ErrNoOpenSSL is returned by FindOpenSSL when no openssl is on the PATH.
var ErrNoOpenSSL = errors.New("no openssl on this machine")

// FindOpenSSL finds the openssl binary at path ("" looks it up on the PATH)
// and asks it its version.
func FindOpenSSL(ctx context.Context, path string) (*OpenSSL, error) {
	if path == "" {
		p, err := exec.LookPath("openssl")
		if err != nil {
			return nil, ErrNoOpenSSL
		}
		path = p
	}
	out, err := exec.CommandContext(ctx, path, "version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s version: %w", path, err)
	}
	lib, err := parseVersion(string(out))
	if err != nil {
		return nil, fmt.Errorf("%s version: %w", path, err)
	}
	return &OpenSSL{Path: path, Library: lib}, nil
}

// parseVersion reads "OpenSSL 3.0.19 27 Jan 2026 (Library: OpenSSL 3.0.19
// 27 Jan 2026)" as "OpenSSL 3.0.19", preferring the library's version.
func parseVersion(s string) (string, error) {
	s = strings.TrimSpace(s)
	if _, lib, ok := strings.Cut(s, "(Library: "); ok {
		s = lib
	}
	f := strings.Fields(s)
	if len(f) < 2 {
		return "", fmt.Errorf("unexpected output %q", s)
	}
	return f[0] + " " + f[1], nil
}

// opensslNames are the names `openssl speed` knows tlsbench's primitives by.
var opensslNames = map[string]string{
	"rsa1024": "rsa1024", "rsa2048": "rsa2048", "rsa4096": "rsa4096",
	"ecdsa-p256": "ecdsap256", "ecdsa-p384": "ecdsap384", "ed25519": "ed25519",
	"x25519": "ecdhx25519", "ecdh-p256": "ecdhp256",
}

// aeads are the ciphers openssl speed -aead runs as TLS does a record: IV,
// 13-byte additional data, encryption, tag. Others (the stitched
// aes-256-cbc-hmac-sha1) run as a stream.
var aeads = []string{"aes-128-gcm", "aes-256-gcm", "chacha20-poly1305"}

// seconds is what openssl speed -seconds takes for d: whole seconds, at
// least one.
func seconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// Measure runs openssl speed for the primitives of o, on one core and with
// -multi on o.Cores. Its ciphers' all-cores figures are taken at the largest
// size only, since openssl speed spends at least a second on every figure.
// Primitives this openssl does not offer are left out and named in the
// notes, which also say how the figures were taken. o comes from
// plan.NewCrypto; done, if not nil, is called with the progress so far.
func (s *OpenSSL) Measure(ctx context.Context, o plan.Crypto, done func(done, total int)) ([]result.Primitive, []string, error) {
	sec := seconds(o.Duration)
	note := fmt.Sprintf("%s: figures from openssl speed -seconds %d (whole seconds, at least one), per second of user CPU time", s.Library, sec)
	if o.Cores > 1 {
		note += fmt.Sprintf("; all cores with -multi %d, the sum of its processes", o.Cores)
	}
	notes := []string{note}
	runs := s.runs(o)
	byKey := map[string]*result.Primitive{}
	var order []string
	collect := func() []result.Primitive {
		out := make([]result.Primitive, 0, len(order))
		for _, k := range order {
			out = append(out, *byKey[k])
		}
		return out
	}
	missing := map[string]string{}
	for i, run := range runs {
		if done != nil && i > 0 {
			done(i, len(runs))
		}
		if _, gone := missing[run.cipher]; gone {
			continue
		}
		rows, err := s.speed(ctx, run.args, run.sizes)
		var ue unknownError
		switch {
		case errors.As(err, &ue) && run.cipher != "":
			missing[run.cipher] = ue.msg
			continue
		case err != nil:
			return collect(), notes, err
		}
		for _, r := range rows {
			k := r.kind + "/" + r.name + "/" + strconv.Itoa(r.size)
			p, ok := byKey[k]
			if !ok {
				p = &result.Primitive{Library: s.Library, Kind: r.kind, Name: r.name, Size: r.size}
				byKey[k] = p
				order = append(order, k)
			}
			if run.multi {
				p.AllCores = r.rate
			} else {
				p.PerCore = r.rate
			}
		}
	}
	if done != nil && len(runs) > 0 {
		done(len(runs), len(runs))
	}
	var ciphers []string
	for _, name := range o.Only {
		if slices.Contains(plan.RecordCiphers, name) {
			ciphers = append(ciphers, name)
		}
	}
	for _, c := range ciphers {
		if msg, gone := missing[c]; gone {
			notes = append(notes, fmt.Sprintf("%s does not offer %s here (%s): left out", s.Library, c, msg))
		}
	}
	if slices.ContainsFunc(ciphers, func(c string) bool { return slices.Contains(aeads, c) }) {
		notes = append(notes, s.Library+": AEAD ciphers with -aead: per record IV, 13-byte additional data, encryption and tag, as TLS does")
	}
	if _, gone := missing["aes-256-cbc-hmac-sha1"]; slices.Contains(ciphers, "aes-256-cbc-hmac-sha1") && !gone {
		notes = append(notes, s.Library+": aes-256-cbc-hmac-sha1 is its stitched AES-NI cipher over a stream (CBC and SHA-1 in one pass, no per-record MAC or padding): openssl speed has no TLS-record mode for it, so small records look cheaper than in TLS")
	}
	if slices.ContainsFunc(o.Only, func(n string) bool { return slices.Contains(plan.KEMs, n) }) {
		note, err := s.kemNote(ctx)
		if err != nil {
			return collect(), notes, err
		}
		notes = append(notes, note)
	}
	if o.Cores > 1 && len(ciphers) > len(missing) {
		notes = append(notes, fmt.Sprintf("%s: all-cores cipher figures at %d bytes only (openssl speed spends a second or more on every figure)", s.Library, o.Sizes[len(o.Sizes)-1]))
	}
	return collect(), notes, nil
}

// kemNote says why OpenSSL has no ML-KEM figures: OpenSSL 3.0 (Debian 12)
// has no ML-KEM at all (3.5 added ML-KEM-768 and X25519MLKEM768); asked
// whether it lists ML-KEM-768 among its KEMs, a newer one is told apart.
func (s *OpenSSL) kemNote(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, s.Path, "list", "-kem-algorithms").Output()
	if err != nil {
		return "", fmt.Errorf("%s list -kem-algorithms: %w", s.Path, err)
	}
	if strings.Contains(strings.ToUpper(string(out)), "ML-KEM-768") {
		return s.Library + " offers ML-KEM-768, but tlsbench does not read openssl speed's KEM figures: mlkem768 and x25519mlkem768 are Go's only", nil
	}
	return s.Library + " has no ML-KEM (openssl list -kem-algorithms names none; OpenSSL 3.5 added ML-KEM-768 and X25519MLKEM768): mlkem768 and x25519mlkem768 are Go's figures only, and a server linked with this OpenSSL cannot negotiate the hybrid", nil
}

// speedRun is one openssl speed command: its arguments, whether it runs on
// all cores, the cipher it measures, if any, and at which record sizes.
type speedRun struct {
	args   []string
	multi  bool
	cipher string
	sizes  []int
}

// runs lists the openssl speed runs of o: all public-key primitives in one
// run, ciphers with -aead once per size (-aead would otherwise pick sizes of
// its own), then the same with -multi, ciphers at the largest size only.
func (s *OpenSSL) runs(o plan.Crypto) []speedRun {
	var pk, ciphers []string
	for _, name := range o.Only {
		if n, ok := opensslNames[name]; ok {
			pk = append(pk, n)
		} else if slices.Contains(plan.RecordCiphers, name) {
			ciphers = append(ciphers, name)
		}
	}
	var runs []speedRun
	for _, multi := range []bool{false, true} {
		if multi && o.Cores < 2 {
			break
		}
		base := []string{"speed", "-mr", "-seconds", strconv.Itoa(seconds(o.Duration))}
		sizes := o.Sizes
		if multi {
			base = append(base, "-multi", strconv.Itoa(o.Cores))
			sizes = sizes[len(sizes)-1:]
		}
		if len(pk) > 0 {
			runs = append(runs, speedRun{args: append(slices.Clone(base), pk...), multi: multi})
		}
		for _, c := range ciphers {
			aead := slices.Contains(aeads, c)
			if !aead && slices.Equal(sizes, plan.RecordSizes) {
				// openssl speed's own sizes, in one run.
				runs = append(runs, speedRun{args: append(slices.Clone(base), "-evp", c), multi: multi, cipher: c, sizes: plan.RecordSizes})
				continue
			}
			for _, size := range sizes {
				args := slices.Clone(base)
				if aead {
					args = append(args, "-aead")
				}
				args = append(args, "-bytes", strconv.Itoa(size), "-evp", c)
				runs = append(runs, speedRun{args: args, multi: multi, cipher: c, sizes: []int{size}})
			}
		}
	}
	return runs
}

// SignRate measures how many signatures per second openssl makes with a key
// type on one core. openssl speed cannot sign without verifying, so this
// takes two seconds at least.
func (s *OpenSSL) SignRate(ctx context.Context, key string, d time.Duration) (float64, error) {
	name, ok := opensslNames[key]
	if !ok || !slices.Contains(plan.KeyTypes, key) {
		return 0, fmt.Errorf("openssl speed has no signature for key type %q", key)
	}
	rows, err := s.speed(ctx, []string{"speed", "-mr", "-seconds", strconv.Itoa(seconds(d)), name}, nil)
	if err != nil {
		return 0, err
	}
	for _, r := range rows {
		if r.kind == result.KindSign && r.name == key {
			return r.rate, nil
		}
	}
	return 0, fmt.Errorf("openssl speed %s printed no signature rate", name)
}

// unknownError is openssl's refusal of a cipher it does not offer.
type unknownError struct{ msg string }

func (e unknownError) Error() string { return e.msg }

// speed runs openssl with args and parses its -mr output; sizes are the
// record sizes of its cipher figures.
func (s *OpenSSL) speed(ctx context.Context, args []string, sizes []int) ([]speedRow, error) {
	cmd := exec.CommandContext(ctx, s.Path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		msg := firstLine(stderr.String())
		if strings.Contains(msg, "unknown cipher") || strings.Contains(msg, "nknown algorithm") {
			return nil, unknownError{msg}
		}
		return nil, fmt.Errorf("openssl %s: %v: %s", strings.Join(args, " "), err, msg)
	}
	rows, err := parseSpeed(stdout.String(), sizes)
	if err != nil {
		return nil, fmt.Errorf("openssl %s: %w", strings.Join(args, " "), err)
	}
	return rows, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// speedRow is one figure of openssl speed -mr, in tlsbench's names.
type speedRow struct {
	kind, name string
	size       int
	rate       float64 // per second: operations, or bytes for ciphers
}

// parseSpeed reads the final figures of `openssl speed -mr` (with -multi,
// the sums the parent prints; the children's "Got:" lines are skipped).
// sizes are the record sizes of cipher figures until a +H line says
// otherwise (with -multi the parent prints none):
//
//	+H:16:64:...            sizes of the +F lines of ciphers that follow
//	+F:idx:NAME:b/s:...     a cipher's bytes per second at those sizes
//	+F2:idx:bits:sign:verify            RSA
//	+F4:idx:bits:sign:verify            ECDSA
//	+F5:idx:bits:derive:seconds/op      ECDH (X25519 is 253 bits)
//	+F6:idx:bits:NAME:sign:verify       EdDSA
func parseSpeed(out string, sizes []int) ([]speedRow, error) {
	var rows []speedRow
	sc := bufio.NewScanner(strings.NewReader(out))
	num := func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
	for sc.Scan() {
		f := strings.Split(strings.TrimSpace(sc.Text()), ":")
		bad := fmt.Errorf("unexpected line %q", sc.Text())
		switch f[0] {
		case "+H":
			sizes = nil
			for _, x := range f[1:] {
				n, err := strconv.Atoi(x)
				if err != nil {
					return nil, bad
				}
				sizes = append(sizes, n)
			}
		case "+F":
			if len(f) != 3+len(sizes) {
				return nil, bad
			}
			for i, x := range f[3:] {
				v, err := num(x)
				if err != nil {
					return nil, bad
				}
				rows = append(rows, speedRow{result.KindCipher, strings.ToLower(f[2]), sizes[i], v})
			}
		case "+F2", "+F4":
			if len(f) != 5 {
				return nil, bad
			}
			name := map[string]string{"+F2": "rsa", "+F4": "ecdsa-p"}[f[0]] + f[2]
			sign, err1 := num(f[3])
			verify, err2 := num(f[4])
			if err1 != nil || err2 != nil {
				return nil, bad
			}
			rows = append(rows, speedRow{result.KindSign, name, 0, sign}, speedRow{result.KindVerify, name, 0, verify})
		case "+F5":
			if len(f) != 5 {
				return nil, bad
			}
			name := map[string]string{"253": "x25519", "256": "ecdh-p256"}[f[2]]
			v, err := num(f[3])
			if err != nil || name == "" {
				return nil, bad
			}
			rows = append(rows, speedRow{result.KindKeyAgreement, name, 0, v})
		case "+F6":
			if len(f) != 6 || f[3] != "Ed25519" {
				return nil, bad
			}
			sign, err1 := num(f[4])
			verify, err2 := num(f[5])
			if err1 != nil || err2 != nil {
				return nil, bad
			}
			rows = append(rows, speedRow{result.KindSign, "ed25519", 0, sign}, speedRow{result.KindVerify, "ed25519", 0, verify})
		}
	}
	if len(rows) == 0 {
		return nil, errors.New("no figures in its output")
	}
	return rows, nil
}
