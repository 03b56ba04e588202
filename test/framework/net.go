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

// FreeAddrs are n distinct free loopback addresses (LoopbackAddrs), failing t when there are none.
func FreeAddrs(t testing.TB, n int) []string {
	t.Helper()
	addrs, err := LoopbackAddrs(n)
	if err != nil {
		t.Fatal(err)
	}
	return addrs
}

// LoopbackAddrs are n distinct 127.0.0.1 addresses that were free a moment ago. All n listeners
// are open at once before any is closed: asking for one address at a time can give the same port
// twice (the kernel may hand a just-closed port out again), and a process whose two servers get
// one address fails.
func LoopbackAddrs(n int) ([]string, error) {
	addrs := make([]string, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		addrs[i] = l.Addr().String()
	}
	return addrs, nil
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
