package certs

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/cert-manager/cert-manager/pkg/util/pki"
)

// keyPair is a certificate with its key, parsed and PEM-encoded.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

// backdate makes new certificates valid a little before now, for clocks that lag.
const backdate = 5 * time.Minute

// newCA makes a self-signed CA certificate.
func newCA(now time.Time, validity time.Duration) (*keyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("statusfold-webhook-ca@%d", now.Unix()), Organization: []string{"statusfold"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return sign(tmpl, nil)
}

// servingCommonName is the serving certificate's subject common name: its first DNS name.
func servingCommonName(dnsNames []string) string {
	if len(dnsNames) > 0 {
		return dnsNames[0]
	}
	return "statusfold-webhook"
}

// newServing makes a serving certificate for dnsNames and ips, signed by ca.
func newServing(ca *keyPair, dnsNames []string, ips []net.IP, now time.Time, validity time.Duration) (*keyPair, error) {
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: servingCommonName(dnsNames), Organization: []string{"statusfold"}},
		NotBefore:   now.Add(-backdate),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    dnsNames,
		IPAddresses: ips,
	}
	return sign(tmpl, ca)
}

// sign makes a new P-256 key and a random serial number for tmpl and signs it with issuer
// (self-signed when issuer is nil), using cert-manager's pki (which picks the signature
// algorithm from the signer's key).
func sign(tmpl *x509.Certificate, issuer *keyPair) (*keyPair, error) {
	key, err := pki.GenerateECPrivateKey(pki.ECCurve256)
	if err != nil {
		return nil, err
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)); err != nil {
		return nil, err
	}
	parent, signer := tmpl, crypto.Signer(key)
	if issuer != nil {
		parent, signer = issuer.cert, issuer.key
	}
	certPEM, cert, err := pki.SignCertificate(tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, err
	}
	keyPEM, err := pki.EncodeECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// parseKeyPair parses a PEM certificate (the first in certPEM) and its key (PKCS#8, EC or
// PKCS#1). cert-manager's decoders bound the size of what they read.
func parseKeyPair(certPEM, keyPEM []byte) (*keyPair, error) {
	certs, err := parseCerts(certPEM)
	if err != nil {
		return nil, err
	}
	key, err := pki.DecodePrivateKeyBytes(keyPEM)
	if err != nil {
		return nil, err
	}
	if ok, err := pki.PublicKeyMatchesCertificate(key.Public(), certs[0]); err != nil || !ok {
		return nil, errors.New("key does not match certificate")
	}
	first, err := pki.EncodeX509(certs[0])
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: certs[0], key: key, certPEM: first, keyPEM: keyPEM}, nil
}

// parseCerts parses every certificate of a PEM bundle.
func parseCerts(bundle []byte) ([]*x509.Certificate, error) {
	return pki.DecodeX509CertificateSetBytes(bundle)
}

// due says whether a certificate should be renewed at now: when less than a third of its
// validity is left (cert-manager's default renewal time, computed by its pki).
func due(c *x509.Certificate, now time.Time) bool {
	at, err := pki.RenewalTime(c.NotBefore, c.NotAfter, nil, nil, nil)
	return err != nil || at == nil || !now.Before(at.Time)
}

// servingFits says whether serving is signed by ca and names exactly dnsNames and ips (in any
// order; cert-manager's SAN comparison).
func servingFits(serving, ca *keyPair, dnsNames []string, ips []net.IP) bool {
	if serving.cert.CheckSignatureFrom(ca.cert) != nil {
		return false
	}
	spec := cmapi.CertificateSpec{CommonName: servingCommonName(dnsNames), DNSNames: dnsNames, IPAddresses: pki.IPAddressesToString(ips)}
	return len(pki.FuzzyX509AltNamesMatchSpec(serving.cert, spec)) == 0
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
