package httpdrv

import (
	"bufio"
	"bytes"
)

// quickHead reads the head of the common response without allocating: a
// 2xx whose status line and headers are all in br's buffer already, framed
// by one Content-Length, no Transfer-Encoding, to a method whose response
// has a body. It returns the bytes of head it took up and the body's
// length; ok false means "not that case": nothing was consumed and
// http.ReadResponse reads the response instead (every other status,
// chunked bodies, a head longer than the buffered bytes, a HEAD request).
func quickHead(br *bufio.Reader) (head int, length int64, ok bool) {
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, crlf2)
	if end < 0 {
		return 0, 0, false
	}
	buf = buf[:end+2] // through the last header line's CRLF
	line, rest := cutLine(buf)
	// "HTTP/1.x 2xx ..."
	if len(line) < 12 || !bytes.HasPrefix(line, http11) && !bytes.HasPrefix(line, http10) ||
		line[8] != ' ' || line[9] != '2' || !digit(line[10]) || !digit(line[11]) || len(line) > 12 && line[12] != ' ' {
		return 0, 0, false
	}
	length = -1
	for len(rest) > 0 {
		line, rest = cutLine(rest)
		if line[0] == ' ' || line[0] == '\t' || bytes.IndexByte(line, '\n') >= 0 {
			return 0, 0, false // a folded line or a bare LF: leave it to net/http
		}
		name, value, found := bytes.Cut(line, colon)
		if !found {
			return 0, 0, false
		}
		switch {
		case bytes.EqualFold(name, contentLength):
			if length >= 0 {
				return 0, 0, false // a second one: net/http checks that they agree
			}
			if length = parseLength(bytes.Trim(value, " \t")); length < 0 {
				return 0, 0, false
			}
		case bytes.EqualFold(name, transferEncoding):
			return 0, 0, false
		}
	}
	if length < 0 {
		return 0, 0, false
	}
	return end + 4, length, true
}

var (
	crlf2            = []byte("\r\n\r\n")
	http11           = []byte("HTTP/1.1 ")
	http10           = []byte("HTTP/1.0 ")
	colon            = []byte(":")
	contentLength    = []byte("Content-Length")
	transferEncoding = []byte("Transfer-Encoding")
)

// cutLine splits b after its first CRLF; line is without it.
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.Index(b, crlf2[:2])
	if i < 0 {
		return b, nil
	}
	return b[:i], b[i+2:]
}

func digit(c byte) bool { return '0' <= c && c <= '9' }

// parseLength is a Content-Length's value, -1 if it is not one (empty,
// not decimal, or 18 digits and more).
func parseLength(v []byte) int64 {
	if len(v) == 0 || len(v) > 17 {
		return -1
	}
	var n int64
	for _, c := range v {
		if !digit(c) {
			return -1
		}
		n = n*10 + int64(c-'0')
	}
	return n
}
