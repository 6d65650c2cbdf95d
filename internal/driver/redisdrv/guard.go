package redisdrv

import (
	"bytes"
	"fmt"
	"strconv"
)

// Bounds on what a reply may hold (see respGuard).
const (
	// maxLine bounds a line: a status, an error, a length. Redis itself
	// refuses inline commands over 64 KiB (PROTO_INLINE_MAX_SIZE).
	maxLine = 64 << 10
	// minBulk bounds a value for workloads of small values (GET of 100
	// bytes, CLIENT INFO): 1 MiB is ten thousand times what they read.
	// The stream workload's bound is its value's size (at most 64 MiB),
	// known from the rows: nothing larger is read in one piece.
	minBulk = 1 << 20
	// maxItems bounds the elements of an array, set or map: go-redis
	// allocates them when the length arrives. SCAN returns about its
	// COUNT (1000); CONFIG GET a few.
	maxItems = 1 << 16
)

// respTypes are the bytes a RESP2 or RESP3 reply begins with.
var respTypes = []byte("+-:$*_#,(!=%~>|;.")

// respGuard follows the RESP replies the server sends, below go-redis's
// reader, and fails the connection when one breaks a bound: a line (a
// status, an error, a length) longer than maxLine, which go-redis would
// read into memory without end; a value longer than maxBulk, which it
// would allocate as soon as its length arrived ($2147483647 is 2 GiB at
// once); an aggregate of more than maxItems elements. It passes over the
// bytes of values without looking at them.
type respGuard struct {
	addr    string
	maxBulk int64
	skip    int64    // bytes of a value (and its CRLF) still to pass
	line    int64    // bytes of the current line so far
	head    [24]byte // its first bytes: the type and a length
	err     error
}

// scan follows p, the next bytes from the server; once a bound is broken
// it returns the error, ever after.
func (g *respGuard) scan(p []byte) error {
	for len(p) > 0 && g.err == nil {
		if g.skip > 0 {
			n := min(g.skip, int64(len(p)))
			g.skip -= n
			p = p[n:]
			continue
		}
		if g.line == 0 && bytes.IndexByte(respTypes, p[0]) < 0 {
			// go-redis would quote the bytes, garbage and all.
			g.err = fmt.Errorf("the server at %s sent a byte that begins no Redis reply (0x%02x): is it a Redis server?", g.addr, p[0])
			break
		}
		chunk := p
		end := bytes.IndexByte(p, '\n')
		if end >= 0 {
			chunk = p[:end+1]
		}
		if g.line < int64(len(g.head)) {
			copy(g.head[g.line:], chunk)
		}
		g.line += int64(len(chunk))
		p = p[len(chunk):]
		if g.line > maxLine {
			g.err = fmt.Errorf("the server at %s sent a reply line longer than %d KiB: is it a Redis server?", g.addr, maxLine>>10)
			break
		}
		if end >= 0 {
			g.endLine()
		}
	}
	return g.err
}

// endLine checks a complete line: a value's length, or an aggregate's.
func (g *respGuard) endLine() {
	n := g.line
	g.line = 0
	if n < 3 {
		return // go-redis refuses it
	}
	typ := g.head[0]
	var what string
	var limit int64
	switch typ {
	case '$', '!', '=': // bulk string, blob error, verbatim string
		what, limit = "value", g.maxBulk
	case '*', '%', '~', '>', '|': // array, map, set, push, attribute
		what, limit = "aggregate", maxItems
	default:
		return
	}
	if n > int64(len(g.head)) {
		// A length needs no more than 20 digits; more (leading
		// zeros) would hide a large one from this guard.
		g.err = fmt.Errorf("the server at %s sent a %s length of %d bytes: is it a Redis server?", g.addr, what, n)
		return
	}
	size, err := strconv.ParseInt(string(bytes.TrimRight(g.head[1:n], "\r\n")), 10, 64)
	switch {
	case err != nil:
		return // go-redis refuses it
	case what == "value" && size > limit:
		g.err = fmt.Errorf("the server at %s announced a value of %d bytes, more than the %d the workload reads: is it a Redis server? (if so, prepare the data again)", g.addr, size, limit)
	case size > limit:
		g.err = fmt.Errorf("the server at %s announced an aggregate of %d elements, more than the %d tlsbench reads: is it a Redis server?", g.addr, size, limit)
	case what == "value" && size >= 0:
		g.skip = size + 2
	}
}
