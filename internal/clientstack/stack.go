// Package clientstack runs a study's operations through a client stack
// other than Go's (--client): a program in the stack's own language
// (clients/, spoken to in clients/PROTOCOL.md's lines) or a C tool driven
// directly, with the process's CPU metered and its life bounded.
package clientstack

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// Stack is one client stack (plan's table, which --client is validated
// against).
type Stack = plan.ClientStack

// Go is the name of Go's own stack, tlsbench's drivers: not run here.
const Go = plan.GoClient

// Lookup finds the stack name (or an alias: python, node, java, jdbc)
// stands for on engine.
func Lookup(engine, name string) (Stack, error) { return plan.LookupClient(engine, name) }

// Names lists the clients of engine, Go's first.
func Names(engine string) []string { return plan.ClientNames(engine) }

// Stacks lists every stack, in the order Names gives them.
func Stacks() []Stack { return plan.AllClientStacks() }

// Dir is where the stacks' libraries are installed: $TLSBENCH_CLIENTS,
// or tlsbench/clients in the user's cache directory.
func Dir() string {
	if d := os.Getenv("TLSBENCH_CLIENTS"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "tlsbench", "clients")
	}
	return filepath.Join(os.TempDir(), "tlsbench-clients")
}

// InstallCommand is what installs every stack's libraries.
const InstallCommand = "bash scripts/install-clients.sh"

// NotInstalled is a stack whose libraries (or runtime) are not on the
// machine.
type NotInstalled struct {
	Stack   string
	Missing string // the file or command not found
	// Install is the command that installs it; "" for InstallCommand.
	Install string
}

func (e *NotInstalled) Error() string {
	install := e.Install
	if install == "" {
		install = InstallCommand
	}
	return fmt.Sprintf("client %s is not installed (no %s): run %s", e.Stack, e.Missing, install)
}

// Refused is a stack that cannot do what its variant asks (a TLS version
// it cannot pin, a group it cannot choose), in the program's own words.
type Refused struct {
	Stack, Why string
}

func (e *Refused) Error() string { return "client " + e.Stack + " cannot run this variant: " + e.Why }
