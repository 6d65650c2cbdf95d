// Command tlsbench measures what TLS costs; see the README.
package main

import (
	"os"

	"github.com/tlsbench/tlsbench/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
