package plan

import (
	"slices"
	"strings"
)

// How an emulated RTT is made (--rtt-via), a variant dimension.
const (
	// RTTViaDialer is tlsbench's dialer (connect +1 RTT, each direction
	// +RTT/2 in user space) and, for other client stacks, its relay: the
	// default.
	RTTViaDialer = "dialer"
	// RTTViaLink is a delay link (lab.DelayLink): the connections are made
	// in a network namespace joined to the server's by two TUN devices
	// whose packets tlsbench holds RTT/2 each way, so that the kernel's
	// TCP sees the RTT, its handshake included.
	RTTViaLink = "link"
)

// rttVias is the dimension: each variant's RTTVia, "" for the dialer.
func (s Spec) rttVias() []string {
	if len(s.RTTVia) == 0 {
		return []string{""}
	}
	out := make([]string, len(s.RTTVia))
	for i, v := range s.RTTVia {
		if v == RTTViaLink {
			out[i] = v
		}
	}
	return out
}

// LinkRTT reports whether some variants cross a delay link.
func (s Spec) LinkRTT() bool { return slices.Contains(s.RTTVia, RTTViaLink) }

// DialerRTT reports whether some variants have their RTT made by the
// dialer (or its relay).
func (s Spec) DialerRTT() bool { return len(s.RTTVia) == 0 || slices.Contains(s.RTTVia, RTTViaDialer) }

// checkRTTVia validates --rtt-via against the target and the paths: the
// link is built for a lab server of tlsbench's (or the built-in one),
// which listens on the link's address, and carries direct connections.
func (s *Spec) checkRTTVia() error {
	for _, v := range s.RTTVia {
		if v != RTTViaDialer && v != RTTViaLink {
			name := ""
			if plainWord(v) {
				name = " " + v
			}
			return errorf("⟨rtt_via⟩%s: unknown way: use dialer (tlsbench's dialer, the default) or link (a delay link the kernel's TCP sees)", name)
		}
	}
	if err := twice("⟨rtt_via⟩", s.RTTVia, func(v string) string { return v }); err != nil {
		return err
	}
	if !s.LinkRTT() {
		return nil
	}
	t := s.target
	switch {
	case t.Builtin:
	case t.Lab == "":
		return errorf("⟨rtt_via⟩ link puts the server behind a delay link tlsbench builds: use ⟨lab⟩ postgres, mariadb or redis, or the built-in server")
	case len(t.Labs()) > 1:
		return errorf("⟨rtt_via⟩ link is built for one lab server: give ⟨lab⟩ one engine and version")
	case t.Scheme != "postgres" && t.Scheme != "mysql" && t.Scheme != "redis":
		return errorf("⟨rtt_via⟩ link is built for the lab PostgreSQL, MariaDB and Redis and the built-in server, which listen on its address: use one of them")
	}
	for _, r := range s.Routes() {
		if r.Kind != RouteDirect {
			return errorf("⟨rtt_via⟩ link with ⟨via⟩ %s: the link carries direct connections only: use ⟨via⟩ direct", strings.TrimSpace(r.Label()))
		}
	}
	if s.Source != "" && s.Source != SourceAuto && s.Source != SourceSpread {
		return errorf("⟨rtt_via⟩ link with ⟨source⟩ set to an address: the link's connections come from the link's own address: leave ⟨source⟩ out")
	}
	return nil
}
