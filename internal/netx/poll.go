package netx

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// pollSocket is a TCP socket in Go's network poller that the Conn reads
// and writes itself, with raw system calls (its non-blocking socket's
// read and write never block), waiting for readiness through the socket's
// own RawConn as net's Read and Write do.
//
// Why: net's Read and Write enter the system call through the scheduler
// (entersyscall), which wakes sysmon whenever it sleeps because every P
// was idle. A pool whose workers all wait on the poller makes every P idle
// thousands of times a second, and each first read or write after that
// woke sysmon on another thread: at 4 keep-alive HTTP connections on one
// CPU, 12,000 sysmon wake-ups and 6,000 preemptions of the worker thread a
// second, 12µs of client CPU per request. Raw, 9µs, as wrk's.
type pollSocket struct {
	tc     *net.TCPConn
	rd, wr rawOp
}

// rawOp is one direction of a pollSocket: its RawConn method, which calls
// step until it says done, and the operation in flight. Its mutex keeps
// two concurrent reads (or writes) of one Conn from sharing it; net's own
// fd serializes them as well.
type rawOp struct {
	name string // read or write, for errors
	wait func(step func(fd uintptr) bool) error
	step func(fd uintptr) bool // built once, so that no operation allocates a closure

	mu    sync.Mutex
	p     []byte
	n     int
	errno syscall.Errno
}

// newPollSocket returns nil when tc offers no RawConn.
func newPollSocket(tc *net.TCPConn) *pollSocket {
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	s := &pollSocket{tc: tc}
	s.rd.name, s.rd.wait = "read", rc.Read
	s.wr.name, s.wr.wait = "write", rc.Write
	s.rd.step, s.wr.step = s.rd.read, s.wr.write
	return s
}

// read reads once; false: nothing to read yet, wait for the poller.
func (op *rawOp) read(fd uintptr) bool {
	for {
		n, e := rawRead(int(fd), op.p)
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		if e != 0 {
			op.errno = e
		} else {
			op.n = n
		}
		return true
	}
}

// write writes all of op.p; false: the socket's buffer is full, wait for
// the poller.
func (op *rawOp) write(fd uintptr) bool {
	for op.n < len(op.p) {
		n, e := rawWrite(int(fd), op.p[op.n:])
		switch e {
		case 0:
			op.n += n
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			op.errno = e
			return true
		}
	}
	return true
}

// Read reads as net.TCPConn's Read does, with its errors.
func (s *pollSocket) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := s.do(&s.rd, p)
	if n == 0 && err == nil {
		return 0, io.EOF
	}
	return n, err
}

// Write writes all of p as net.TCPConn's Write does, with its errors.
func (s *pollSocket) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return s.do(&s.wr, p)
}

// do runs one read or write of p, waiting in the poller while the socket
// is not ready.
func (s *pollSocket) do(op *rawOp, p []byte) (int, error) {
	op.mu.Lock()
	defer op.mu.Unlock()
	op.p, op.n, op.errno = p, 0, 0
	err := op.wait(op.step)
	op.p = nil
	switch {
	case err != nil:
		return op.n, s.opError(op.name, err)
	case op.errno != 0:
		return op.n, s.opError(op.name, os.NewSyscallError(op.name, op.errno))
	}
	return op.n, nil
}

// opError gives err the form net.TCPConn's Read and Write give theirs
// (RawConn's say raw-read and raw-write).
func (s *pollSocket) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: s.tc.LocalAddr(), Addr: s.tc.RemoteAddr(), Err: err}
}

// rawRead and rawWrite are read(2) and write(2) without the scheduler's
// entersyscall and exitsyscall, for non-blocking sockets, which never
// block: see pollSocket. p is not empty.
func rawRead(fd int, p []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

func rawWrite(fd int, p []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}
