package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// tunnels lists the tunnels of a run with what each set up once: an SSH
// connection's key exchange and login are not part of any connection's
// phases, so they are shown apart.
func (ix *index) tunnels(b *body) {
	if len(ix.r.Tunnels) == 0 {
		return
	}
	t := Table{
		Title:  "tunnels, each set up once per run, not per connection: ms [round trips]",
		Left:   6,
		Header: []string{"via", "rtt", "server", "key exchange", "host key", "cipher", "setup"},
	}
	for _, tu := range ix.r.Tunnels {
		rtt := "-"
		if tu.RTT > 0 {
			rtt = plan.RTTLabel(tu.RTT)
		}
		var setup []string
		var total time.Duration
		for _, p := range tu.Setup {
			setup = append(setup, fmt.Sprintf("%s %s [%d]", p.Name, num(ms(p.Duration), millis), p.RoundTrips))
			total += p.Duration
		}
		cell := "-"
		if len(setup) > 0 {
			cell = strings.Join(setup, ", ") + ": " + num(ms(total), millis)
		}
		cipher := dash(tu.Cipher)
		if tu.MAC != "" {
			cipher += "+" + tu.MAC
		}
		t.add(tu.Label, rtt, tu.Server, dash(tu.KeyExchange), dash(tu.HostKey), cipher, cell)
	}
	b.table(t)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
