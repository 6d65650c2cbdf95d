package mongodrv

import (
	"bytes"
	"encoding/binary"
	"net"

	"github.com/tlsbench/tlsbench/internal/netx"
)

// Wire protocol op codes whose body starts with a command document.
const (
	opQuery = 2004 // OP_QUERY: the legacy hello of a connection's handshake
	opMsg   = 2013 // OP_MSG: every other command
)

// commandName returns the name of the command a client wire message
// carries: the first key of its command document ("hello", "saslStart",
// "find"), or "" if msg is not one whole command message. The driver writes
// each message with one Write, so msg is what one Write got.
func commandName(msg []byte) string {
	if len(msg) < 16 {
		return ""
	}
	body := msg[16:]
	switch binary.LittleEndian.Uint32(msg[12:16]) {
	case opMsg:
		// flagBits, then a section of kind 0: the command document.
		if len(body) < 5 || body[4] != 0 {
			return ""
		}
		body = body[5:]
	case opQuery:
		// flags, full collection name (a C string), numberToSkip,
		// numberToReturn, then the query: the command document.
		if len(body) < 4 {
			return ""
		}
		end := bytes.IndexByte(body[4:], 0)
		if end < 0 || len(body) < 4+end+1+8 {
			return ""
		}
		body = body[4+end+1+8:]
	default:
		return ""
	}
	// A document: int32 length, then elements of a type byte and a C-string
	// name.
	if len(body) < 6 {
		return ""
	}
	name := body[5:]
	end := bytes.IndexByte(name, 0)
	if end < 0 {
		return ""
	}
	return string(name[:end])
}

// authCommands start the auth phase when the driver sends them; with
// speculative authentication (MongoDB 4.4+) the first SCRAM message rides in
// the hello, and the auth phase starts with saslContinue.
var authCommands = map[string]bool{"saslStart": true, "saslContinue": true, "authenticate": true}

// phaseConn is the connection the driver reads and writes: when the driver
// sends its first authentication command, it marks the auth phase on the
// counting conn below as begun when the hello's answer arrived, so that the
// client's SCRAM work on that answer (salting the password: 15000 rounds
// of HMAC for SCRAM-SHA-256) is auth's, not the hello's. Everything else
// passes through.
type phaseConn struct {
	net.Conn            // the TLS conn, or the counting conn itself
	count    *netx.Conn // where phases and round trips are kept
	authed   bool       // only the driver's goroutine of the moment writes
}

func (c *phaseConn) Write(p []byte) (int, error) {
	if !c.authed && authCommands[commandName(p)] {
		c.authed = true
		c.count.MarkAnswer(PhaseAuth)
	}
	return c.Conn.Write(p)
}
