package certs

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// TestMergeBundles: the bundle injected into the configurations keeps every CA of the Secret,
// of the configuration and of the replica's memory that has not expired, in an order that
// depends only on the set.
func TestMergeBundles(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(at time.Time, validity time.Duration) *x509.Certificate {
		kp, err := newCA(at, validity)
		if err != nil {
			t.Fatal(err)
		}
		return kp.cert
	}
	oldCA := mk(now.Add(-300*24*time.Hour), 2*365*24*time.Hour)
	newCA := mk(now, 2*365*24*time.Hour)
	expired := mk(now.Add(-3*time.Hour), time.Hour)
	twinA, twinB := mk(now, time.Hour), mk(now, time.Hour) // same NotAfter: ordered by fingerprint
	// A certificate block that does not parse, a key block and text that is not PEM: five log
	// lines (text in front of a PEM block, as in the Secret's case, is passed over by pem.Decode).
	garbage := []byte("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n" +
		"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\nnot pem at all\n")
	tests := []struct {
		name             string
		secret, cfg, own []byte
		want             []*x509.Certificate // in this order
		wantLogs         int
	}{
		{"new CA only in the Secret", pemOf(newCA), pemOf(oldCA), pemOf(oldCA), []*x509.Certificate{newCA, oldCA}, 0},
		{"replica holds the old CA in memory", pemOf(newCA, oldCA), pemOf(newCA, oldCA), pemOf(oldCA), []*x509.Certificate{newCA, oldCA}, 0},
		{"configuration has old and new, memory nothing", nil, pemOf(oldCA, newCA), nil, []*x509.Certificate{newCA, oldCA}, 0},
		{"expired CA dropped", pemOf(newCA, expired), pemOf(expired), pemOf(expired, newCA), []*x509.Certificate{newCA}, 0},
		{"garbage PEM skipped", append(garbage, pemOf(newCA)...), garbage, pemOf(oldCA), []*x509.Certificate{newCA, oldCA}, 5},
		{"same NotAfter by fingerprint", pemOf(twinB), pemOf(twinA), nil, fingerprintOrder(twinA, twinB), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs []string
			logger := funcr.New(func(_, args string) { logs = append(logs, args) }, funcr.Options{})
			got := mergeBundles(now, logger, tt.secret, tt.cfg, tt.own)
			if want := pemOf(tt.want...); !bytes.Equal(got, want) {
				t.Errorf("merged bundle:\n%s\nwant:\n%s", got, want)
			}
			if len(logs) != tt.wantLogs {
				t.Errorf("%d log lines, want %d: %s", len(logs), tt.wantLogs, strings.Join(logs, "\n"))
			}
			// Any order of the inputs, as another replica would see them, gives the same bytes.
			if again := mergeBundles(now, logr.Discard(), tt.own, tt.cfg, tt.secret); !bytes.Equal(again, got) {
				t.Errorf("another order of the inputs gives another bundle:\n%s\nvs\n%s", again, got)
			}
		})
	}
}

func pemOf(cs ...*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range cs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

// fingerprintOrder is a and b in the order mergeBundles gives certificates with the same NotAfter.
func fingerprintOrder(a, b *x509.Certificate) []*x509.Certificate {
	if bytes.Compare(fingerprint(a), fingerprint(b)) > 0 {
		return []*x509.Certificate{b, a}
	}
	return []*x509.Certificate{a, b}
}

func fingerprint(c *x509.Certificate) []byte {
	fp := sha256.Sum256(c.Raw)
	return fp[:]
}
