// Package mongodrv is the MongoDB driver: the official Go driver over tlsbench's dialer, one operation connection per session, running YCSB-shaped reads of a usertable it can prepare.
package mongodrv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/files"
	"github.com/tlsbench/tlsbench/internal/netx"
	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/tlsx"
)

func init() { driver.Register(New, "mongodb") }

// Phase names of a MongoDB connection besides netx's tcp, tls-handshake and
// close.
const (
	// PhaseHello is the driver's handshake: hello (OP_QUERY isMaster with
	// helloOk), which carries the first SCRAM message when the URL has a
	// user (speculative authentication).
	PhaseHello = "hello"
	// PhaseAuth is the rest of SCRAM (saslContinue), from the first
	// authentication command the driver sends.
	PhaseAuth = "auth"
	// PhaseQuery is the first operation.
	PhaseQuery = driver.PhaseQuery
)

// The data the workloads read: YCSB's database and collection names.
const (
	Database   = "ycsb"
	Collection = "usertable"
)

// useTLS is what to say to a plaintext client of a TLS port.
const useTLS = "use tls=true"

type mongoDriver struct {
	cfg      driver.Config
	base     *options.ClientOptions // from the URL; every client starts from it
	tls      *tls.Config            // nil for plain
	password string                 // to keep out of messages
	workload workload
	x509     bool // authMechanism=MONGODB-X509
}

// New returns a driver for cfg. The URL gives the user, password (or
// passfile=PATH), authSource, authMechanism, appName, compressors and read
// preference, as the driver parses them; tlsbench sets what makes a
// session one measured connection (direct, pool of one, polling monitor, no
// retries) and the TLS of the variant, which it runs itself: the URL's TLS
// options chose the variants already, except tlsAllowInvalidHostnames=true,
// which skips the name check and keeps the rest.
func New(cfg driver.Config) (driver.Driver, error) {
	if cfg.URL == nil {
		return nil, errors.New("mongodb: no URL to connect with")
	}
	w, err := newWorkload(cfg.Workload)
	if err != nil {
		return nil, err
	}
	d := &mongoDriver{cfg: cfg, tls: cfg.TLS, workload: w}
	u := *cfg.URL
	q := u.Query()
	if u.User != nil {
		d.password, _ = u.User.Password()
	}
	if err := dropFileOptions(q); err != nil {
		return nil, err
	}
	u.RawQuery = q.Encode()
	if path := q.Get("passfile"); path != "" {
		if d.password == "" {
			data, err := files.Read(path, "passfile", files.MaxPEM)
			if err != nil {
				return nil, fmt.Errorf("mongodb: reading the password file: %w", err)
			}
			d.password = strings.TrimRight(string(data), "\r\n")
			u.User = url.UserPassword(u.User.Username(), d.password)
		}
		q.Del("passfile")
		u.RawQuery = q.Encode()
	}
	base := options.Client().ApplyURI(u.String())
	if err := base.Validate(); err != nil {
		return nil, fmt.Errorf("mongodb: cannot use %s: %s", plan.Redact(cfg.URL.String()), d.redact(err.Error()))
	}
	if d.tls != nil && !d.tls.InsecureSkipVerify && uriBool(q, "tlsAllowInvalidHostnames") {
		d.tls = tlsx.SkipHostname(d.tls)
	}
	base.TLSConfig = nil // the dialer runs TLS, as a phase of its own
	base.SetHosts([]string{cfg.Addr}).
		SetDirect(true).
		SetServerMonitoringMode(options.ServerMonitoringModePoll).
		SetRetryReads(false).
		SetRetryWrites(false).
		SetMaxAdaptiveRetries(0).
		SetConnectTimeout(cfg.Timeout).
		SetServerSelectionTimeout(cfg.Timeout)
	base.ReplicaSet = nil // a direct connection to whichever member the URL names
	if base.AppName == nil {
		base.SetAppName("tlsbench")
	}
	d.x509 = base.Auth != nil && strings.EqualFold(base.Auth.AuthMechanism, "MONGODB-X509")
	d.base = base
	return d, nil
}

// dropFileOptions removes from q the URI options that name a CA file or a
// client certificate, which the official driver would read whole with
// os.ReadFile (tlsCAFile=/dev/zero reads until memory runs out): the caller
// loaded them into cfg.TLS, with a bound (plan and tlsx), and the dialer
// runs TLS. MONGODB-X509 then takes the user from the certificate on the
// server's side, as MongoDB 3.4 and later do.
func dropFileOptions(q url.Values) error {
	for k := range q {
		switch strings.ToLower(k) {
		case "tlscafile", "sslcertificateauthorityfile", "tlscertificatekeyfile", "sslclientcertificatekeyfile":
			q.Del(k)
		case "tlscertificatefile", "tlsprivatekeyfile":
			return fmt.Errorf("mongodb: %s: give the certificate and its key in one PEM file as tlsCertificateKeyFile=", k)
		}
	}
	return nil
}

// uriBool reads a boolean URI option, case-insensitively by name.
func uriBool(q url.Values, name string) bool {
	for k, vs := range q {
		if strings.EqualFold(k, name) {
			return strings.EqualFold(vs[len(vs)-1], "true")
		}
	}
	return false
}

// redact removes the password from a message of the driver's.
func (d *mongoDriver) redact(msg string) string {
	if d.password == "" {
		return msg
	}
	return strings.ReplaceAll(msg, d.password, "xxxxx")
}

// clean returns err, or its text without the password if it holds it.
func (d *mongoDriver) clean(err error) error {
	if msg := err.Error(); d.redact(msg) != msg {
		return errors.New(d.redact(msg))
	}
	return err
}

// Statements is one: every operation is one command (a stream's getMores
// aside).
func (d *mongoDriver) Statements() int { return 1 }

type session struct {
	driver.Link
	d    *mongoDriver
	c    *client
	coll *mongo.Collection
}

// Open starts a client and waits until its operation connection is ready:
// tcp, TLS, hello and auth are phases of that connection. The client's
// monitor connection is dialed first (the driver selects no server before
// its first heartbeat) and is not the session's: it is opened and closed
// with it, but its time and round trips are not in the session's phases.
func (d *mongoDriver) Open(ctx context.Context) (driver.Session, error) {
	c, err := d.newClient(ctx, true)
	if err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx); err != nil {
		c.close()
		return nil, err
	}
	op, _ := c.links()
	s := &session{d: d, c: c, coll: c.mongo.Database(d.workload.db).Collection(d.workload.coll)}
	s.Net, s.Secure = op.net, op.secure
	return s, nil
}

// Do runs one operation of the workload. The query phase started when the
// connection's handshake ended.
func (s *session) Do(ctx context.Context) error {
	octx, cancel := context.WithTimeout(ctx, s.d.cfg.Timeout)
	defer cancel()
	if err := s.d.workload.run(octx, s.coll); err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return &driver.OpError{Phase: PhaseQuery, Err: driver.Explain(s.d.clean(err), s.d.cfg, s.Net, useTLS)}
	}
	return nil
}

// Close disconnects the client, as the close phase: the driver sends
// endSessions for the implicit session its commands used (one round trip),
// then closes its connections.
func (s *session) Close() error {
	s.Net.Mark(netx.PhaseClose)
	if err := s.c.close(); err != nil {
		return &driver.OpError{Phase: netx.PhaseClose, Err: err}
	}
	return nil
}
