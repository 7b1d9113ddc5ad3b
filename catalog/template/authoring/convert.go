package authoring

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"sigs.k8s.io/yaml"

	"github.com/catalogbot/catalogbot/catalog/template"
)

// Convert turns a file-based catalog (one file's bytes: a stream of JSON objects or of YAML documents) into
// the basic template `opm alpha convert-template basic` prints, byte for byte, in "json" or "yaml": every
// blob becomes an entry as opm re-encodes it (keys sorted, numbers as JSON floats, no HTML escaping), except
// olm.bundle blobs, which keep only their schema and image — what a basic template names a bundle by.
//
// The stream is read as opm reads it: JSON when its first non-space byte is '{' (falling back to YAML after
// at most one object, as Kubernetes' YAML-or-JSON decoder does), else YAML documents split on lines starting
// with "---" (only a comment may follow the marker). An error says which blob could not be read; opm prints
// nothing then either.
func Convert(data []byte, format string) ([]byte, error) {
	if format != "json" && format != "yaml" {
		return nil, fmt.Errorf("unknown output %q (want json or yaml)", format)
	}
	metas, err := convertMetas(data)
	if err != nil {
		return nil, err
	}
	// nil, not empty, when the input holds no blob at all (an empty file): opm prints "entries": null then.
	var entries []convertMeta
	for i, m := range metas {
		if m.schema == "olm.bundle" {
			var b convertBundle
			if err := json.Unmarshal(m.blob, &b); err != nil {
				return nil, fmt.Errorf("blob %d: parse bundle: %v", i+1, err)
			}
			blob, err := json.Marshal(struct {
				Schema string `json:"schema"`
				Image  string `json:"image"`
			}{b.Schema, b.Image})
			if err != nil {
				return nil, fmt.Errorf("blob %d: re-serialize bundle: %v", i+1, err)
			}
			m.blob = blob
		}
		entries = append(entries, m)
	}
	// opm ignores this error: a blob that decoded to nothing (a YAML document of comments only) makes the
	// whole output empty, and so it does here.
	out, _ := json.MarshalIndent(struct {
		Schema  string        `json:"schema"`
		Entries []convertMeta `json:"entries"`
	}{template.SchemaBasic, entries}, "", "    ")
	if format == "json" {
		return append(out, '\n'), nil
	}
	y, err := yaml.JSONToYAML(out)
	if err != nil {
		return nil, err
	}
	return append(append([]byte("---\n"), y...), '\n'), nil
}

// convertMeta is one blob as opm's declcfg.Meta holds it: the schema and the re-encoded blob.
type convertMeta struct {
	schema string
	blob   json.RawMessage
}

// MarshalJSON writes the blob as it is (nil when it decoded to nothing, which fails the encoding).
func (m convertMeta) MarshalJSON() ([]byte, error) { return m.blob, nil }

// convertBundle has the types of opm's declcfg.Bundle fields, so that a blob opm cannot read as a bundle
// fails here too.
type convertBundle struct {
	Schema     string `json:"schema"`
	Name       string `json:"name,omitempty"`
	Package    string `json:"package,omitempty"`
	Image      string `json:"image"`
	Properties []struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"properties,omitempty"`
	RelatedImages []struct {
		Name  string `json:"name"`
		Image string `json:"image"`
	} `json:"relatedImages,omitempty"`
}

// metaFromJSON is declcfg.Meta's decoding: a JSON object (or null), re-encoded with its keys sorted, its
// numbers as float64 and no HTML escaping; schema, package and name found case-insensitively, each key at
// most once under case folding and a string when present.
func metaFromJSON(raw []byte) (convertMeta, error) {
	blobMap := map[string]any{}
	if err := json.Unmarshal(raw, &blobMap); err != nil {
		return convertMeta{}, err
	}
	folder := cases.Fold()
	keys := map[string][]string{}
	for k := range blobMap {
		f := folder.String(k)
		keys[f] = append(keys[f], k)
	}
	var dups []string
	for f, ks := range keys {
		if len(ks) > 1 {
			sort.Strings(ks)
			dups = append(dups, fmt.Sprintf("duplicate keys for key %q: %v", f, ks))
		}
	}
	if len(dups) > 0 {
		sort.Strings(dups)
		return convertMeta{}, errors.New(fmt.Sprint(dups))
	}
	var m convertMeta
	for _, field := range []string{"schema", "package", "name"} {
		ks := keys[folder.String(field)]
		if len(ks) == 0 {
			continue
		}
		v, ok := blobMap[ks[0]].(string)
		if !ok {
			return convertMeta{}, fmt.Errorf("expected value for key %q to be a string, got %v", ks[0], blobMap[ks[0]])
		}
		if field == "schema" {
			m.schema = v
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(blobMap); err != nil {
		return convertMeta{}, err
	}
	m.blob = buf.Bytes()
	return m, nil
}

// convertMetas reads the blobs of one file as opm's declcfg.WalkMetasReader does.
func convertMetas(data []byte) ([]convertMeta, error) {
	peek := data
	if len(peek) > 4096 {
		peek = peek[:4096]
	}
	off := 0
	var metas []convertMeta
	if bytes.HasPrefix(bytes.TrimLeftFunc(peek, unicode.IsSpace), []byte("{")) {
		for {
			dec := json.NewDecoder(bytes.NewReader(data[off:]))
			var raw json.RawMessage
			err := dec.Decode(&raw)
			if err == nil {
				m, err := metaFromJSON(raw)
				if err != nil {
					return nil, fmt.Errorf("blob %d: %v", len(metas)+1, err)
				}
				metas = append(metas, m)
				off += int(dec.InputOffset())
				continue
			}
			if err == io.EOF {
				return metas, nil
			}
			if len(metas) > 1 {
				return nil, fmt.Errorf("blob %d: %v", len(metas)+1, err)
			}
			// Not (only) JSON: the rest is read as YAML, from after the whitespace up to the first newline.
			off += leadingSpaceThroughNewline(data[off:])
			break
		}
	}
	docs, err := yamlDocuments(data[off:])
	if err != nil {
		return nil, err
	}
	for _, doc := range docs {
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("blob %d: %v", len(metas)+1, err)
		}
		if string(bytes.TrimSpace(j)) == "null" {
			metas = append(metas, convertMeta{}) // decoded to nothing: no blob
			continue
		}
		m, err := metaFromJSON(j)
		if err != nil {
			return nil, fmt.Errorf("blob %d: %v", len(metas)+1, err)
		}
		metas = append(metas, m)
	}
	return metas, nil
}

func leadingSpaceThroughNewline(b []byte) int {
	n := 0
	for n < len(b) {
		r, sz := utf8.DecodeRune(b[n:])
		if !unicode.IsSpace(r) {
			return n
		}
		n += sz
		if r == '\n' {
			return n
		}
	}
	return n
}

// yamlDocuments splits a YAML stream into documents as Kubernetes' YAMLReader does: a line starting with
// "---" (only spaces and a comment may follow the marker) ends the document before it, or begins one when
// none is open.
func yamlDocuments(data []byte) ([][]byte, error) {
	var docs [][]byte
	var cur []byte
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i+1], data[i+1:]
		} else {
			data = nil
		}
		if bytes.HasPrefix(line, []byte("---")) {
			rest := bytes.TrimSpace(line[3:])
			if len(rest) > 0 && rest[0] != '#' {
				return nil, fmt.Errorf("invalid YAML document separator: %s", rest)
			}
			if len(cur) > 0 {
				docs = append(docs, cur)
				cur = nil
				continue
			}
			// A marker that starts a document stays in it (so "---" alone is a document of nothing).
		}
		cur = append(cur, line...)
	}
	if len(cur) > 0 {
		docs = append(docs, cur)
	}
	return docs, nil
}
