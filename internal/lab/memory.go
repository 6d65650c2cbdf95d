package lab

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"strconv"
)

// Memory is what a server's processes hold in memory at one moment.
type Memory struct {
	// Bytes is the sum over the server's process tree of each process's
	// proportional set size (PSS: shared pages divided among the
	// processes that map them, so that the sum counts each page once),
	// or of its resident set size where PSS cannot be read (Kind).
	Bytes int64
	// Kind is MemoryPSS or MemoryRSS: what Bytes sums.
	Kind string
	// Processes is how many processes the tree held.
	Processes int
}

// What a Memory sums.
const (
	MemoryPSS = "pss" // /proc/PID/smaps_rollup (Linux 4.14+)
	MemoryRSS = "rss" // /proc/PID/status VmRSS: shared pages count in every process
)

// memory reads the memory of the process and all its descendants (the
// same tree as cpu): PSS from smaps_rollup, or RSS for the whole tree if
// the server's own PSS cannot be read (an old kernel), so that one Kind
// holds for the sum. A child that cannot be read has ended meanwhile.
func (p *process) memory() (Memory, error) {
	tree, err := p.tree()
	if err != nil {
		return Memory{}, err
	}
	m := Memory{Kind: MemoryPSS}
	root := p.cmd.Process.Pid
	for pid := range tree {
		kb, err := procField("/proc/"+strconv.Itoa(pid)+"/smaps_rollup", "Pss:")
		if err != nil && pid == root {
			m.Kind = MemoryRSS
			break
		}
		if err != nil {
			continue
		}
		m.Bytes += kb << 10
		m.Processes++
	}
	if m.Kind == MemoryRSS {
		m.Bytes, m.Processes = 0, 0
		for pid := range tree {
			kb, err := procField("/proc/"+strconv.Itoa(pid)+"/status", "VmRSS:")
			if err != nil {
				continue // ended meanwhile, or a kernel thread without VmRSS
			}
			m.Bytes += kb << 10
			m.Processes++
		}
	}
	if m.Processes == 0 {
		return m, errors.New("no process of the server could be read in /proc")
	}
	return m, nil
}

// procField reads the kB figure of the line that starts with name in a
// /proc file ("Pss:   1234 kB").
func procField(path, name string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Bytes()
		if rest, ok := bytes.CutPrefix(line, []byte(name)); ok {
			f := bytes.Fields(rest)
			if len(f) == 0 {
				break
			}
			return strconv.ParseInt(string(f[0]), 10, 64)
		}
	}
	return 0, errors.New(path + ": no " + name + " line")
}
