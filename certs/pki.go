package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// keyPair is a certificate with its key, parsed and PEM-encoded.
type keyPair struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

// backdate makes new certificates valid a little before now, for clocks that lag.
const backdate = 5 * time.Minute

// newKey makes a P-256 key and a random serial number for a new certificate.
func newKey() (*ecdsa.PrivateKey, *big.Int, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return key, serial, err
}

// newCA makes a self-signed CA certificate.
func newCA(now time.Time, validity time.Duration) (*keyPair, error) {
	key, serial, err := newKey()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("statusfold-webhook-ca@%d", now.Unix()), Organization: []string{"statusfold"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return sign(tmpl, tmpl, key, key)
}

// newServing makes a serving certificate for dnsNames and ips, signed by ca.
func newServing(ca *keyPair, dnsNames []string, ips []net.IP, now time.Time, validity time.Duration) (*keyPair, error) {
	key, serial, err := newKey()
	if err != nil {
		return nil, err
	}
	cn := "statusfold-webhook"
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"statusfold"}},
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	return sign(tmpl, ca.cert, key, ca.key)
}

func sign(tmpl, parent *x509.Certificate, key, parentKey *ecdsa.PrivateKey) (*keyPair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// parseKeyPair parses a PEM certificate (the first in certPEM) and its EC key.
func parseKeyPair(certPEM, keyPEM []byte) (*keyPair, error) {
	certs, err := parseCerts(certPEM)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("no PEM key")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	if !key.PublicKey.Equal(certs[0].PublicKey) {
		return nil, errors.New("key does not match certificate")
	}
	first, _ := pem.Decode(certPEM)
	return &keyPair{cert: certs[0], key: key, certPEM: pem.EncodeToMemory(first), keyPEM: keyPEM}, nil
}

// parseCerts parses every certificate of a PEM bundle.
func parseCerts(bundle []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate")
	}
	return out, nil
}

// due says whether a certificate should be renewed at now: when less than a third of its
// validity is left.
func due(c *x509.Certificate, now time.Time) bool {
	lifetime := c.NotAfter.Sub(c.NotBefore)
	return !now.Before(c.NotAfter.Add(-lifetime / 3))
}

// servingFits says whether serving is signed by ca and names exactly dnsNames and ips.
func servingFits(serving, ca *keyPair, dnsNames []string, ips []net.IP) bool {
	if serving.cert.CheckSignatureFrom(ca.cert) != nil {
		return false
	}
	if !slices.Equal(serving.cert.DNSNames, dnsNames) {
		return false
	}
	return slices.EqualFunc(serving.cert.IPAddresses, ips, func(a, b net.IP) bool { return a.Equal(b) })
}

// bundleOf encodes CA certificates as one PEM bundle, leaving out those expired at now.
func bundleOf(now time.Time, cas ...*x509.Certificate) []byte {
	var b bytes.Buffer
	seen := map[string]bool{}
	for _, c := range cas {
		if c == nil || now.After(c.NotAfter) || seen[string(c.Raw)] {
			continue
		}
		seen[string(c.Raw)] = true
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

// tlsCertificate turns a serving key pair into what a TLS server presents.
func tlsCertificate(kp *keyPair) (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(kp.certPEM, kp.keyPEM)
	if err != nil {
		return nil, err
	}
	c.Leaf = kp.cert
	return &c, nil
}
