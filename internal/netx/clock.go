package netx

import (
	"container/heap"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Go's timers wake up to a millisecond late on Linux (the scheduler sleeps
// in epoll_pwait, whose timeout is in milliseconds), which is the whole
// budget of a 1 ms emulated round trip. The emulated link waits on this
// clock instead: one goroutine, locked to its own thread with a timer slack
// of 1 ns, sleeps in ppoll (nanosecond timeouts) until the earliest due
// time and closes the channels that are due. An eventfd interrupts the
// sleep when an earlier due time arrives.
type preciseClock struct {
	once sync.Once
	efd  int // -1: no eventfd, fall back to Go timers
	mu   sync.Mutex
	due  dueHeap
}

var clock = &preciseClock{efd: -1}

// spinWithin is how close to a due time the clock thread stops sleeping and
// spins.
const spinWithin = 50 * time.Microsecond

type dueEntry struct {
	at time.Time
	ch chan struct{}
}

type dueHeap []dueEntry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueEntry)) }
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// At returns a channel that is closed at t, to within tens of
// microseconds when a CPU is free.
func (k *preciseClock) At(t time.Time) <-chan struct{} {
	ch := make(chan struct{})
	d := time.Until(t)
	if d <= 0 {
		close(ch)
		return ch
	}
	k.once.Do(k.start)
	if k.efd < 0 {
		time.AfterFunc(d, func() { close(ch) })
		return ch
	}
	k.mu.Lock()
	heap.Push(&k.due, dueEntry{t, ch})
	first := k.due[0].ch == ch
	k.mu.Unlock()
	if first {
		one := [8]byte{1}
		unix.Write(k.efd, one[:])
	}
	return ch
}

// Sleep waits until t or until done is closed; it reports whether t came.
func (k *preciseClock) Sleep(t time.Time, done <-chan struct{}) bool {
	select {
	case <-k.At(t):
		return true
	case <-done:
		return false
	}
}

func (k *preciseClock) start() {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return
	}
	k.efd = fd
	go k.loop()
}

func (k *preciseClock) loop() {
	// The thread is this goroutine's for good: its timer slack stays 1 ns.
	runtime.LockOSThread()
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	fds := []unix.PollFd{{Fd: int32(k.efd), Events: unix.POLLIN}}
	var buf [8]byte
	var w dueWaiter
	for {
		k.mu.Lock()
		now := time.Now()
		if len(k.due) > 0 {
			now = spinTo(k.due[0].at, now)
		}
		for len(k.due) > 0 && !now.Before(k.due[0].at) {
			close(heap.Pop(&k.due).(dueEntry).ch)
		}
		var next time.Time
		if len(k.due) > 0 {
			next = k.due[0].at
		}
		k.mu.Unlock()
		w.poll(fds, next, now)
		unix.Read(k.efd, buf[:])
	}
}

// dueWaiter sleeps a thread of its own (timer slack 1 ns) until a due time
// or a file descriptor is ready: in ppoll, whose timeout is in
// nanoseconds, aimed lead early, lead learning how late ppoll wakes up;
// spinTo then spins the rest of the way (a few microseconds).
type dueWaiter struct{ lead time.Duration }

// spinTo busy-waits until due if due is within spinWithin of now, and
// returns the time then (now otherwise).
func spinTo(due, now time.Time) time.Time {
	if due.Sub(now) <= spinWithin {
		for ; now.Before(due); now = time.Now() {
		}
	}
	return now
}

// poll waits in ppoll until one of fds is ready or, unless due is zero,
// until a little before due.
func (w *dueWaiter) poll(fds []unix.PollFd, due, now time.Time) (int, error) {
	if w.lead == 0 {
		w.lead = 20 * time.Microsecond
	}
	var ts *unix.Timespec
	var target time.Time
	if !due.IsZero() {
		target = due.Add(-w.lead)
		t := unix.NsecToTimespec(max(0, int64(target.Sub(now))))
		ts = &t
	}
	n, err := unix.Ppoll(fds, ts, nil)
	if woke := time.Now(); ts != nil && woke.After(target) {
		late := woke.Sub(target)
		// Capped at spinWithin: waking earlier would poll in a busy
		// loop instead of sleeping.
		w.lead = min(spinWithin, w.lead+(late-w.lead)/8)
	}
	return n, err
}
