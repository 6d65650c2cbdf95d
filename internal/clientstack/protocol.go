package clientstack

import (
	"fmt"
	"strconv"
	"strings"
)

// Hello is what a program says of itself when it starts.
type Hello struct {
	Stack  string
	Driver string // the driver library and its version, "psycopg/3.2.3"
	TLS    string // the TLS library and its version, "OpenSSL/3.0.15"
	// Runtime is the language runtime, "CPython/3.11.7".
	Runtime string
	// Model is how it runs concurrent connections: threads, event-loop,
	// processes or event-loop-pipelined (one connection, N in flight).
	Model string
}

// Op is one operation a client reports: its worker, its start and end on
// the process's own monotonic clock (ns), and where it failed, if it did.
type Op struct {
	Worker     int
	Start, End int64
	// Built splits a new-client iteration (a seedop line): the client was
	// built from Start to Built, its first operation ran from Built to
	// End. 0 for the other operations.
	Built int64
	// Phase and Kind are set for a failed operation (PROTOCOL.md's
	// phases and kinds); Message is the library's line.
	Phase, Kind, Message string
}

// Failed reports whether the operation failed.
func (o Op) Failed() bool { return o.Phase != "" }

// Negotiated is what a stack says it negotiated; "-" where it does not
// say.
type Negotiated struct {
	Version, Cipher, Group, Resumed string
}

// line is one line a program printed, read.
type line struct {
	kind  string // hello, refuse, warm, op, seedop, err, tls, done, fatal
	hello Hello
	op    Op
	tls   Negotiated
	id    int
	ops   int64
	errs  int64
	text  string // refuse's and fatal's
}

// parseLine reads one of PROTOCOL.md's lines.
func parseLine(s string) (line, error) {
	word, rest, _ := strings.Cut(s, " ")
	l := line{kind: word}
	bad := func(why string) (line, error) {
		return line{}, fmt.Errorf("%s (%q)", why, clip(s))
	}
	switch word {
	case "hello":
		for _, f := range strings.Fields(rest) {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				return bad("hello's fields are key=value")
			}
			switch k {
			case "stack":
				l.hello.Stack = v
			case "driver":
				l.hello.Driver = v
			case "tls":
				l.hello.TLS = v
			case "runtime":
				l.hello.Runtime = v
			case "model":
				l.hello.Model = v
			case "protocol":
				if v != "1" {
					return bad("protocol " + v + ": this tlsbench speaks 1")
				}
			}
		}
	case "refuse", "fatal":
		l.text = rest
	case "op", "err", "seedop":
		// op <worker> <start_ns> <end_ns>; seedop <worker> <start_ns>
		// <built_ns> <end_ns>; err <worker> <start_ns> <end_ns> <phase>
		// <kind> <message>.
		want := map[string]int{"op": 3, "seedop": 4, "err": 5}[word]
		f := strings.SplitN(rest, " ", 6)
		if len(f) < want {
			return bad(word + " needs " + strconv.Itoa(want) + " fields")
		}
		end := f[2]
		if word == "seedop" {
			end = f[3]
		}
		var err error
		if l.op.Worker, err = strconv.Atoi(f[0]); err != nil {
			return bad("the worker is not a number")
		}
		if l.op.Start, err = strconv.ParseInt(f[1], 10, 64); err != nil {
			return bad("the start is not a number of ns")
		}
		if l.op.End, err = strconv.ParseInt(end, 10, 64); err != nil {
			return bad("the end is not a number of ns")
		}
		if l.op.End < l.op.Start {
			return bad("the operation ends before it starts")
		}
		if word != "err" && len(f) > want {
			return bad(word + " has " + strconv.Itoa(want) + " fields")
		}
		switch word {
		case "seedop":
			if l.op.Built, err = strconv.ParseInt(f[2], 10, 64); err != nil {
				return bad("the built time is not a number of ns")
			}
			if l.op.Built < l.op.Start || l.op.Built > l.op.End {
				return bad("the client is built outside its iteration")
			}
		case "err":
			l.op.Phase, l.op.Kind = f[3], f[4]
			if len(f) == 6 {
				l.op.Message = f[5]
			}
		}
	case "tls":
		f := strings.Fields(rest)
		if len(f) != 4 {
			return bad("tls has 4 fields")
		}
		l.tls = Negotiated{f[0], f[1], f[2], f[3]}
	case "warm":
		// warm <id> [<ops> <errors>]: the warm-up's operations, and of
		// them those that failed, where the program counts them.
		f := strings.Fields(rest)
		var err error
		if len(f) != 1 && len(f) != 3 {
			return bad("warm has 1 or 3 fields")
		}
		if l.id, err = strconv.Atoi(f[0]); err != nil {
			return bad("warm's id is not a number")
		}
		l.ops = -1
		if len(f) == 3 {
			l.ops, err = strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				l.errs, err = strconv.ParseInt(f[2], 10, 64)
			}
			if err != nil || l.ops < 0 || l.errs < 0 || l.errs > l.ops {
				return bad("warm's counts are not 0 <= errors <= ops")
			}
		}
	case "done":
		f := strings.Fields(rest)
		if len(f) != 3 {
			return bad("done has 3 fields")
		}
		var err error
		if l.id, err = strconv.Atoi(f[0]); err != nil {
			return bad("done's id is not a number")
		}
		if l.ops, err = strconv.ParseInt(f[1], 10, 64); err != nil {
			return bad("done's count is not a number")
		}
		if l.errs, err = strconv.ParseInt(f[2], 10, 64); err != nil {
			return bad("done's error count is not a number")
		}
	default:
		return bad("not a line of the protocol")
	}
	return l, nil
}

// clip shortens a line for an error message.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
