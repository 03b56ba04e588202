package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// readInputs reads the documents of a file, of stdin ("-"), or of the .yaml, .yml and .json
// files of a folder (sorted; sub-folders too when recursive).
func readInputs(path string, recursive bool) ([]document, error) {
	if path == "-" {
		return readDocuments("STDIN", os.Stdin)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return readFile(path)
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != path && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var docs []document
	for _, f := range files {
		d, err := readFile(f)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
	}
	return docs, nil
}

func readFile(path string) ([]document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readDocuments(path, f)
}

// readDocuments splits a YAML stream (or one JSON document) into documents and converts each
// to JSON, rejecting duplicate keys; empty and comment-only documents are skipped.
func readDocuments(name string, r io.Reader) ([]document, error) {
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs []document
	for i := 1; ; i++ {
		data, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSONStrict(data)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		if t := bytes.TrimSpace(js); string(t) == "null" || len(t) == 0 {
			continue
		}
		docs = append(docs, document{file: name, index: i, json: js})
	}
}

// expandLists replaces each `kind: List` document (as `kubectl get -o yaml` writes) by its items.
func expandLists(docs []document) []document {
	var out []document
	for _, d := range docs {
		var list struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Items      []json.RawMessage `json:"items"`
		}
		if json.Unmarshal(d.json, &list) != nil || list.Kind != "List" || list.APIVersion != "v1" {
			out = append(out, d)
			continue
		}
		for _, it := range list.Items {
			out = append(out, document{file: d.file, index: d.index, json: it})
		}
	}
	return out
}
