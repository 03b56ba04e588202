package framework

import (
	"net"
	"testing"
)

// FreeAddr returns a 127.0.0.1 address that was free a moment ago, for a server the test starts.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// FreePort is FreeAddr's port.
func FreePort(t testing.TB) int {
	t.Helper()
	addr, err := net.ResolveTCPAddr("tcp", FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	return addr.Port
}
