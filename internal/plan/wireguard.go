package plan

// WireGuard as a path (--via wireguard): wireguard-go between a network
// namespace of tlsbench's and the lab server's, the database protocol
// plain inside.
func init() {
	routeKinds[RouteWireGuard] = routeKind{usage: "wireguard", check: checkWireGuard}
}

func checkWireGuard(_ Route, _ *Spec, t Target) error {
	switch {
	case t.Lab == "":
		return errorf("⟨via⟩ wireguard puts the lab server behind a VPN tlsbench builds: use ⟨lab⟩ postgres, mariadb or redis")
	case t.Scheme != "postgres" && t.Scheme != "mysql" && t.Scheme != "redis":
		return errorf("⟨via⟩ wireguard is built for the lab PostgreSQL, MariaDB and Redis, which listen on its tunnel address: use one of them")
	}
	return nil
}
