// Package labexe builds the tlsbench binary for tests that start the
// built-in server as a child process, as the tool itself does.
package labexe

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build builds ./cmd/tlsbench of this module into dir and returns its path.
func Build(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	exe := filepath.Join(dir, "tlsbench")
	build := exec.Command("go", "build", "-o", exe, "./cmd/tlsbench")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building tlsbench: %v\n%s", err, out)
	}
	return exe, nil
}
