package wire

import (
	"fmt"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// kernelFilter is the kernel's filter for a packet socket of tlsbench's own
// on a link of type lt: TCP segments from or to one of ports (IPv4 whole
// or first fragments, IPv6 without extension headers), cut to snapLen.
// With outgoing false the outgoing copy of each packet is left out: on
// loopback a packet socket sees every packet twice, leaving and arriving,
// and like libpcap it keeps the arrival. Filtering in the kernel keeps
// the other ports' traffic (a bulk transfer beside the capture) out of
// the ring, where it would crowd out the packets captured.
func kernelFilter(lt layers.LinkType, outgoing bool, ports []int, snapLen int) ([]bpf.Instruction, error) {
	var p bpfProg
	if !outgoing {
		p.add(bpf.LoadExtension{Num: bpf.ExtType})
		p.jump(bpf.JumpEqual, unix.PACKET_OUTGOING, "drop", "")
	}
	l3 := uint32(0) // where the IP header starts
	switch lt {
	case layers.LinkTypeEthernet:
		// The kernel hands a packet socket its frames without 802.1Q
		// tags (they are in its auxiliary data).
		l3 = 14
		p.add(bpf.LoadAbsolute{Off: 12, Size: 2})
		p.jump(bpf.JumpEqual, 0x0800, "ipv4", "")
		p.jump(bpf.JumpEqual, 0x86dd, "ipv6", "drop")
	case layers.LinkTypeRaw:
		p.add(bpf.LoadAbsolute{Off: 0, Size: 1}, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0xf0})
		p.jump(bpf.JumpEqual, 0x40, "ipv4", "")
		p.jump(bpf.JumpEqual, 0x60, "ipv6", "drop")
	default:
		return nil, fmt.Errorf("no capture filter for link type %v", lt)
	}
	p.label("ipv4")
	p.add(bpf.LoadAbsolute{Off: l3 + 9, Size: 1})
	p.jump(bpf.JumpEqual, 6, "", "drop") // TCP
	p.add(bpf.LoadAbsolute{Off: l3 + 6, Size: 2})
	p.jump(bpf.JumpBitsSet, 0x1fff, "drop", "") // a later fragment: no ports
	p.add(bpf.LoadMemShift{Off: l3})            // X = the IPv4 header's length
	p.add(bpf.LoadIndirect{Off: l3, Size: 2})
	p.ports(ports)
	p.add(bpf.LoadIndirect{Off: l3 + 2, Size: 2})
	p.ports(ports)
	p.add(bpf.Jump{}) // placeholder replaced below: to drop
	p.jumps = append(p.jumps, bpfJump{at: len(p.ins) - 1, yes: "drop", always: true})
	p.label("ipv6")
	p.add(bpf.LoadAbsolute{Off: l3 + 6, Size: 1})
	p.jump(bpf.JumpEqual, 6, "", "drop") // TCP, no extension header
	p.add(bpf.LoadAbsolute{Off: l3 + 40, Size: 2})
	p.ports(ports)
	p.add(bpf.LoadAbsolute{Off: l3 + 42, Size: 2})
	p.ports(ports)
	p.label("drop")
	p.add(bpf.RetConstant{Val: 0})
	p.label("keep")
	p.add(bpf.RetConstant{Val: uint32(snapLen)})
	return p.resolve()
}

// bpfProg is a classic BPF program whose jumps go to labels.
type bpfProg struct {
	ins    []bpf.Instruction
	labels map[string]int
	jumps  []bpfJump
}

// bpfJump is a jump at ins[at] to label yes when its test holds, else to
// label no ("": the next instruction); always: an unconditional jump to yes.
type bpfJump struct {
	at      int
	yes, no string
	always  bool
}

func (p *bpfProg) add(ins ...bpf.Instruction) { p.ins = append(p.ins, ins...) }

func (p *bpfProg) label(name string) {
	if p.labels == nil {
		p.labels = map[string]int{}
	}
	p.labels[name] = len(p.ins)
}

func (p *bpfProg) jump(cond bpf.JumpTest, val uint32, yes, no string) {
	p.add(bpf.JumpIf{Cond: cond, Val: val})
	p.jumps = append(p.jumps, bpfJump{at: len(p.ins) - 1, yes: yes, no: no})
}

// ports keeps the packet if the loaded value is one of ports.
func (p *bpfProg) ports(ports []int) {
	for _, port := range ports {
		p.jump(bpf.JumpEqual, uint32(port), "keep", "")
	}
}

// resolve sets every jump's skips from its labels.
func (p *bpfProg) resolve() ([]bpf.Instruction, error) {
	skip := func(from int, label string) (uint32, error) {
		if label == "" {
			return 0, nil
		}
		to, ok := p.labels[label]
		if !ok || to <= from {
			return 0, fmt.Errorf("capture filter: no label %q after instruction %d", label, from)
		}
		return uint32(to - from - 1), nil
	}
	for _, j := range p.jumps {
		yes, err := skip(j.at, j.yes)
		if err != nil {
			return nil, err
		}
		if j.always {
			p.ins[j.at] = bpf.Jump{Skip: yes}
			continue
		}
		no, err := skip(j.at, j.no)
		if err != nil {
			return nil, err
		}
		if yes > 255 || no > 255 {
			return nil, fmt.Errorf("capture filter: too many ports (a jump of %d instructions)", max(yes, no))
		}
		ji := p.ins[j.at].(bpf.JumpIf)
		ji.SkipTrue, ji.SkipFalse = uint8(yes), uint8(no)
		p.ins[j.at] = ji
	}
	return p.ins, nil
}
