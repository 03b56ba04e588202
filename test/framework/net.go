package framework

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
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

// LoopbackAddrs are n distinct 127.0.0.1 addresses that were free a moment ago, on ports below
// the kernel's ephemeral range (ReservedPorts). A port from the ephemeral range (a listener on
// port 0) can be handed out again, between the moment it was found free and the moment the
// server started by the test binds it, to any process's outgoing connection or port-0 listener —
// on a busy machine that happens. All n listeners are open at once before any is closed, so the n
// ports are distinct; each is tried on every interface, as servers that take only a port bind.
func LoopbackAddrs(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for tries := 0; len(addrs) < n; tries++ {
		if tries == 1000 {
			return nil, errors.New("no free port below the ephemeral range")
		}
		port := ReservedPorts.Lo + rand.IntN(ReservedPorts.Hi-ReservedPorts.Lo)
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		defer l.Close()
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(port))
	}
	return addrs, nil
}

// ReservedPorts is where LoopbackAddrs picks ports: below Linux's default ephemeral range
// (32768–60999), above the ports services commonly use.
var ReservedPorts = struct{ Lo, Hi int }{20000, 32768}

// FreePort is FreeAddr's port.
func FreePort(t testing.TB) int {
	t.Helper()
	addr, err := net.ResolveTCPAddr("tcp", FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	return addr.Port
}
