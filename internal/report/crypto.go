package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/result"
	"github.com/tlsbench/tlsbench/internal/stats"
)

// isCrypto reports whether r is a `tlsbench crypto` result: primitives
// measured, no trials.
func isCrypto(r *result.Result) bool { return len(r.Crypto) > 0 && len(r.Trials) == 0 }

// cryptoBounds says how long each figure of a crypto result was measured:
// its plan's bounds, or, in a file from before CryptoPlan, its Spec's.
func cryptoBounds(r *result.Result) string {
	dur, count := r.Spec.Duration, r.Spec.Count
	if c := r.CryptoPlan; c != nil {
		dur, count = c.Duration, c.Count
	}
	d := fmt.Sprintf("Go %s per figure", dur)
	if count > 0 {
		d = fmt.Sprintf("Go %s or %d operations per figure", dur, count)
	}
	return d + " (OpenSSL: see the notes)"
}

// primitives indexes a crypto result: names and libraries in the order the
// file has them, record sizes ascending.
type primitives struct {
	names, libs []string
	sizes       []int
	at          map[primKey]result.Primitive
}

type primKey struct {
	lib, kind, name string
	size            int
}

func newPrimitives(ps []result.Primitive) *primitives {
	x := &primitives{at: map[primKey]result.Primitive{}}
	for _, p := range ps {
		if !slices.Contains(x.names, p.Name) {
			x.names = append(x.names, p.Name)
		}
		if !slices.Contains(x.libs, p.Library) {
			x.libs = append(x.libs, p.Library)
		}
		if p.Kind == result.KindCipher && !slices.Contains(x.sizes, p.Size) {
			x.sizes = append(x.sizes, p.Size)
		}
		x.at[primKey{p.Library, p.Kind, p.Name, p.Size}] = p
	}
	slices.Sort(x.sizes)
	return x
}

// has reports whether any library measured name as kind.
func (x *primitives) has(kind, name string) bool {
	for k := range x.at {
		if k.kind == kind && k.name == name {
			return true
		}
	}
	return false
}

// figure renders one figure, scaled (ciphers: bytes to MB); "-" if absent.
func (x *primitives) figure(lib, kind, name string, size int, all bool, scale float64, unit string) Cell {
	p, ok := x.at[primKey{lib, kind, name, size}]
	v := p.PerCore
	if all {
		v = p.AllCores
	}
	if !ok || v <= 0 {
		return textCell("-")
	}
	return numCell(v*scale, rate, unit)
}

// primitiveKinds are the kinds of figures, in the order tables list them.
var primitiveKinds = []string{result.KindSign, result.KindVerify, result.KindKeyAgreement,
	result.KindKeyGen, result.KindEncapsulate, result.KindDecapsulate,
	result.KindKexClient, result.KindKexServer, result.KindCipher}

// opsColumn is a column pair of an operations table: the figures of one
// kind, per second, on one core and (when the run had several) on all.
type opsColumn struct{ kind, label string }

// opsTable lists, per primitive that has a figure of the first column's
// kind and per library that measured it, its operations per second.
func (x *primitives) opsTable(title string, cores int, head string, cols []opsColumn) Table {
	multi := cores > 1
	if multi {
		title += fmt.Sprintf(" and on all %s", plural(cores, "core"))
	}
	t := Table{Title: title, Left: 2, Header: []string{head, "library"}}
	for _, c := range cols {
		t.Header = append(t.Header, c.label+"/s")
		if multi {
			t.Header = append(t.Header, fmt.Sprintf("%s/s ×%d", c.label, cores))
		}
	}
	for _, name := range x.names {
		if !x.has(cols[0].kind, name) {
			continue
		}
		first := true
		for _, lib := range x.libs {
			if _, ok := x.at[primKey{lib, cols[0].kind, name, 0}]; !ok {
				continue
			}
			cells := []Cell{textCell(""), textCell(lib)}
			if first {
				cells[0] = textCell(name)
			}
			first = false
			for _, c := range cols {
				cells = append(cells, x.figure(lib, c.kind, name, 0, false, 1, "operations/s"))
				if multi {
					cells = append(cells, x.figure(lib, c.kind, name, 0, true, 1, "operations/s"))
				}
			}
			t.addCells(cells...)
		}
	}
	return t
}

// crypto writes a crypto result in the shape of openssl speed: public-key
// operations per second, the key exchange of a TLS 1.3 handshake by group,
// then ciphers' MB/s by record size, each on one core and on all, one row
// per library.
func (ix *index) crypto(b *body) {
	x := newPrimitives(ix.r.Crypto)
	cores := ix.r.Env.Cores
	all := plural(cores, "core")
	multi := cores > 1

	pk := x.opsTable("public key: operations/s on 1 core", cores, "primitive",
		[]opsColumn{{result.KindSign, "sign"}, {result.KindVerify, "verify"}})
	if multi {
		pk.Title += fmt.Sprintf(" (×%d)", cores)
	}
	if len(pk.Rows) > 0 {
		pk.Foot = []string{"a server signs once per full TLS handshake: cores × sign/s is the most new connections it can take"}
		b.table(pk)
	}
	ka := x.opsTable("key agreement: shared secrets/s on 1 core", cores, "primitive",
		[]opsColumn{{result.KindKeyAgreement, "derive"}})
	if len(ka.Rows) > 0 {
		b.table(ka)
	}
	kem := x.opsTable("post-quantum KEM: operations/s on 1 core", cores, "primitive",
		[]opsColumn{{result.KindKeyGen, "keygen"}, {result.KindEncapsulate, "encaps"}, {result.KindDecapsulate, "decaps"}})
	if len(kem.Rows) > 0 {
		b.table(kem)
	}
	if kx := x.kexTable(); len(kx.Rows) > 0 {
		b.table(kx)
	}

	for _, allCores := range []bool{false, true} {
		if allCores && !multi {
			break
		}
		title := "ciphers: MB/s on 1 core, by record size in bytes (one record sealed per operation)"
		if allCores {
			title = fmt.Sprintf("ciphers: MB/s on all %s, by record size in bytes", all)
		}
		ct := Table{Title: title, Left: 2, Header: []string{"primitive", "library"}}
		for _, s := range x.sizes {
			ct.Header = append(ct.Header, fmt.Sprint(s))
		}
		for _, name := range x.names {
			if !x.has(result.KindCipher, name) {
				continue
			}
			first := true
			for _, lib := range x.libs {
				cells := []Cell{textCell(""), textCell(lib)}
				any := false
				for _, s := range x.sizes {
					c := x.figure(lib, result.KindCipher, name, s, allCores, 1e-6, "MB/s")
					any = any || c.Figure()
					cells = append(cells, c)
				}
				if !any {
					continue
				}
				if first {
					cells[0] = textCell(name)
				}
				first = false
				ct.addCells(cells...)
			}
		}
		if len(ct.Rows) > 0 {
			b.table(ct)
		}
	}
	x.warnScaling(b, cores)
}

// kexTable lists each side's part of one TLS 1.3 key exchange by group
// (kex-client and kex-server figures): operations per second, the time of
// one and the key share it sends, on one core (a handshake's time).
func (x *primitives) kexTable() Table {
	t := x.opsTable("TLS 1.3 key exchange by group, each side of one handshake: operations/s on 1 core", 1, "group",
		[]opsColumn{{result.KindKexClient, "client"}, {result.KindKexServer, "server"}})
	t.Header = append(t.Header, "client µs", "server µs", "client share B", "server share B")
	// The rows are opsTable's, in its order: a primitive with a kex-client
	// figure, each library that measured it.
	row := 0
	for _, name := range x.names {
		if !x.has(result.KindKexClient, name) {
			continue
		}
		for _, lib := range x.libs {
			c, ok := x.at[primKey{lib, result.KindKexClient, name, 0}]
			if !ok {
				continue
			}
			s := x.at[primKey{lib, result.KindKexServer, name, 0}]
			us := func(p result.Primitive) Cell {
				if p.PerCore <= 0 {
					return textCell("-")
				}
				return numCell(1e6/p.PerCore, rate, "µs")
			}
			bytes := func(n int) Cell {
				if n <= 0 {
					return textCell("-")
				}
				return countCell(int64(n), "bytes")
			}
			t.Rows[row] = append(t.Rows[row], us(c), us(s), bytes(c.KeyShare), bytes(s.KeyShare))
			row++
		}
	}
	t.Foot = []string{"client: its key share made (ClientHello), the secret derived from the server's; server: the client's share read, its own made (ServerHello), the secret derived"}
	return t
}

// warnScaling says which figures were lower on all cores than on one: the
// cores were busy with other work, or are not independent (SMT siblings,
// an overcommitted VM), and cores × the one-core figure overstates them.
func (x *primitives) warnScaling(b *body, cores int) {
	if cores < 2 {
		return
	}
	var low []string
	n := 0
	for _, lib := range x.libs {
		for _, name := range x.names {
			for _, kind := range primitiveKinds {
				sizes := []int{0}
				if kind == result.KindCipher {
					sizes = x.sizes
				}
				for _, size := range sizes {
					p, ok := x.at[primKey{lib, kind, name, size}]
					if !ok || p.AllCores <= 0 {
						continue
					}
					n++
					if p.AllCores < p.PerCore {
						what := lib + " " + name + " " + kind
						if size > 0 {
							what += fmt.Sprintf(" %d", size)
						}
						low = append(low, what)
					}
				}
			}
		}
	}
	if len(low) == 0 {
		return
	}
	const show = 4
	list := strings.Join(low[:min(len(low), show)], ", ")
	if len(low) > show {
		list += fmt.Sprintf(" and %d more", len(low)-show)
	}
	b.prose(fmt.Sprintf("warning: %d of %d figures were lower on all %s than on one (%s): the cores were busy with other work or are not independent (SMT siblings, a shared VM host), so cores × one core overstates what they do together",
		len(low), n, plural(cores, "core"), list))
}

// CeilingRow is a key's server-side ceiling beside the best connect rate
// measured with that key.
type CeilingRow struct {
	result.Ceiling
	// Best is the highest mean connections/s over the connect cells of
	// full-handshake TLS variants with this key (NaN when none ran); BestAt
	// names that cell's variant and concurrency.
	Best   float64
	BestAt string
}

// Share is Best as a fraction of the ceiling.
func (c CeilingRow) Share() float64 {
	if c.ConnPerSec() <= 0 {
		return math.NaN()
	}
	return c.Best / c.ConnPerSec()
}

// ceilingRows pairs each ceiling of the result with the best connect rate
// measured with its key. Variants that resume sessions are left out: a
// resumed handshake signs nothing.
func (ix *index) ceilingRows() []CeilingRow {
	var out []CeilingRow
	for _, c := range ix.r.Ceilings {
		row := CeilingRow{Ceiling: c, Best: math.NaN()}
		for _, k := range ix.cells(plan.Connect) {
			info, ok := ix.info[k.variant]
			if !ok || info.Plain() || info.Resume || info.Key != c.Key {
				continue
			}
			m := stats.Summarize(collect(ix.trials[k], result.Trial.Throughput)).Mean
			if math.IsNaN(row.Best) || m > row.Best {
				row.Best, row.BestAt = m, k.variant+" "+plan.Label(k.c)
			}
		}
		out = append(out, row)
	}
	return out
}

// ceilings writes the server-side ceiling of each key beside the best
// connections/s measured with it.
func (ix *index) ceilings(b *body) {
	rows := ix.ceilingRows()
	if len(rows) == 0 {
		return
	}
	t := Table{
		Title:  "connect: server ceiling per key (cores × signatures/s on one core) vs the best measured",
		Left:   2,
		Header: []string{"key", "library", "sign/s per core", "cores", "ceiling conn/s", "best conn/s", "of ceiling", "best at"},
		Foot: []string{
			"every full handshake costs the server one signature; resumed variants are left out of best; the client shares this machine",
		},
	}
	for _, c := range rows {
		share := textCell("-")
		if s := c.Share(); !math.IsNaN(s) {
			share = Cell{Text: fmt.Sprintf("%.1f%%", s*100), Unit: "%", Value: s * 100, StdDev: math.NaN(), CI: math.NaN()}
		}
		at := c.BestAt
		if at == "" {
			at = "-"
		}
		t.addCells(textCell(c.Key), textCell(c.Library), numCell(c.SignPerSec, rate, "signatures/s"), countCell(int64(c.Cores), "cores"),
			numCell(c.ConnPerSec(), rate, "connections/s"), numCell(c.Best, rate, "connections/s"), share, textCell(at))
	}
	b.table(t)
}

// libraries lists the libraries of a crypto run's primitives, in the order
// measured.
func libraries(prims []result.Primitive) []string {
	var libs []string
	for _, p := range prims {
		if !slices.Contains(libs, p.Library) {
			libs = append(libs, p.Library)
		}
	}
	return libs
}
