// Command tlsbench measures what TLS costs; see the README.
package main

import (
	"os"

	"github.com/tlsbench/tlsbench/internal/cli"
	_ "github.com/tlsbench/tlsbench/internal/driver/all" // the engines' drivers
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
