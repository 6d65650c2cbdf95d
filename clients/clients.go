// Package clients holds the programs of the client stacks other than Go's
// (PROTOCOL.md), built into the binary so that any tlsbench can run them;
// their libraries are installed apart (scripts/install-clients.sh).
package clients

import (
	"embed"
	"fmt"
	"io/fs"
)

//go:embed PROTOCOL.md python/tlsbench_client.py
var files embed.FS

// Program returns the source of a client program by its path under
// clients/, e.g. "python/tlsbench_client.py".
func Program(path string) ([]byte, error) {
	b, err := fs.ReadFile(files, path)
	if err != nil {
		return nil, fmt.Errorf("this tlsbench was built without clients/%s", path)
	}
	return b, nil
}
