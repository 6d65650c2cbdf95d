package server

// Ready is the one line `tlsbench serve --json` prints once it listens,
// and what the lab reads to learn where the built-in server is: the plain
// listener's host:port and each key type's HTTPS listener's.
type Ready struct {
	HTTP  string            `json:"http"`
	HTTPS map[string]string `json:"https"`
	// MTLS maps each key type to its listener that demands a client
	// certificate (serve --client-ca).
	MTLS map[string]string `json:"mtls,omitempty"`
}

// Ready describes s's listeners as its ready line does.
func (s *Server) Ready() Ready {
	return Ready{HTTP: s.HTTPAddr(), HTTPS: s.HTTPSAddrs(), MTLS: s.MTLSAddrs()}
}
