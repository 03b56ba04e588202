package certs

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"time"

	"github.com/go-logr/logr"
)

// mergeBundles is the CA bundle injected into the webhook configurations: every certificate of
// bundles (the Secret's, the configuration's, the replica's own) that has not expired at now,
// once each, ordered by NotAfter, latest first, then by SHA-256 fingerprint. The order depends
// only on the set, so replicas that hold different bundles in memory compute the same bytes
// once they read the same Secret and configuration, and stop writing. Blocks that are not
// certificates, or do not parse, are left out with a log line.
func mergeBundles(now time.Time, logger logr.Logger, bundles ...[]byte) []byte {
	type entry struct {
		fp   [sha256.Size]byte
		cert *x509.Certificate
	}
	var all []entry
	seen := map[[sha256.Size]byte]bool{}
	for _, b := range bundles {
		for _, c := range decodeBundle(logger, b) {
			fp := sha256.Sum256(c.Raw)
			if now.After(c.NotAfter) || seen[fp] {
				continue
			}
			seen[fp] = true
			all = append(all, entry{fp, c})
		}
	}
	slices.SortFunc(all, func(a, b entry) int {
		if c := b.cert.NotAfter.Compare(a.cert.NotAfter); c != 0 {
			return c
		}
		return bytes.Compare(a.fp[:], b.fp[:])
	})
	var out bytes.Buffer
	for _, e := range all {
		_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: e.cert.Raw})
	}
	return out.Bytes()
}

// decodeBundle parses the certificates of a PEM bundle one block at a time, skipping (with a
// log line) blocks of another type, certificates that do not parse and trailing data that is
// not PEM.
func decodeBundle(logger logr.Logger, bundle []byte) []*x509.Certificate {
	var out []*x509.Certificate
	rest := bundle
	for {
		block, next := pem.Decode(rest)
		if block == nil {
			if len(bytes.TrimSpace(rest)) > 0 {
				logger.Info("skipping CA bundle data that is not PEM", "bytes", len(rest))
			}
			return out
		}
		rest = next
		if block.Type != "CERTIFICATE" {
			logger.Info("skipping a CA bundle block that is not a certificate", "type", block.Type)
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			logger.Info("skipping a CA bundle certificate that does not parse", "error", err.Error())
			continue
		}
		out = append(out, c)
	}
}
