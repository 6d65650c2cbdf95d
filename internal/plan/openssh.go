package plan

import (
	"slices"
	"strings"
	"time"
)

// OpenSSH's own client as a path (--via openssh[:CIPHER]): ssh -N -L
// through the lab's sshd, the database protocol plain inside.
func init() {
	routeKinds[RouteOpenSSH] = routeKind{usage: "openssh[:CIPHER]", parse: parseOpenSSH, check: checkOpenSSH}
}

func parseOpenSSH(r *Route) error {
	if len(r.Params) > 0 {
		return errorf("⟨via⟩ openssh takes a cipher only: openssh:CIPHER")
	}
	if r.Arg != "" && !slices.Contains(OpenSSHCiphers, r.Arg) {
		name := ""
		if plainWord(r.Arg) {
			name = " " + r.Arg
		}
		return errorf("⟨via⟩ openssh: unknown cipher%s: use one of %s", name, strings.Join(OpenSSHCiphers, ", "))
	}
	return nil
}

func checkOpenSSH(_ Route, s *Spec, t Target) error {
	if t.Lab == "" && !t.Builtin {
		return errorf("⟨via⟩ openssh runs OpenSSH's client through the lab's sshd before a server tlsbench starts: use ⟨lab⟩ ENGINE or the built-in server (for your own sshd: ⟨via⟩ ssh://user@host)")
	}
	if slices.ContainsFunc(s.RTT, func(r time.Duration) bool { return r != 0 }) {
		return errorf("⟨via⟩ openssh with ⟨rtt⟩: ssh makes its own connection, which tlsbench cannot delay: measure it at ⟨rtt⟩ 0")
	}
	return nil
}
