package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
)

// tunnels lists the tunnels of a run with what each set up once: an SSH
// connection's key exchange and login are not part of any connection's
// phases, so they are shown apart.
func (ix *index) tunnels(b *body) {
	if len(ix.r.Tunnels) == 0 {
		return
	}
	ix.intermediaries(b)
	t := Table{
		Title:  "tunnels, each set up once per run, not per connection: ms [round trips]",
		Left:   6,
		Header: []string{"via", "rtt", "server", "key exchange", "host key", "cipher", "setup"},
	}
	for _, tu := range ix.r.Tunnels {
		if len(tu.Settings) > 0 {
			continue // an intermediary: its own table
		}
		rtt := "-"
		if tu.RTT > 0 {
			rtt = plan.RTTLabel(tu.RTT)
		}
		cipher := dash(tu.Cipher)
		if tu.MAC != "" {
			cipher += "+" + tu.MAC
		}
		t.addCells(textCell(tu.Label), textCell(rtt), textCell(tu.Server), textCell(dash(tu.KeyExchange)),
			textCell(dash(tu.HostKey)), textCell(cipher), setupCell(tu))
	}
	if len(t.Rows) > 0 {
		b.table(t)
	}
}

// intermediaries lists the poolers and proxies of a run with their own
// settings (PgBouncer's pool_mode, server_tls_sslmode, ...).
func (ix *index) intermediaries(b *body) {
	t := Table{Title: "intermediaries, started once per run: setup ms [round trips]", Left: 4, Header: []string{"via", "server", "address", "settings", "setup"}}
	for _, tu := range ix.r.Tunnels {
		if len(tu.Settings) == 0 {
			continue
		}
		var set []string
		for _, k := range slices.Sorted(maps.Keys(tu.Settings)) {
			set = append(set, k+"="+tu.Settings[k])
		}
		t.addCells(textCell(tu.Label), textCell(tu.Server), textCell(tu.Addr), textCell(strings.Join(set, " ")), setupCell(tu))
	}
	if len(t.Rows) > 0 {
		b.table(t)
	}
}

// setupCell is what a tunnel set up once: each step, and the sum, which
// is the cell's figure (ms); "-" when it set up nothing.
func setupCell(tu result.Tunnel) Cell {
	var setup []string
	var total time.Duration
	for _, p := range tu.Setup {
		setup = append(setup, fmt.Sprintf("%s %s [%d]", p.Name, num(ms(p.Duration), millis), p.RoundTrips))
		total += p.Duration
	}
	if len(setup) == 0 {
		return textCell("-")
	}
	return numCell(ms(total), millis, "ms").shown(strings.Join(setup, ", ") + ": " + num(ms(total), millis))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
