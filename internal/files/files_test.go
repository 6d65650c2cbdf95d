package files

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(small, []byte("pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.pem")
	if err := os.WriteFile(big, make([]byte, 2048), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.pem")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path, want string // want: the data, or a part of the error
		ok         bool
	}{
		{small, "pem", true},
		{link, "pem", true},
		{big, "larger than", false},
		{"/dev/zero", "character device", false},
		{fifo, "named pipe", false},
		{dir, "is a directory", false},
		{filepath.Join(dir, "missing"), "no such file", false},
	} {
		done := make(chan struct{})
		var data []byte
		var err error
		go func() { data, err = Read(tt.path, "--ca", 1024); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("Read(%s) blocked", tt.path)
		}
		if tt.ok {
			if err != nil || string(data) != tt.want {
				t.Errorf("Read(%s) = %q, %v; want %q", tt.path, data, err, tt.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "--ca") || errors.Is(err, ErrNotFile) == errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Read(%s) error = %v; want one starting --ca and containing %q", tt.path, err, tt.want)
		}
	}
}
