package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// groupGrace is how long a command's process group has to end after
// SIGINT before it is killed.
const groupGrace = 2 * time.Second

// group is a command run in a process group of its own (wire --capture's
// command), so that tlsbench can stop all of it: a SIGINT or SIGTERM to
// tlsbench's pid alone reaches the command's children too, and nothing it
// started outlives it.
type group struct {
	cmd *exec.Cmd
	// tty is the terminal the group was given, -1 if none.
	tty int
}

// startGroup starts cmd as the leader of a new process group. When
// tlsbench has the terminal, the group gets it while it runs (as a shell
// does), so that the command can read it and a Ctrl-C reaches it.
func startGroup(cmd *exec.Cmd) (*group, error) {
	g := &group{cmd: cmd, tty: -1}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if f, ok := cmd.Stdin.(*os.File); ok && ownsTerminal(int(f.Fd())) {
		g.tty = int(f.Fd())
		cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, g.tty
	}
	// Pipes held by what is left of the group once killed close at once;
	// this bounds Wait if something still holds them.
	cmd.WaitDelay = groupGrace
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return g, nil
}

// ownsTerminal says whether fd is a terminal whose foreground process
// group is tlsbench's.
func ownsTerminal(fd int) bool {
	pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	return err == nil && pg == unix.Getpgrp()
}

// wait waits for the command to exit and returns how it did (cmd.Wait's
// error). Cancelling ctx sends the group SIGINT, and SIGKILL after
// groupGrace; once the command exits, what it left in its group is
// killed, and the terminal is tlsbench's again.
func (g *group) wait(ctx context.Context) error {
	pid := g.cmd.Process.Pid
	exited := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
		case <-exited:
			return
		}
		syscall.Kill(-pid, syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(groupGrace):
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	}()
	// Wait for the leader without reaping it, so that its pid still names
	// the group, then kill what the command left running in it.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	close(exited)
	<-stopped
	syscall.Kill(-pid, syscall.SIGKILL)
	err := g.cmd.Wait()
	if g.tty >= 0 {
		// tlsbench is in the background now: taking the terminal back
		// would stop it with SIGTTOU unless that is ignored meanwhile.
		signal.Ignore(syscall.SIGTTOU)
		unix.IoctlSetPointerInt(g.tty, unix.TIOCSPGRP, unix.Getpgrp())
		signal.Reset(syscall.SIGTTOU)
	}
	return err
}
