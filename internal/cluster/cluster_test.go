package cluster

import "testing"

// TestLinkVerify: a link that is not what the variant asked for
// is an error that says what the server showed.
func TestLinkVerify(t *testing.T) {
	for _, c := range []struct {
		l    Link
		st   LinkState
		want bool
	}{
		{Link{TLS: "off"}, LinkState{}, true},
		{Link{TLS: "off"}, LinkState{Encrypted: true, Version: "TLSv1.3"}, false},
		{Link{TLS: "1.3"}, LinkState{}, false},
		{Link{TLS: "1.3"}, LinkState{Encrypted: true, Version: "TLSv1.2"}, false},
		{Link{TLS: "1.2"}, LinkState{Encrypted: true, Version: "TLSv1.2"}, true},
	} {
		if err := c.l.Verify(c.st); (err == nil) != c.want {
			t.Errorf("%+v against %+v: %v", c.l, c.st, err)
		}
	}
}
