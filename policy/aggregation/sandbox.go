package aggregation

import (
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// deniedBuiltins are the builtins that reach outside the module's input: network, clock,
// randomness, the environment. Every name that starts with one of these prefixes is removed.
var deniedBuiltins = []string{
	"http.send",
	"net.",
	"time.now_ns",
	"opa.runtime",
	"rand.intn",
	"uuid.rfc4122",
	"crypto.x509.parse_and_verify_certificates",
	"io.jwt.decode_verify",
	"providers.aws.sign_req",
	"print",
	"trace",
}

func denied(name string) bool {
	for _, d := range deniedBuiltins {
		if name == d || (strings.HasSuffix(d, ".") && strings.HasPrefix(name, d)) {
			return true
		}
	}
	return false
}

// SandboxCapabilities returns the OPA capabilities aggregation modules are compiled with: this OPA
// version's builtins without those that reach the network, the clock, randomness or the
// environment, and no allowed hosts.
func SandboxCapabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	kept := c.Builtins[:0:0]
	for _, b := range c.Builtins {
		if !denied(b.Name) {
			kept = append(kept, b)
		}
	}
	c.Builtins = kept
	c.AllowNet = []string{}
	return c
}
