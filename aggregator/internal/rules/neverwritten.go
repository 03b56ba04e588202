package rules

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NeverWritten are the resources whose objects statusfold never writes (docs/rules.md "Status return").
var NeverWritten = map[schema.GroupResource]bool{
	{Group: "", Resource: "namespaces"}:                                    true,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: true,
}
