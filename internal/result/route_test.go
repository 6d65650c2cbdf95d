package result

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// TestRecordRoutes: a result written before variants recorded their route
// reads with the route of the --via entry each tunnelled variant's label
// names; a recorded route is kept, a direct variant has none.
func TestRecordRoutes(t *testing.T) {
	r := sample()
	r.Spec.Via = []string{"direct", "ssh://bench:xxxxx@127.0.0.1:2222?cipher=aes256-ctr", "pgbouncer?pool_mode=transaction", "stunnel"}
	r.Variants = []plan.Variant{
		variant("plain"),
		{ID: "ssh aes256-ctr", TLS: "off", Tunnel: "ssh aes256-ctr"},
		{ID: "pgbouncer pool_mode=transaction tls1.3", TLS: "1.3", Tunnel: "pgbouncer pool_mode=transaction"},
		// recorded by a newer tlsbench: kept as it is
		{ID: "stunnel rsa2048", TLS: "off", Key: "rsa2048", Tunnel: "stunnel", Route: plan.RouteInfo{Kind: plan.RouteStunnel, Arg: "kept"}},
		// a label no entry has (a damaged file): left without a route
		{ID: "vpn", TLS: "off", Tunnel: "vpn"},
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(data, "old.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []plan.RouteInfo{
		{},
		{Kind: plan.RouteSSH, Arg: "aes256-ctr"},
		{Kind: plan.RoutePgbouncer, Params: "pool_mode=transaction"},
		{Kind: plan.RouteStunnel, Arg: "kept"},
		{},
	}
	for i, v := range got.Variants {
		if v.Route != want[i] {
			t.Errorf("variant %s: route %+v, want %+v", v.ID, v.Route, want[i])
		}
	}
}

// TestRecordRoutesTestdata: the report's old result with tunnels reads
// with every tunnelled variant's route.
func TestRecordRoutesTestdata(t *testing.T) {
	const file = "../report/testdata/measured-tunnels.json"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), `"route"`) {
		t.Fatalf("%s records routes: it no longer tests a file written before them", file)
	}
	r, err := Decode(data, file)
	if err != nil {
		t.Fatal(err)
	}
	tunnelled := 0
	for _, v := range r.Variants {
		if got := v.Route.Route().Label(); v.Tunnel != "" && (v.Route.Kind == "" || got != v.Tunnel) {
			t.Errorf("variant %s: route %+v, labelled %q, want %q", v.ID, v.Route, got, v.Tunnel)
		}
		if v.Tunnel != "" {
			tunnelled++
		}
	}
	if tunnelled == 0 {
		t.Errorf("%s has no tunnelled variant", file)
	}
}
