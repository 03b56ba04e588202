// Command crdfix completes generated CRD files where controller-gen cannot: a schemaless array
// (the recursive CombinedStatus Value.array) gets `items: {type: object,
// x-kubernetes-preserve-unknown-fields: true}`, since structural schemas require items.
//
//	go run ./hack/crdfix FILE...
package main

import (
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

func main() {
	for _, f := range os.Args[1:] {
		if err := fix(f); err != nil {
			fmt.Fprintf(os.Stderr, "crdfix: %s: %v\n", f, err)
			os.Exit(1)
		}
	}
}

func fix(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return err
	}
	changed := false
	for i := range crd.Spec.Versions {
		if s := crd.Spec.Versions[i].Schema; s != nil && s.OpenAPIV3Schema != nil {
			changed = walk(s.OpenAPIV3Schema) || changed
		}
	}
	if !changed {
		return nil
	}
	out, err := yaml.Marshal(&crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

func walk(s *apiextensionsv1.JSONSchemaProps) bool {
	changed := false
	if s.Type == "array" && s.Items == nil {
		s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", XPreserveUnknownFields: ptr.To(true),
		}}
		changed = true
	}
	for k, p := range s.Properties {
		if walk(&p) {
			s.Properties[k] = p
			changed = true
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		changed = walk(s.Items.Schema) || changed
	}
	return changed
}
