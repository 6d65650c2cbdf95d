// Package httpdrv is the HTTP and HTTPS driver: HTTP/1.1 requests (a GET,
// or the user's method, headers, body and paths) written and read directly
// on a netx connection, so that every byte and every turn is the
// request's own (no transport pool in between).
package httpdrv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tlsbench/tlsbench/internal/driver"
	"github.com/tlsbench/tlsbench/internal/netx"
)

func init() { driver.Register(New, "http", "https", "builtin") }

// Phase names of an HTTP connection after tcp and tls-handshake.
const (
	// PhaseRequest is from the end of the handshake (TLS: as the server's
	// last flight arrived) to the first bytes of the response proper: a
	// TLS 1.3 server's NewSessionTicket before it does not end it.
	PhaseRequest  = "request"
	PhaseResponse = "response" // first response bytes until the body is read
)

type httpDriver struct {
	cfg  driver.Config
	req  reqTemplate
	head *http.Request // what the responses answer: their framing depends on the method
}

// New returns a driver for cfg: a GET of cfg.Path, or the user's request
// (see newRequest). With cfg.Reuse the requests ask for keep-alive;
// otherwise the cfg.PerConn-th (the first if 0) asks for Connection:
// close, those before it for keep-alive, and the session waits for the
// server to close first, so that TIME_WAIT is held by the server.
func New(cfg driver.Config) (driver.Driver, error) {
	req := newRequest(cfg)
	return &httpDriver{cfg: cfg, req: req, head: &http.Request{Method: req.method}}, nil
}

// maxHeaderBytes bounds the status line and headers of a response. Go's
// net/http accepts 1 MiB of request headers (DefaultMaxHeaderBytes) and 10
// MiB of response headers by default; real responses carry well under
// 16 KiB (cookies and security policies included), and the targets
// tlsbench measures answer a GET of a test path. 64 KiB is four times
// that, and small enough that a server that never ends a header line
// fails at once instead of growing memory until the timeout.
const maxHeaderBytes = 64 << 10

var errHeadersTooLarge = fmt.Errorf("the server's response headers exceed %d KiB: is it an HTTP server?", maxHeaderBytes>>10)

// useTLS is what to say to a plaintext client of a TLS port.
const useTLS = "use https://"

type session struct {
	driver.Link
	d       *httpDriver
	rw      io.ReadWriteCloser
	guard   *headerGuard
	br      *bufio.Reader
	used    bool
	broken  bool // an operation failed: the stream is not worth reading on
	done    int  // requests sent
	closing bool // the last said Connection: close
	cancel  func() bool
	buf     []byte // the request, when it changes per operation
}

// headerGuard is the reader under the session's bufio.Reader: while a
// response's headers are read it refuses to read past maxHeaderBytes, and
// it keeps the last read error, which bufio.Reader.ReadLine hides behind a
// partial line (a timeout in mid-status-line would otherwise read as a
// malformed "HTT").
type headerGuard struct {
	r     io.Reader
	limit bool  // headers are being read
	left  int64 // bytes they may still take
	err   error // the last read error
}

func (g *headerGuard) Read(p []byte) (int, error) {
	if g.limit {
		if g.left <= 0 {
			g.err = errHeadersTooLarge
			return 0, g.err
		}
		if int64(len(p)) > g.left {
			p = p[:g.left]
		}
	}
	n, err := g.r.Read(p)
	g.left -= int64(n)
	if err != nil {
		g.err = err
	}
	return n, err
}

// headers starts (on) or ends the bound on the bytes read for a response's
// headers. Bytes that bufio holds already, at most its buffer's size, are
// not counted: the bound is loose by that much, never tighter.
func (g *headerGuard) headers(on bool) {
	g.limit, g.left, g.err = on, maxHeaderBytes, nil
}

func (d *httpDriver) Open(ctx context.Context) (driver.Session, error) {
	dctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	c, err := d.cfg.Dialer.Dial(dctx, d.cfg.Addr)
	if err != nil {
		return nil, &driver.OpError{Phase: netx.PhaseTCP, Err: driver.Explain(err, d.cfg, nil, useTLS)}
	}
	s := &session{d: d, Link: driver.Link{Net: c}, rw: c}
	// An interrupted run must not wait for a slow server: cancelling ctx
	// unblocks every read and write at once.
	s.cancel = c.StopOn(ctx)
	c.SetDeadline(time.Now().Add(d.cfg.Timeout))
	if d.cfg.TLS != nil {
		tc, err := netx.Handshake(dctx, c, d.cfg.TLS)
		if err != nil {
			s.cancel()
			c.Close()
			return nil, &driver.OpError{Phase: netx.PhaseTLSHandshake, Err: s.explain(ctx, err)}
		}
		s.Secure, s.rw = tc, tc
	}
	s.guard = &headerGuard{r: s.rw}
	s.br = bufio.NewReaderSize(s.guard, 32<<10)
	return s, nil
}

// explain makes err one line that names its cause (see driver.Explain); a
// step ended by the cancellation of ctx says so.
func (s *session) explain(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return driver.Explain(err, s.d.cfg, s.Net, useTLS)
}

// Do sends one request and reads the whole response. The first request of a
// session is split into the request and response phases.
func (s *session) Do(ctx context.Context) error {
	err := s.do(ctx)
	if err != nil {
		s.broken = true
	}
	return err
}

func (s *session) do(ctx context.Context) error {
	first := !s.used
	s.used = true
	if first {
		s.Net.MarkAnswer(PhaseRequest)
		if s.Secure != nil {
			// Which read brought the response, not a ticket.
			s.Net.WatchRecords()
		}
	} else {
		s.Net.SetDeadline(time.Now().Add(s.d.cfg.Timeout))
	}
	s.done++
	s.closing = !s.d.cfg.Reuse && s.done >= max(s.d.cfg.PerConn, 1)
	req := s.d.req.next(&s.buf, s.closing)
	if _, err := s.rw.Write(req); err != nil {
		return &driver.OpError{Phase: PhaseRequest, Err: s.explain(ctx, err)}
	}
	s.guard.headers(true)
	if s.d.req.method != http.MethodHead {
		if _, err := s.br.Peek(1); err != nil {
			if s.guard.err != nil {
				err = s.guard.err
			}
			s.guard.headers(false)
			return &driver.OpError{Phase: PhaseRequest, Err: s.explain(ctx, err)}
		}
		if head, length, ok := quickHead(s.br); ok {
			s.guard.headers(false)
			s.br.Discard(head) // buffered: cannot fail
			if first {
				s.responded()
			}
			if _, err := s.br.Discard(int(length)); err != nil {
				return &driver.OpError{Phase: PhaseResponse, Err: s.explain(ctx, err)}
			}
			return nil
		}
	}
	resp, err := http.ReadResponse(s.br, s.d.head)
	readErr := s.guard.err
	s.guard.headers(false)
	if err != nil {
		if readErr != nil {
			// The read error is the cause; what the parser made of
			// the bytes before it is not.
			err = readErr
		}
		return &driver.OpError{Phase: PhaseRequest, Err: s.explain(ctx, err)}
	}
	if first {
		s.responded()
	}
	var head [256]byte
	n := 0
	if !ok(resp.StatusCode) {
		n, _ = io.ReadFull(resp.Body, head[:])
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return &driver.OpError{Phase: PhaseResponse, Err: s.explain(ctx, err)}
	}
	if !ok(resp.StatusCode) {
		for _, said := range tlsPortAnswers {
			if resp.StatusCode == http.StatusBadRequest && bytes.Contains(head[:n], []byte(said)) {
				return &driver.OpError{Phase: PhaseResponse, Err: fmt.Errorf("HTTP status %s (%q): %s is a TLS port: %s", resp.Status, said, s.d.cfg.Addr, useTLS)}
			}
		}
		return &driver.OpError{Phase: PhaseResponse, Err: &statusError{code: resp.StatusCode, status: resp.Status}}
	}
	return nil
}

// responded ends the request phase where the first bytes of the response
// arrived: over TLS the record they came in (RecordRead), else the
// request's answer (TurnRead).
func (s *session) responded() {
	at := s.Net.TurnRead()
	if s.Secure != nil {
		at = s.Net.RecordRead()
		s.Net.StopRecords()
	}
	s.Net.MarkAt(at, PhaseResponse)
}

// tlsPortAnswers are how HTTPS servers answer a plaintext request, with a
// 400: Go's net/http, nginx.
var tlsPortAnswers = []string{
	"Client sent an HTTP request to an HTTPS server",
	"The plain HTTP request was sent to HTTPS port",
}

// Close ends the session, timed as the close phase. After a Connection:
// close request it first reads to the end of the stream, so that the
// server closes first; otherwise (a kept-alive or unused connection, as a
// storm holds) it closes at once (over TLS: close_notify, then the FIN).
func (s *session) Close() error {
	defer s.cancel()
	if !s.broken {
		s.Net.MarkOneWay(netx.PhaseClose)
	}
	if s.closing && !s.broken {
		if _, err := io.Copy(io.Discard, s.br); err != nil && !errors.Is(err, io.EOF) {
			s.rw.Close()
			return &driver.OpError{Phase: netx.PhaseClose, Err: err}
		}
	}
	// The peer may have reset the connection after its last byte (some
	// servers do); that is not a failure of the operation.
	s.rw.Close()
	return nil
}
