package httpdrv

import (
	"bufio"
	"strings"
	"testing"
)

// TestQuickHead: the allocation-free path takes the plain 2xx with one
// Content-Length and leaves every other response, untouched, to
// net/http.
func TestQuickHead(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
		length   int64
	}{
		{"200", "HTTP/1.1 200 OK\r\nContent-Length: 1024\r\nDate: x\r\n\r\nbody", true, 1024},
		{"lower-case name, spaces", "HTTP/1.1 204 No Content\r\ncontent-length:  0 \r\n\r\n", true, 0},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello", true, 5},
		{"no reason", "HTTP/1.1 200\r\nContent-Length: 5\r\n\r\nhello", true, 5},
		{"404", "HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nhello", false, 0},
		{"301", "HTTP/1.1 301 Moved\r\nContent-Length: 0\r\n\r\n", false, 0},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", false, 0},
		{"no length", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello", false, 0},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", false, 0},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\nhello", false, 0},
		{"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false, 0},
		{"folded", "HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n", false, 0},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", false, 0},
		{"head incomplete", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", false, 0},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", false, 0},
		{"status 2000", "HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tc.in), 4096)
			br.Peek(1)
			head, length, ok := quickHead(br)
			if ok != tc.ok || length != tc.length && ok {
				t.Fatalf("quickHead = %d, %d, %v; want ok %v, length %d", head, length, ok, tc.ok, tc.length)
			}
			if !ok {
				if br.Buffered() != len(tc.in) {
					t.Errorf("consumed %d bytes of a response it left to net/http", len(tc.in)-br.Buffered())
				}
				return
			}
			if want := strings.Index(tc.in, "\r\n\r\n") + 4; head != want {
				t.Errorf("head = %d bytes, want %d", head, want)
			}
		})
	}
}
