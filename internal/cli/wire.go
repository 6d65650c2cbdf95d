package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/wire"
)

// wireFlags are the wire command's flags.
type wireFlags struct {
	ports   []int
	output  string
	capture string // IFACE: capture live while a command runs
	keep    string // --keep-capture FILE
	snapLen int
	method  string
}

const wireShort = "Decompose any client's connections from a packet capture: phases, round trips, what TLS negotiated"

func newWireCmd(argv []string, stdout, stderr io.Writer) *cobra.Command {
	var f wireFlags
	cmd := &cobra.Command{
		Use:   "wire CAPTURE.pcap | --capture IFACE --port P -- COMMAND [ARGS...]",
		Short: wireShort,
		Long: wireShort + `.

tlsbench wire CAPTURE.pcap reads a capture (tcpdump's pcap or pcapng) and
decodes every TCP connection on the --port(s) given (default: every port it
can decode): the TCP handshake, the protocol's cleartext preamble (PostgreSQL's
SSLRequest, MySQL's greeting and SSL request), the TLS handshake (what the
ClientHello offered, what the server chose, a HelloRetryRequest, resumption),
then the flights after it and the close, with the same phase names and
round-trip rule as tlsbench's own runs. Connections that negotiated alike are
one variant of a result that report, compare and the HTML page read as any
other.

tlsbench wire --capture IFACE --port P -- COMMAND ARGS... captures on IFACE
(through tcpdump when installed, else a packet socket of its own; both need
root or CAP_NET_RAW) while it runs COMMAND — pgbench -C, curl, psql, your own
application — and decodes what it captured when the command ends. The
command's output passes through; its exit status is reported; its command line
is stored with secrets removed.

  tlsbench wire capture.pcap --port 5432
  tlsbench wire --capture lo --port 5432 -- pgbench -C -S -t 200 "host=127.0.0.1 sslmode=require"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			file, command, err := f.args(cmd, args)
			if err != nil {
				return err
			}
			return wireRun(cmd.Context(), f, file, command, argv, stdout, stderr)
		},
	}
	fs := cmd.Flags()
	fs.IntSliceVar(&f.ports, "port", nil, "server TCP ports whose connections are decoded, repeatable (required with --capture)")
	fs.StringVarP(&f.output, "output", "o", "", "result file (default tlsbench-YYYYMMDD-HHMMSS.json)")
	fs.StringVar(&f.capture, "capture", "", "capture live on this interface (e.g. lo) while the COMMAND after -- runs")
	fs.StringVar(&f.keep, "keep-capture", "", "with --capture: keep the capture in this pcap file (default: removed once decoded)")
	fs.IntVar(&f.snapLen, "snaplen", wire.DefaultSnapLen, "with --capture: bytes kept of each packet (enough for a ClientHello; the decoder needs only the sizes of bulk data)")
	fs.StringVar(&f.method, "capture-with", "auto", "with --capture: tcpdump, af_packet (a packet socket of tlsbench's own), or auto (tcpdump when installed)")
	return cmd
}

// args checks the command line: a capture file, or --capture with a
// command after --.
func (f *wireFlags) args(cmd *cobra.Command, args []string) (file string, command []string, err error) {
	before := args
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		before, command = args[:dash], args[dash:]
	}
	for _, p := range f.ports {
		if p <= 0 || p > 65535 {
			return "", nil, usageError{fmt.Errorf("--port: %d is out of range: give the server's TCP port (1 to 65535)", p)}
		}
	}
	if f.capture == "" {
		for _, name := range []string{"keep-capture", "snaplen", "capture-with"} {
			if cmd.Flags().Changed(name) {
				return "", nil, usageError{fmt.Errorf("--%s applies to a live capture: add --capture IFACE and the command to run after --", name)}
			}
		}
		switch {
		case len(command) > 0:
			return "", nil, usageError{fmt.Errorf("wire: a command after -- runs under a live capture: add --capture IFACE (e.g. --capture lo)")}
		case len(before) != 1:
			return "", nil, usageError{fmt.Errorf("wire takes one capture file (pcap or pcapng), or --capture IFACE --port P -- COMMAND, got %d arguments", len(before))}
		case strings.TrimSpace(before[0]) == "":
			return "", nil, usageError{fmt.Errorf("wire: the capture file given is empty (an unset variable?)")}
		}
		return before[0], nil, nil
	}
	switch {
	case len(before) > 0:
		return "", nil, usageError{fmt.Errorf("wire --capture takes no capture file (%s): it writes one; to keep it give --keep-capture FILE", before[0])}
	case len(command) == 0:
		return "", nil, usageError{fmt.Errorf("wire --capture %s: no command to run: give it after --, e.g. tlsbench wire --capture %s --port 5432 -- pgbench -C -S -t 100", f.capture, f.capture)}
	case len(f.ports) == 0:
		return "", nil, usageError{fmt.Errorf("wire --capture: no --port: give the server's TCP port, e.g. --port 5432")}
	case f.snapLen < 96:
		return "", nil, usageError{fmt.Errorf("--snaplen: %d bytes keep no TCP header: give at least 96 (default %d)", f.snapLen, wire.DefaultSnapLen)}
	}
	switch f.method {
	case "auto":
		f.method = wire.MethodAuto
	case wire.MethodTcpdump, wire.MethodAFPacket:
	default:
		return "", nil, usageError{fmt.Errorf("--capture-with: unknown method %q: use tcpdump, af_packet or auto", f.method)}
	}
	return "", command, nil
}

// wireRun decodes a capture file, or captures while command runs and
// decodes that, and saves and prints the result as every run does.
func wireRun(ctx context.Context, f wireFlags, file string, command []string, argv []string, stdout, stderr io.Writer) error {
	if file != "" {
		if err := checkCaptureFile(file); err != nil {
			return err
		}
	}
	var bin string
	if len(command) > 0 {
		var err error
		if bin, err = exec.LookPath(command[0]); err != nil {
			// PGPASSWORD=... meant for env is no program, and no name to print.
			return usageError{fmt.Errorf("wire: cannot start %s: %v", plan.RedactArgs(command[:1])[0], unwrapExec(err))}
		}
	}
	if f.keep != "" {
		if err := result.CheckOutput(f.keep); err != nil {
			return usageError{fmt.Errorf("--keep-capture: %w", err)}
		}
	}
	out, err := openResultFile(f.output)
	if err != nil {
		return err
	}
	defer out.discard()
	res := newResult(argv)
	var lc *liveCapture
	if len(command) > 0 {
		if lc, err = captureCommand(ctx, f, bin, command, stdout, stderr); err != nil {
			return err
		}
		defer lc.Remove()
		file = lc.File
	}
	// A live capture is decoded even when a Ctrl-C ended its command: what
	// was captured is kept, and a second Ctrl-C ends tlsbench at once.
	dctx := ctx
	if lc != nil {
		dctx = context.WithoutCancel(ctx)
	}
	c, err := wire.ReadFile(dctx, file, wire.Options{Ports: f.ports})
	switch {
	case err != nil && dctx.Err() != nil:
		return errInterrupted
	case err != nil:
		return wireFileError(file, lc, err)
	}
	decoded := c.Result()
	switch {
	case len(decoded.Trials) > 0:
	case ctx.Err() != nil || lc != nil && lc.interrupted:
		return errInterrupted
	default:
		return wireFileError(file, lc, errNoConnections(decoded.Capture, f.ports))
	}
	decoded.Tool, decoded.Env, decoded.Command, decoded.Started = res.Tool, res.Env, res.Command, res.Started
	if lc != nil {
		lc.Describe(decoded)
	}
	decoded.End(ctx, nil)
	where, pageErr, err := out.save(decoded, stdout, stderr)
	switch {
	case err != nil:
		return err
	case ctx.Err() != nil || lc != nil && lc.interrupted:
		return errInterrupted
	case lc != nil && lc.runErr != nil:
		return fmt.Errorf("%s: %v (its connections are decoded in %s)", filepath.Base(command[0]), lc.runErr, where)
	}
	return pageErr
}

// checkCaptureFile says in one line what is wrong with a capture file
// given: missing, a directory, empty.
func checkCaptureFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return usageError{fmt.Errorf("%s: no such capture file: give a pcap or pcapng file (tcpdump -w FILE), or capture live with --capture IFACE -- COMMAND", path)}
	case err != nil:
		return usageError{fmt.Errorf("capture file %w", err)}
	case !fi.Mode().IsRegular():
		return usageError{fmt.Errorf("capture file %s is not a regular file: give a pcap or pcapng file (tcpdump -w FILE)", path)}
	case fi.Size() == 0:
		return fmt.Errorf("capture file %s is empty: was the capture stopped before it started?", path)
	}
	return nil
}

// errNoConnections says that a capture held no connection to decode, and
// what it held instead.
func errNoConnections(c *result.Capture, ports []int) error {
	var packets, other int64
	if c != nil {
		packets, other = c.Packets, c.Unseen["other-ports"]
	}
	if len(ports) == 0 {
		return fmt.Errorf("no TCP connection tlsbench can decode among its %d packets: is it a capture of a client's connections to a server?", packets)
	}
	ps := make([]string, len(ports))
	for i, p := range ports {
		ps[i] = strconv.Itoa(p)
	}
	if c != nil && packets > other {
		// Packets on the port, but no connection the decoder could read
		// whole: say what it saw instead.
		var kinds []string
		for k, n := range c.Unseen {
			if k != "other-ports" {
				kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
			}
		}
		sort.Strings(kinds)
		return fmt.Errorf("no whole TCP connection on port %s among its %d packets (%s): capture from before the first connection opens until the last one closes", strings.Join(ps, ", "), packets, strings.Join(kinds, ", "))
	}
	return fmt.Errorf("no TCP connection on port %s among its %d packets (%d on other ports): give the server's port with --port, or leave --port out to decode every port", strings.Join(ps, ", "), packets, other)
}

// wireFileError names the capture an error is about: the file given, or
// the live capture kept (or not).
func wireFileError(file string, lc *liveCapture, err error) error {
	var de *wire.DamagedError
	if errors.As(err, &de) {
		fix := "it holds no packet before that: capture again"
		if de.Packets > 0 {
			fix = fmt.Sprintf("keep the %d packets before it with editcap -r %s OUT.pcap 1-%d, or capture again", de.Packets, file, de.Packets)
		}
		err = fmt.Errorf("%w: %s", err, fix)
	}
	if lc == nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return fmt.Errorf("the capture on %s: %w%s", lc.Interface, err, lc.kept())
}

// liveCapture is a capture taken while a command ran, and whether a
// Ctrl-C ended the command.
type liveCapture struct {
	*wire.CommandCapture
	runErr      error // how the command failed: exit status, signal
	interrupted bool  // a Ctrl-C (SIGINT) ended the command
}

// captureCommand captures on f.capture while command runs in a process
// group of its own, its output passed through; a command that ends badly
// is recorded, not returned.
func captureCommand(ctx context.Context, f wireFlags, bin string, command []string, stdout, stderr io.Writer) (*liveCapture, error) {
	run := func(ctx context.Context) (wire.Outcome, error) {
		cmd := exec.Command(bin, command[1:]...)
		cmd.Args[0] = command[0]
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
		start := time.Now()
		g, err := startGroup(cmd)
		if err != nil {
			return wire.Outcome{}, usageError{fmt.Errorf("wire: cannot start %s: %v", command[0], unwrapExec(err))}
		}
		o := wire.Outcome{Err: g.wait(ctx)}
		o.Elapsed, o.Exit = time.Since(start), cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			o.Signal = ws.Signal()
		}
		return o, nil
	}
	c, err := wire.CaptureCommand(ctx, wire.LiveOptions{Interface: f.capture, Ports: f.ports, File: f.keep, SnapLen: f.snapLen, Method: f.method}, command, run)
	var se *wire.StartError
	var pe *wire.PermissionError
	switch {
	case err == nil:
	case errors.As(err, &se) && ctx.Err() != nil:
		return nil, errInterrupted
	case errors.As(err, &se) && !errors.As(err, &pe):
		return nil, usageError{fmt.Errorf("--capture %s: %w", f.capture, se.Err)}
	default:
		return nil, err
	}
	lc := &liveCapture{CommandCapture: c, runErr: c.Err, interrupted: c.Signal == syscall.SIGINT}
	if ctx.Err() != nil || lc.interrupted {
		lc.runErr = nil // interrupted: the run says so itself
	}
	if c.Signal != 0 {
		fmt.Fprintf(stderr, "command: %s ended by %v after %.2f s\n", filepath.Base(command[0]), c.Signal, c.Elapsed.Seconds())
	} else {
		fmt.Fprintf(stderr, "command: %s exited with status %d after %.2f s\n", filepath.Base(command[0]), c.Exit, c.Elapsed.Seconds())
	}
	return lc, nil
}

// kept says where a live capture that failed to decode is, for its error.
func (lc *liveCapture) kept() string {
	if lc.Keep {
		return " (the capture is in " + lc.File + ")"
	}
	return " (keep the capture with --keep-capture FILE to look at it)"
}

// unwrapExec drops exec's repetition of the command's name.
func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
