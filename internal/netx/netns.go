package netx

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// InNetns runs f on an OS thread that has entered the network namespace
// at path (/run/netns/NAME): a socket f makes belongs to that namespace
// for good, whatever thread uses it later. The thread goes back to its own
// namespace after; if it cannot, it is never unlocked, so the runtime
// ends it with the goroutine instead of reusing it. (Threads the runtime
// starts meanwhile come from its template thread, not this one.)
func InNetns(path string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer own.Close()
		target, err := os.Open(path)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("network namespace %s: %w", path, err)
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering network namespace %s: %w", path, err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("leaving network namespace %s: %w", path, err) // the thread dies locked
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
