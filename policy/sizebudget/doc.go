// Package sizebudget is the rule that keeps what statusfold writes within an object size budget
// (docs/rules.md "Size budget"): a CombinedStatus loses whole rows from the end of its largest
// results, a returned status loses whole list entries from the end of its largest lists, and
// each says so in the object itself. It is pure — plain inputs, plain results, no Kubernetes
// client — so the controller and the CLI apply and read the same rule.
package sizebudget
