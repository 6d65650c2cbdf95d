package cli

import (
	"context"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/tlsbench/tlsbench/internal/netx"
)

// newForwardCmd is the delay link's forwarder (lab.DelayLink), a process of
// its own: the two TUN devices come as file descriptors 3 and 4, its
// orders as lines on stdin (netx.ServeForward). Hidden: tlsbench starts it.
func newForwardCmd(stdin io.Reader, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:    "forward",
		Short:  "Forward a delay link's packets (started by tlsbench itself)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			// Not a TUN device there: Forward's error names the file.
			return netx.ServeForward(ctx, os.NewFile(3, "fd 3 (a TUN device)"), os.NewFile(4, "fd 4 (a TUN device)"), stdin, stdout)
		},
	}
}
