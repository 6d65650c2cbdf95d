package clientstack

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is what a client program needs for one variant: PROTOCOL.md's
// configuration keys. Password is a secret: it goes only into the 0600
// file the program reads.
type Config struct {
	Stack Stack
	Host  string // an IP address
	Port  int
	User  string
	// Password is never printed.
	Password string
	Database string
	// TLS is off, 1.2, 1.3 or auto.
	TLS string
	// CA is a PEM file of the CAs to trust; "" the system's. Verify is
	// full, ca or none.
	CA, Verify string
	ServerName string
	// Cert and Key are PEM files of a client certificate and its key.
	Cert, Key string
	Group     string
	Resume    bool
	// Workload is ping, point-select, get, find-one-id, find-one or
	// request.
	Workload  string
	Tables    int
	Rows      int
	QueryMode string
	Path      string
	Timeout   time.Duration
	// Netns, when set, is the network namespace (/run/netns/NAME) the
	// stack's processes run in: a delay link's client side, where Host is
	// reached across the link.
	Netns string
	// Experiments are the experiments the runs will ask for; a stack
	// that cannot run one refuses at its start. Empty: connect and pool.
	Experiments []string
}

// file writes the configuration as PROTOCOL.md's key=value lines.
func (c Config) file() (string, error) {
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	pairs := [][2]string{
		{"protocol", "1"},
		{"stack", c.Stack.Name},
		{"engine", c.engine()},
		{"host", c.Host},
		{"port", strconv.Itoa(c.Port)},
		{"user", c.User},
		{"password", c.Password},
		{"database", c.Database},
		{"tls", c.TLS},
		{"ca", c.CA},
		{"verify", c.Verify},
		{"server_name", c.ServerName},
		{"cert", c.Cert},
		{"key", c.Key},
		{"group", c.Group},
		{"resume", b(c.Resume)},
		{"workload", c.Workload},
		{"tables", strconv.Itoa(c.Tables)},
		{"rows", strconv.Itoa(c.Rows)},
		{"query_mode", c.QueryMode},
		{"path", c.Path},
		{"timeout_ms", strconv.FormatInt(c.Timeout.Milliseconds(), 10)},
		{"experiments", strings.Join(c.Experiments, ",")},
	}
	var s strings.Builder
	for _, p := range pairs {
		if strings.ContainsAny(p[1], "\r\n") {
			return "", fmt.Errorf("client %s: the %s holds a line break, which a client's configuration cannot carry", c.Stack.Name, p[0])
		}
		s.WriteString(p[0] + "=" + p[1] + "\n")
	}
	return s.String(), nil
}

// engine is PROTOCOL.md's engine: https for http with TLS.
func (c Config) engine() string {
	if c.Stack.Engine == "http" && c.TLS != "off" {
		return "https"
	}
	return c.Stack.Engine
}

// writeConfig writes the configuration into a new directory only this
// user can read, and returns the directory and the file's path.
func writeConfig(c Config) (dir, path string, err error) {
	text, err := c.file()
	if err != nil {
		return "", "", err
	}
	dir, err = os.MkdirTemp("", "tlsbench-client-")
	if err != nil {
		return "", "", err
	}
	path = filepath.Join(dir, "config")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	return dir, path, nil
}
