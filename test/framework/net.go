package framework

import (
	"net"
	"testing"
)

// FreeAddr returns a 127.0.0.1 address that was free a moment ago, for a server the test starts.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return FreeAddrs(t, 1)[0]
}

// FreeAddrs are n distinct free loopback addresses. All n listeners are open at once before any
// is closed: asking for one address at a time can give the same port twice (the kernel may hand
// a just-closed port out again), and a process whose two servers get one address fails.
func FreeAddrs(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs[i] = l.Addr().String()
	}
	return addrs
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
