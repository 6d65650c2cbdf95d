package httpdrv

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"

	"github.com/tlsbench/tlsbench/internal/driver"
)

// reqTemplate is what every operation writes: the request line (with one of
// paths, picked at random, or the URL's path) and the rest, made once.
type reqTemplate struct {
	method string
	paths  []string
	head   []byte // the headers but Connection
	body   []byte
	// fixed is the whole request, asking for keep-alive and for close,
	// when there is one path: no copy per operation.
	fixed [2][]byte
}

// newRequest makes the request of cfg: the user's method, headers and
// body (plan.UserWorkload, as curl's -X, -H, --data), or a GET. tlsbench
// writes Host (unless a -H gives it), User-Agent and Accept (a -H
// replaces them; an empty value, as curl's "-H 'Accept:'", leaves them
// out), Connection, and with a body Content-Length and, as curl's --data
// does, Content-Type: application/x-www-form-urlencoded unless a -H
// gives one.
func newRequest(cfg driver.Config) reqTemplate {
	w := cfg.Workload.User
	r := reqTemplate{method: "GET", paths: w.Paths}
	if w.Method != "" {
		r.method = w.Method
	}
	if len(r.paths) == 0 {
		r.paths = []string{cfg.Path}
	}
	defaults := [][2]string{{"Host", cfg.Host}, {"User-Agent", "tlsbench"}, {"Accept", "*/*"}}
	if w.HasBody {
		defaults = append(defaults, [2]string{"Content-Type", "application/x-www-form-urlencoded"})
	}
	var user [][2]string
	for _, h := range w.Headers {
		user = append(user, [2]string{h.Name, h.Value})
	}
	var b strings.Builder
	for _, d := range defaults {
		given := false
		for _, u := range user {
			given = given || strings.EqualFold(u[0], d[0])
		}
		if !given {
			fmt.Fprintf(&b, "%s: %s\r\n", d[0], d[1])
		}
	}
	for _, u := range user {
		if u[1] != "" {
			fmt.Fprintf(&b, "%s: %s\r\n", u[0], u[1])
		}
	}
	if w.HasBody {
		b.WriteString("Content-Length: " + strconv.Itoa(len(w.Body)) + "\r\n")
	}
	r.head, r.body = []byte(b.String()), w.Body
	if len(r.paths) == 1 {
		r.fixed = [2][]byte{r.appendTo(nil, r.paths[0], false), r.appendTo(nil, r.paths[0], true)}
	}
	return r
}

// appendTo appends the request for path to dst, asking the server to close
// the connection after it or not.
func (r reqTemplate) appendTo(dst []byte, path string, closing bool) []byte {
	dst = append(dst, r.method...)
	dst = append(dst, ' ')
	dst = append(dst, path...)
	dst = append(dst, " HTTP/1.1\r\n"...)
	dst = append(dst, r.head...)
	// HTTP/1.1 keeps a connection open unless a side says Connection:
	// close; curl says nothing else either.
	if closing {
		dst = append(dst, "Connection: close\r\n"...)
	}
	dst = append(dst, "\r\n"...)
	return append(dst, r.body...)
}

// next returns the bytes of the next operation's request, made in *buf
// when the path changes per operation.
func (r reqTemplate) next(buf *[]byte, closing bool) []byte {
	i := 0
	if closing {
		i = 1
	}
	if r.fixed[i] != nil {
		return r.fixed[i]
	}
	*buf = r.appendTo((*buf)[:0], r.paths[rand.IntN(len(r.paths))], closing)
	return *buf
}

// statusError is a response whose status is not 2xx: a failed operation,
// counted by its status.
type statusError struct {
	code   int
	status string // "404 Not Found"
}

func (e *statusError) Error() string { return "HTTP status " + e.status }

// Cause implements driver.Causer: "status 404".
func (e *statusError) Cause() string { return "status " + strconv.Itoa(e.code) }

// ok says whether a status is a success: 2xx, as curl --fail and k6's
// default expectedStatuses take it.
func ok(code int) bool { return code >= http.StatusOK && code < 300 }
