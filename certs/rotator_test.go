package certs

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for rotation tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newMemoryRotator(t *testing.T, clock *fakeClock) *Rotator {
	t.Helper()
	r, err := New(context.Background(), nil, Options{
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		CAValidity: 300 * 24 * time.Hour, CertValidity: 30 * 24 * time.Hour,
		BundlePropagationDelay: time.Millisecond, Now: clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func served(t *testing.T, r *Rotator) *x509.Certificate {
	t.Helper()
	c, err := r.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Leaf
}

// verify checks that leaf is trusted by the rotator's bundle for name at now.
func verify(t *testing.T, r *Rotator, leaf *x509.Certificate, name string, now time.Time) error {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(r.CABundle()) {
		t.Fatal("bundle does not parse")
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: now})
	return err
}

func TestRotatorIssuesTrustedCertificate(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r := newMemoryRotator(t, clock)
	leaf := served(t, r)
	for _, name := range []string{"localhost", "127.0.0.1"} {
		if err := verify(t, r, leaf, name, clock.Now()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := verify(t, r, leaf, "other.example", clock.Now()); err == nil {
		t.Error("certificate verified for a name it does not have")
	}
	if got, want := leaf.NotAfter.Sub(clock.Now()), 30*24*time.Hour; got != want {
		t.Errorf("validity %s, want %s", got, want)
	}
}

func TestRotatorRenewsServingCertificateWhenDue(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r := newMemoryRotator(t, clock)
	first, bundle := served(t, r), r.CABundle()

	clock.Add(15 * 24 * time.Hour) // half of the validity left: not due
	if err := r.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if served(t, r).SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Fatal("renewed before a third of the validity was left")
	}
	clock.Add(6 * 24 * time.Hour) // 9 of 30 days left (plus the backdate): due
	if err := r.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	second := served(t, r)
	if second.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatal("not renewed when due")
	}
	if string(r.CABundle()) != string(bundle) {
		t.Error("CA changed although only the serving certificate was due")
	}
	if err := verify(t, r, second, "localhost", clock.Now()); err != nil {
		t.Error(err)
	}
}

func TestRotatorRenewsCAWithOverlap(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r := newMemoryRotator(t, clock)
	oldLeaf := served(t, r)
	if err := r.Rotate(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	newLeaf := served(t, r)
	certs, err := parseCerts(r.CABundle())
	if err != nil || len(certs) != 2 {
		t.Fatalf("bundle after CA rotation has %d CAs (%v), want the new and the old", len(certs), err)
	}
	for name, leaf := range map[string]*x509.Certificate{"old": oldLeaf, "new": newLeaf} {
		if err := verify(t, r, leaf, "localhost", clock.Now()); err != nil {
			t.Errorf("%s serving certificate not trusted by the bundle: %v", name, err)
		}
	}
	// Once the old CA has expired it leaves the bundle.
	clock.Add(301 * 24 * time.Hour)
	if err := r.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	certs, _ = parseCerts(r.CABundle())
	for _, c := range certs {
		if clock.Now().After(c.NotAfter) {
			t.Errorf("expired CA %s still in the bundle", c.Subject.CommonName)
		}
	}
}

func TestRotatorServesOverTLSAndHotReloads(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	r := newMemoryRotator(t, clock)
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	r.TLSOption()(cfg)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	handshake := func() *x509.Certificate {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(r.CABundle())
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0]
	}
	before := handshake()
	if err := r.Rotate(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	after := handshake()
	if before.SerialNumber.Cmp(after.SerialNumber) == 0 {
		t.Error("the listener still serves the old certificate after rotation")
	}
}

func TestDue(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &x509.Certificate{NotBefore: start, NotAfter: start.Add(90 * time.Hour)}
	tests := []struct {
		at   time.Duration
		want bool
	}{
		{0, false}, {59 * time.Hour, false}, {60 * time.Hour, true}, {89 * time.Hour, true}, {91 * time.Hour, true},
	}
	for _, tt := range tests {
		if got := due(c, start.Add(tt.at)); got != tt.want {
			t.Errorf("due at +%s = %v, want %v", tt.at, got, tt.want)
		}
	}
}

func TestServingFits(t *testing.T) {
	now := time.Now()
	ca, err := newCA(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := newCA(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ips := []net.IP{net.IPv4(127, 0, 0, 1)}
	s, err := newServing(ca, []string{"svc", "svc.ns"}, ips, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ca   *keyPair
		dns  []string
		ips  []net.IP
		want bool
	}{
		{"same", ca, []string{"svc", "svc.ns"}, ips, true},
		{"same names in another order", ca, []string{"svc.ns", "svc"}, ips, true},
		{"one more name", ca, []string{"svc", "svc.ns", "svc.ns.svc"}, ips, false},
		{"other CA", other, []string{"svc", "svc.ns"}, ips, false},
		{"other names", ca, []string{"svc"}, ips, false},
		{"other IPs", ca, []string{"svc", "svc.ns"}, nil, false},
	}
	for _, tt := range tests {
		if got := servingFits(s, tt.ca, tt.dns, tt.ips); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestServingNotAfterCA(t *testing.T) {
	now := time.Now()
	ca, err := newCA(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newServing(ca, []string{"x"}, nil, now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if s.cert.NotAfter.After(ca.cert.NotAfter) {
		t.Errorf("serving certificate outlives its CA: %s > %s", s.cert.NotAfter, ca.cert.NotAfter)
	}
}

func TestParseKeyPairRejectsMismatch(t *testing.T) {
	now := time.Now()
	a, _ := newCA(now, time.Hour)
	b, _ := newCA(now, time.Hour)
	if _, err := parseKeyPair(a.certPEM, b.keyPEM); err == nil {
		t.Error("mismatched key accepted")
	}
	kp, err := parseKeyPair(a.certPEM, a.keyPEM)
	if err != nil || !kp.cert.Equal(a.cert) {
		t.Errorf("round trip: %v", err)
	}
}

// TestParseKeyPairKeyEncodings: a Secret written by another tool (PKCS#8 or PKCS#1 keys, e.g.
// cert-manager's default) or by an older statusfold (SEC 1 "EC PRIVATE KEY") is read as is.
func TestParseKeyPairKeyEncodings(t *testing.T) {
	now := time.Now()
	ca, err := newCA(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalECPrivateKey(ca.key.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})
	tests := []struct {
		name    string
		keyPEM  []byte
		wantErr bool
	}{
		{"PKCS#8", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), false},
		{"SEC 1", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER}), false},
		{"PKCS#1 key of another certificate", rsaPEM, true},
		{"not a key", ca.certPEM, true},
		{"empty", nil, true},
	}
	for _, tt := range tests {
		kp, err := parseKeyPair(ca.certPEM, tt.keyPEM)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: error %v, want error %v", tt.name, err, tt.wantErr)
			continue
		}
		if err == nil && (!kp.cert.Equal(ca.cert) || !bytes.Equal(kp.certPEM, ca.certPEM)) {
			t.Errorf("%s: parsed another certificate", tt.name)
		}
	}
}

// BenchmarkNewCAAndServing is the cost of one rotation's key and certificate generation.
func BenchmarkNewCAAndServing(b *testing.B) {
	now := time.Now()
	for b.Loop() {
		ca, err := newCA(now, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := newServing(ca, ServiceDNSNames("svc", "ns"), nil, now, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
}
