package aggregation

import (
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// deniedBuiltins are the builtins that reach outside the module's input: network, clock,
// randomness, the environment, files. Every builtin whose name starts with one of these is removed
// (so crypto.x509.parse_and_verify_certificates_with_options goes with its sibling).
var deniedBuiltins = []string{
	"http.send",    // network
	"net.",         // DNS lookups (and the pure CIDR helpers with them)
	"time.now_ns",  // clock
	"opa.runtime",  // environment, configuration
	"rand.intn",    // randomness
	"uuid.rfc4122", // randomness
	"crypto.x509.parse_and_verify_certificates", // verifies against the clock
	"io.jwt.decode_verify",                      // verifies against the clock
	"providers.aws.sign_req",                    // signs with the clock
	"json.match_schema",                         // schema $ref can read files (file://) or fetch URLs
	"json.verify_schema",                        // same loader
	"print",                                     // output outside the result
	"trace",                                     // output outside the result
}

func denied(name string) bool {
	for _, d := range deniedBuiltins {
		if strings.HasPrefix(name, d) {
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
