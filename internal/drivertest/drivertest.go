// Package drivertest helps the drivers' tests: Conformance, the checks
// every driver must pass against its real server, described by an Engine;
// configs of lab servers (LabConfig); a Proxy that stalls a real server;
// and hostile servers: tiny listeners on 127.0.0.1 that misbehave in one
// way each, and a measure of the memory a step takes while they do.
package drivertest

import (
	"context"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Listen serves every connection to a new 127.0.0.1 port with serve, each
// on its own goroutine, until t ends; then it closes the listener and the
// connections and waits for serve to return, which it must once its
// connection is closed (serve loops are bounded by their writes failing).
func Listen(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	return listen(t, net.ListenConfig{}, serve)
}

// listen is Listen with the listener's socket made by lc.
func listen(t testing.TB, lc net.ListenConfig, serve func(net.Conn)) string {
	t.Helper()
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				serve(c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// Endless writes chunk to c until a write fails (the client closed the
// connection) or limit bytes are written, pausing pause between writes.
func Endless(c net.Conn, chunk []byte, pause time.Duration, limit int64) {
	for n := int64(0); n < limit; n += int64(len(chunk)) {
		c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(chunk); err != nil {
			return
		}
		if pause > 0 {
			time.Sleep(pause)
		}
	}
}

// Drain reads from c until it fails, so that the client's writes never
// block.
func Drain(c net.Conn) {
	b := make([]byte, 4096)
	for {
		if _, err := c.Read(b); err != nil {
			return
		}
	}
}

// HeapGrowth runs f and returns the largest growth of the live heap
// (HeapAlloc) over its value before f, sampled every 5 ms while f runs and
// once after.
func HeapGrowth(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	<-sampled
	runtime.ReadMemStats(&ms)
	peak = max(peak, ms.HeapAlloc)
	return peak - base
}
