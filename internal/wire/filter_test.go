package wire

import (
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

// frame serializes a packet of the given layers.
func frame(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestKernelFilter runs the capture's kernel filter in x/net/bpf's VM
// (which lacks the packet-type extension, so without the loopback clause):
// TCP from or to a port captured is kept, cut to the snap length; other
// ports, other protocols, later fragments and IPv6 extension headers are
// not.
func TestKernelFilter(t *testing.T) {
	const snap = 96
	ports := []int{5432, 6379}
	mac := make([]byte, 6) // loopback's
	eth := &layers.Ethernet{SrcMAC: mac, DstMAC: mac, EthernetType: layers.EthernetTypeIPv4}
	eth6 := &layers.Ethernet{SrcMAC: mac, DstMAC: mac, EthernetType: layers.EthernetTypeIPv6}
	ip4 := func(proto layers.IPProtocol, frag uint16) *layers.IPv4 {
		return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, FragOffset: frag, SrcIP: []byte{127, 0, 0, 1}, DstIP: []byte{127, 0, 0, 1}}
	}
	ip4opts := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: []byte{127, 0, 0, 1}, DstIP: []byte{127, 0, 0, 1},
		Options: []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 1}}} // NOPs: a 24-byte header
	ip6 := func(next layers.IPProtocol) *layers.IPv6 {
		return &layers.IPv6{Version: 6, NextHeader: next, HopLimit: 64, SrcIP: make([]byte, 16), DstIP: make([]byte, 16)}
	}
	tcp := func(src, dst int) *layers.TCP {
		return &layers.TCP{SrcPort: layers.TCPPort(src), DstPort: layers.TCPPort(dst), SYN: true, Window: 1}
	}
	payload := gopacket.Payload(make([]byte, 500))
	udp := &layers.UDP{SrcPort: 5432, DstPort: 5432}
	tests := []struct {
		name string
		lt   layers.LinkType
		data []byte
		keep bool
	}{
		{"ipv4 to a port", layers.LinkTypeEthernet, frame(t, eth, ip4(layers.IPProtocolTCP, 0), tcp(40000, 5432), payload), true},
		{"ipv4 from a port", layers.LinkTypeEthernet, frame(t, eth, ip4(layers.IPProtocolTCP, 0), tcp(6379, 40000)), true},
		{"ipv4 with options", layers.LinkTypeEthernet, frame(t, eth, ip4opts, tcp(40000, 6379)), true},
		{"ipv4 another port", layers.LinkTypeEthernet, frame(t, eth, ip4(layers.IPProtocolTCP, 0), tcp(40000, 1)), false},
		{"ipv4 udp", layers.LinkTypeEthernet, frame(t, eth, ip4(layers.IPProtocolUDP, 0), udp), false},
		{"ipv4 later fragment", layers.LinkTypeEthernet, frame(t, eth, ip4(layers.IPProtocolTCP, 100), tcp(40000, 5432)), false},
		{"ipv6 to a port", layers.LinkTypeEthernet, frame(t, eth6, ip6(layers.IPProtocolTCP), tcp(40000, 5432), payload), true},
		{"ipv6 another port", layers.LinkTypeEthernet, frame(t, eth6, ip6(layers.IPProtocolTCP), tcp(40000, 80)), false},
		{"ipv6 extension header", layers.LinkTypeEthernet, frame(t, eth6, ip6(layers.IPProtocolIPv6HopByHop)), false},
		{"arp", layers.LinkTypeEthernet, frame(t, &layers.Ethernet{SrcMAC: mac, DstMAC: mac, EthernetType: layers.EthernetTypeARP}, payload), false},
		{"raw ipv4 to a port", layers.LinkTypeRaw, frame(t, ip4(layers.IPProtocolTCP, 0), tcp(40000, 5432), payload), true},
		{"raw ipv6 from a port", layers.LinkTypeRaw, frame(t, ip6(layers.IPProtocolTCP), tcp(6379, 40000)), true},
		{"raw another port", layers.LinkTypeRaw, frame(t, ip4(layers.IPProtocolTCP, 0), tcp(40000, 443)), false},
	}
	for _, tt := range tests {
		prog, err := kernelFilter(tt.lt, true, ports, snap)
		if err != nil {
			t.Fatal(err)
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		n, err := vm.Run(tt.data)
		want := 0
		if tt.keep {
			want = snap // the kernel cuts the packet to it
		}
		if err != nil || n != want {
			t.Errorf("%s: kept %d bytes (%v), want %d", tt.name, n, err, want)
		}
	}
	if _, err := bpf.Assemble(mustFilter(t, false)); err != nil {
		t.Errorf("the loopback filter does not assemble: %v", err)
	}
}

func mustFilter(t *testing.T, outgoing bool) []bpf.Instruction {
	t.Helper()
	prog, err := kernelFilter(layers.LinkTypeEthernet, outgoing, []int{1, 2, 3}, DefaultSnapLen)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}
