// Package httpdrv is the HTTP and HTTPS driver: HTTP/1.1 GET requests
// written and read directly on a netx connection, so that every byte and
// every turn is the request's own (no transport pool in between).
package httpdrv

import (
	"bufio"
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
	PhaseRequest  = "request"  // request written until the first response byte
	PhaseResponse = "response" // first response byte until the body is read
)

type httpDriver struct {
	cfg driver.Config
	req []byte
}

// New returns a driver for cfg. With cfg.Reuse the requests ask for
// keep-alive; otherwise for Connection: close, and the session waits for the
// server to close first, so that TIME_WAIT is held by the server.
func New(cfg driver.Config) (driver.Driver, error) {
	conn := "close"
	if cfg.Reuse {
		conn = "keep-alive"
	}
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: tlsbench\r\nAccept: */*\r\nConnection: %s\r\n\r\n", cfg.Path, cfg.Host, conn)
	return &httpDriver{cfg: cfg, req: []byte(req)}, nil
}

type session struct {
	driver.Link
	d      *httpDriver
	rw     io.ReadWriteCloser
	br     *bufio.Reader
	used   bool
	cancel func() bool
}

func (d *httpDriver) Open(ctx context.Context) (driver.Session, error) {
	dctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	c, err := d.cfg.Dialer.Dial(dctx, d.cfg.Addr)
	if err != nil {
		return nil, &driver.OpError{Phase: netx.PhaseTCP, Err: err}
	}
	s := &session{d: d, Link: driver.Link{Net: c}, rw: c}
	// An interrupted run must not wait for a slow server: cancelling ctx
	// unblocks every read and write at once.
	s.cancel = context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	c.SetDeadline(time.Now().Add(d.cfg.Timeout))
	if d.cfg.TLS != nil {
		tc, err := netx.Handshake(dctx, c, d.cfg.TLS)
		if err != nil {
			s.cancel()
			c.Close()
			return nil, &driver.OpError{Phase: netx.PhaseTLSHandshake, Err: err}
		}
		s.Secure, s.rw = tc, tc
	}
	s.br = bufio.NewReaderSize(s.rw, 32<<10)
	return s, nil
}

// Do sends one GET and reads the whole response. The first request of a
// session is split into the request and response phases.
func (s *session) Do(ctx context.Context) error {
	first := !s.used
	s.used = true
	if first {
		s.Net.Mark(PhaseRequest)
	} else {
		s.Net.SetDeadline(time.Now().Add(s.d.cfg.Timeout))
	}
	if _, err := s.rw.Write(s.d.req); err != nil {
		return &driver.OpError{Phase: PhaseRequest, Err: err}
	}
	resp, err := http.ReadResponse(s.br, nil)
	if err != nil {
		return &driver.OpError{Phase: PhaseRequest, Err: err}
	}
	if first {
		s.Net.MarkAt(s.Net.TurnRead(), PhaseResponse)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return &driver.OpError{Phase: PhaseResponse, Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return &driver.OpError{Phase: PhaseResponse, Err: fmt.Errorf("HTTP status %s", resp.Status)}
	}
	return nil
}

// Close ends the session. After a Connection: close request it first reads
// to the end of the stream, so that the server closes first.
func (s *session) Close() error {
	defer s.cancel()
	if s.used && !s.d.cfg.Reuse {
		s.Net.Mark(netx.PhaseClose)
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
