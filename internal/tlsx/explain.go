package tlsx

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// explained is a handshake error rephrased as what to do about it; the
// original stays reachable through Unwrap.
type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }

// Explained returns err with the line format and args make of it in place
// of its own message, kept by Explain: an explanation made where the cause
// is known (a driver's Open); Unwrap still reaches err, for counting kinds.
func Explained(err error, format string, args ...any) error {
	return &explained{msg: fmt.Sprintf(format, args...), err: err}
}

// IsExplained reports whether err carries an explanation already.
func IsExplained(err error) bool {
	var done *explained
	return errors.As(err, &done)
}

// Explain turns an error of a connection to addr, made for variant v, into
// one actionable line that wraps err: a failed handshake, a refused
// connection, a full file table. An error it explained already keeps its
// line; errors it does not recognize are returned as they are.
func Explain(err error, addr string, v plan.Variant) error {
	if err == nil {
		return nil
	}
	wrap := func(format string, args ...any) error {
		return &explained{msg: fmt.Sprintf(format, args...), err: err}
	}
	var done *explained
	if errors.As(err, &done) {
		// Explained where it happened (a driver's Open); the caller's own
		// wrapping (the phase) adds nothing to the line.
		return &explained{msg: done.msg, err: err}
	}
	switch {
	case errors.Is(err, syscall.EMFILE):
		// Only the errno is wrapped: callers that print the innermost
		// syscall error of a failed dial would otherwise drop this line.
		return &explained{msg: "too many open files: " + raiseNoFile(), err: syscall.EMFILE}
	case errors.Is(err, syscall.ENFILE):
		return &explained{msg: "the system's table of open files is full (ENFILE): raise fs.file-max (sysctl), or use fewer connections (-c)", err: syscall.ENFILE}
	case errors.Is(err, syscall.ECONNREFUSED):
		return wrap("nothing is listening at %s (connection refused): is the server running, and is that its port?", addr)
	}

	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	switch {
	case errors.As(err, &unknownCA):
		return wrap("certificate of %s is signed by an unknown authority: pass --ca FILE with the issuing CA certificate, or --insecure to skip verification", addr)
	case errors.As(err, &hostErr):
		return wrap("certificate of %s is valid for %s, not %s: connect by a name the certificate lists, or pass --insecure", addr, certNames(hostErr.Certificate), hostErr.Host)
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		c := invalid.Cert
		if c != nil && time.Now().Before(c.NotBefore) {
			return wrap("certificate of %s is not valid before %s (check this machine's clock): wait, fix the certificate, or pass --insecure", addr, stamp(c.NotBefore))
		}
		if c != nil {
			return wrap("certificate of %s expired on %s: renew it, or pass --insecure", addr, stamp(c.NotAfter))
		}
		return wrap("certificate of %s has expired or is not yet valid: renew it, or pass --insecure", addr)
	case errors.As(err, &invalid):
		return wrap("certificate of %s cannot be used: %v: fix the certificate, or pass --insecure", addr, invalid)
	case errors.As(err, &record):
		what := ""
		if strings.HasPrefix(string(record.RecordHeader[:]), "HTTP/") {
			what = " (it answered in plain HTTP)"
		}
		return wrap("%s does not speak TLS%s: is it a plaintext port? check the port, or use the plain variant (--tls off)", addr, what)
	}

	said := "server said: " + strings.TrimPrefix(remoteAlert(err), "tls: ")
	switch alert := remoteAlert(err); {
	case alert == "tls: protocol version not supported",
		strings.Contains(err.Error(), "server selected unsupported protocol version"):
		if alert == "" {
			said = strings.TrimPrefix(err.Error(), "tls: ")
		}
		switch v.TLS {
		case "1.3":
			return wrap("%s does not speak TLS 1.3 (%s): use --tls 1.2 or auto", addr, said)
		case "1.2":
			return wrap("%s does not speak TLS 1.2 (%s): use --tls 1.3 or auto", addr, said)
		}
		return wrap("%s speaks neither TLS 1.2 nor 1.3 (%s): tlsbench measures only those", addr, said)
	case alert == "tls: handshake failure", alert == "tls: insufficient security":
		if v.Cipher != "" {
			return wrap("%s and tlsbench share no cipher suite for %s (%s): the server does not accept %s with its key; choose another --cipher or leave it out", addr, variantName(v), said, v.Cipher)
		}
		if v.Group != "" {
			// One group offered: a server that has not got it cannot ask
			// for another with a HelloRetryRequest.
			return wrap("%s does not accept the key-exchange group %s (%s): leave it out of --group, or try p256, which every TLS server accepts (PostgreSQL 15 accepts nothing else)", addr, v.Group, said)
		}
		return wrap("%s and tlsbench share no cipher suite for %s (%s): check the server's TLS settings, or try --tls auto", addr, variantName(v), said)
	}
	return err
}

// WrongProtocol reports whether err is a TLS handshake that met a port
// without TLS (a plaintext answer) or a server that does not speak the TLS
// version asked for: the server refusing the variant's kind of connection,
// not failing (see driver.ErrRefused).
func WrongProtocol(err error) bool {
	var record tls.RecordHeaderError
	return errors.As(err, &record) || remoteAlert(err) == "tls: protocol version not supported" ||
		strings.Contains(err.Error(), "server selected unsupported protocol version")
}

// remoteAlert returns the text of the alert the peer sent ("tls: handshake
// failure"), or "". crypto/tls reports a received alert as a net.OpError
// with Op "remote error" around an unexported type, so its text is all
// there is to go by.
func remoteAlert(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" && op.Err != nil {
		return op.Err.Error()
	}
	return ""
}

// FileLimit reports whether err is a full table of open files (EMFILE,
// ENFILE), which Explain phrases with the fix.
func FileLimit(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// raiseNoFile says how to raise the limit of open files, with its value now.
func raiseNoFile() string {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return "raise the limit with ulimit -n, or use fewer connections (-c)"
	}
	return fmt.Sprintf("raise the limit with ulimit -n (now %d), or use fewer connections (-c)", rl.Cur)
}

func certNames(c *x509.Certificate) string {
	if c == nil {
		return "other names"
	}
	var names []string
	names = append(names, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		// Go ignores the common name; say so, since that is the surprise.
		return fmt.Sprintf("no name (its common name %q is not used)", c.Subject.CommonName)
	}
	return strings.Join(names, ", ")
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

func variantName(v plan.Variant) string {
	if v.ID != "" {
		return v.ID
	}
	return "TLS " + v.TLS
}
