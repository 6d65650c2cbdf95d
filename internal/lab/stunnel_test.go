package lab_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
)

// TestStunnel starts the pair in front of an echo server and sends a byte
// through each key's service.
func TestStunnel(t *testing.T) {
	labtest.Slow(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys := []string{"rsa1024", "ecdsa-p256"}
	s, err := lab.StartStunnel(ctx, lab.EchoOn(t, "127.0.0.1"), keys)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	for _, k := range keys {
		addr, err := s.Addr(k)
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte{7}); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 1)
		if _, err := io.ReadFull(c, b); err != nil || b[0] != 7 {
			t.Fatalf("%s: echo through stunnel: %v %v", k, b, err)
		}
		c.Close()
	}
	if _, err := s.Addr("rsa4096"); err == nil {
		t.Error("a key without a service has an address")
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
}
