package netx

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// OpenTUN makes the TUN device name (bare IP packets: IFF_TUN, IFF_NO_PI)
// in the network namespace at netns (/run/netns/NAME; "" for this
// thread's own) and returns the file its packets are read from and written
// to (blocking, outside Go's poller: Forward reads it from a thread of its
// own). The device lives as long as the file is open: it is gone with the
// process, however the process ends.
func OpenTUN(netns, name string) (*os.File, error) {
	var fd int
	open := func() error {
		// The device belongs to the namespace of the thread that opens
		// the clone device.
		var err error
		if fd, err = unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0); err != nil {
			return fmt.Errorf("opening /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(name)
		if err == nil {
			ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
			err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
		}
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("TUN device %s: %w", name, err)
		}
		return nil
	}
	var err error
	if netns == "" {
		err = open()
	} else {
		err = InNetns(netns, open)
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// StartInNetns starts cmd with its network the namespace's at netns
// (/run/netns/NAME), as `ip netns exec` would, without a process in
// between: cmd is forked from a thread that has entered the namespace,
// and its sockets, and those of its children, are made there.
func StartInNetns(netns string, cmd *exec.Cmd) error {
	return InNetns(netns, cmd.Start)
}

// ForwardQueue is how many packets each way of a Forwarder holds at most:
// at 44 ms of RTT, 8,192 full-size packets in 22 ms are 4.5 Gbit/s, more
// than these machines move. A packet read while its way is full is
// dropped, and counted.
const ForwardQueue = 8192

// Forwarder carries IP packets between two TUN devices, each way holding
// every packet RTT/2 after it was read before writing it to the other
// device: a link whose round-trip time the kernels' TCP sees, its
// handshake included. Each way is a queue in arrival order (no
// reordering), bounded by ForwardQueue (no loss but the overflow, which
// Stats counts), and a thread of its own that sleeps in ppoll until a
// packet comes or the first queued one is due, as the dialer's precise
// clock does (dueWaiter): no goroutine hand-off between the kernel's
// packet and its time stamp, or between its due time and its write.
type Forwarder struct {
	half atomic.Int64 // RTT/2, ns
	ways [2]*way
	stop int // an eventfd: Close ends both threads' ppoll
	wg   sync.WaitGroup
	once sync.Once
}

// way is one direction of a Forwarder.
type way struct {
	from, to *os.File

	forwarded, dropped, failed atomic.Int64
	realtime                   atomic.Bool // its thread runs at SCHED_FIFO
	mu                         sync.Mutex
	err                        error // why the way stopped, other than Close
}

// packet is one IP packet and when it is due at the other device.
type packet struct {
	data []byte
	due  time.Time
}

// Forward starts forwarding between the TUN files a and b (see OpenTUN)
// at rtt; it owns both: Close closes them, which removes the devices.
func Forward(a, b *os.File, rtt time.Duration) (*Forwarder, error) {
	stop, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("the forwarder's eventfd: %w", err)
	}
	f := &Forwarder{stop: stop}
	f.SetRTT(rtt)
	f.ways[0] = &way{from: a, to: b}
	f.ways[1] = &way{from: b, to: a}
	for _, w := range f.ways {
		// Reads must not block the thread: it also writes what is due.
		if err := unix.SetNonblock(int(w.from.Fd()), true); err != nil {
			unix.Close(stop)
			return nil, fmt.Errorf("%s: %w", w.from.Name(), err)
		}
	}
	for _, w := range f.ways {
		f.wg.Add(1)
		go f.run(w)
	}
	return f, nil
}

// SetRTT sets the round-trip time of the packets read from now on; those
// queued keep theirs, and no packet overtakes one read before it.
func (f *Forwarder) SetRTT(rtt time.Duration) { f.half.Store(int64(rtt / 2)) }

// RTT is the round-trip time the forwarder adds.
func (f *Forwarder) RTT() time.Duration { return 2 * time.Duration(f.half.Load()) }

// WayStats is what one way of a Forwarder did: packets written to the
// other device, dropped because the way's queue was full, and refused by
// the other device (down, say); Err is why the way stopped, nil while it
// runs or after Close.
type WayStats struct {
	Forwarded int64 `json:"forwarded"`
	Dropped   int64 `json:"dropped"`
	Failed    int64 `json:"failed"`
	// RealTime says the way's thread runs at real-time priority
	// (SCHED_FIFO 1), as root may.
	RealTime bool   `json:"realtime"`
	Err      string `json:"error,omitempty"`
}

// Stats is what each way did so far: [0] from a to b, [1] from b to a.
func (f *Forwarder) Stats() [2]WayStats {
	var out [2]WayStats
	for i, w := range f.ways {
		out[i] = WayStats{Forwarded: w.forwarded.Load(), Dropped: w.dropped.Load(), Failed: w.failed.Load(), RealTime: w.realtime.Load()}
		w.mu.Lock()
		if w.err != nil {
			out[i].Err = w.err.Error()
		}
		w.mu.Unlock()
	}
	return out
}

// Close stops forwarding, drops the packets still queued and closes both
// devices; safe to call more than once.
func (f *Forwarder) Close() error {
	var errs []error
	f.once.Do(func() {
		one := [8]byte{1}
		unix.Write(f.stop, one[:])
		f.wg.Wait()
		for _, w := range f.ways {
			errs = append(errs, w.from.Close())
		}
		unix.Close(f.stop)
	})
	return errors.Join(errs...)
}

// run is one way's thread: it writes every queued packet that is due,
// then sleeps until the next is due or packets come, and queues those
// stamped with their due time.
func (f *Forwarder) run(w *way) {
	defer f.wg.Done()
	// The thread is this goroutine's for good (it ends with it): its timer
	// slack stays 1 ns.
	runtime.LockOSThread()
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	// Real-time priority, where the kernel grants it (root): on a loaded
	// machine a thread of normal priority waits for a CPU before it
	// stamps or writes a packet (0.1-0.4 ms a round trip at load 13),
	// whereas the kernel's netem would run at once, in softirq.
	if unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1}, 0) == nil {
		w.realtime.Store(true)
	}
	from, to := int(w.from.Fd()), int(w.to.Fd())
	fds := []unix.PollFd{{Fd: int32(from), Events: unix.POLLIN}, {Fd: int32(f.stop), Events: unix.POLLIN}}
	buf := make([]byte, 1<<16) // the largest IP packet
	var q []packet             // in arrival order, so in due order
	var dw dueWaiter
	for {
		now := time.Now()
		if len(q) > 0 {
			now = spinTo(q[0].due, now)
		}
		for len(q) > 0 && !now.Before(q[0].due) {
			if _, err := unix.Write(to, q[0].data); err != nil {
				w.failed.Add(1)
			} else {
				w.forwarded.Add(1)
			}
			q[0] = packet{}
			q = q[1:]
		}
		var next time.Time
		if len(q) > 0 {
			next = q[0].due
		}
		if _, err := dw.poll(fds, next, now); err != nil && err != unix.EINTR {
			w.fail(fmt.Errorf("waiting for %s: %w", w.from.Name(), err))
			return
		}
		if fds[1].Revents != 0 {
			return // Close
		}
		if fds[0].Revents == 0 {
			continue
		}
		// What the device holds now, up to a bound, so that a flood does
		// not keep due packets waiting.
		for range 256 {
			n, err := unix.Read(from, buf)
			if err == unix.EAGAIN || err == unix.EINTR {
				break
			}
			if err != nil {
				w.fail(fmt.Errorf("reading %s: %w", w.from.Name(), err))
				return
			}
			if len(q) >= ForwardQueue {
				w.dropped.Add(1)
				continue
			}
			q = append(q, packet{data: slices.Clone(buf[:n]), due: time.Now().Add(time.Duration(f.half.Load()))})
		}
	}
}

// fail records why the way stopped.
func (w *way) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

// ServeForward forwards between the TUN files a and b (Forward), from a
// process of its own: the forwarder's threads wait in blocking system
// calls, which hold a Go scheduler's P until its monitor takes it back (up
// to 10 ms), so in the client's process they would hold up the client's
// goroutines. The process is told what to do by lines on in, each
// answered by a line on out: "rtt NANOSECONDS" sets the RTT ("ok"),
// "stats" asks for Stats (a JSON line); the end of in, or ctx, stops it.
// A line it cannot do is answered "error ...".
func ServeForward(ctx context.Context, a, b *os.File, in io.Reader, out io.Writer) error {
	f, err := Forward(a, b, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	for {
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			return ctx.Err()
		case line, ok = <-lines:
		}
		if !ok {
			return nil
		}
		reply := "ok"
		switch cmd, arg, _ := strings.Cut(line, " "); cmd {
		case "rtt":
			ns, err := strconv.ParseInt(arg, 10, 64)
			if err != nil || ns < 0 {
				reply = fmt.Sprintf("error rtt %q is not a duration in nanoseconds", arg)
				break
			}
			f.SetRTT(time.Duration(ns))
		case "stats":
			b, _ := json.Marshal(f.Stats())
			reply = string(b)
		default:
			reply = fmt.Sprintf("error unknown command %q: use rtt or stats", cmd)
		}
		if _, err := fmt.Fprintln(out, reply); err != nil {
			return err
		}
	}
}
