// Package classifier is the pure engine for ContentClassifier objects (docs/rules.md "ContentClassifier"): it validates
// them and applies their `dontPropagatePointers` under `status` to reported state.
//
// It imports no client-go or controller-runtime; the admission webhook, `statusfold validate`
// and the controller all call it.
//
//	errs := classifier.Validate(cc)             // field errors, for admission and .status.errors
//	p := classifier.NewPruner(cc)               // compile once per ContentClassifier generation
//	status = p.Prune(status)                    // remove the non-propagating parts of a reported status
//	status = classifier.Prune(status, cc)       // the same, one shot
//
// A ContentClassifier's name is `resource.version.group` (`resource.version` for the core
// group); ParseName turns it into the GroupVersionResource it applies to.
//
// Pruning uses only the valid `dontPropagatePointers` whose first token is "status", with that
// token removed: invalid entries are ignored, as docs/rules.md "ContentClassifier" says, so a classifier that got in while
// the webhook was away still applies its valid overrides. Prune never modifies its input: it
// copies the maps and lists along the pruned paths and shares everything else, so its result
// must be treated as read-only too. A pointer token addresses a map key, or a list element when
// it is a decimal index without leading zeros ("0", "12"); a pointer that names nothing present
// is a no-op. List indices refer to the list as reported (removing element 0 does not shift the
// meaning of a second pointer to element 1).
package classifier
