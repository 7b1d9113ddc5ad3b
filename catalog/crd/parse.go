package crd

import (
	"context"
	"fmt"

	"github.com/catalogbot/catalogbot/catalog"
)

// MaxFileSize is the largest CRD file Parse reads. The biggest real CRD
// bundles are a few MB.
const MaxFileSize = 64 << 20

// Parse reads every document of a CRD file (YAML or JSON, one or many
// documents). name labels positions. Each problem is a finding with file and
// line; a document that is not a CRD is one of them. err is non-nil when any
// finding has error severity: the file cannot be judged as a whole.
func Parse(name string, data []byte) ([]*CRD, []catalog.Finding, error) {
	crds, fs := parse(name, data, false)
	return crds, fs, firstError(fs)
}

// ParseManifests is Parse for a bundle's manifests: documents that are not
// CRDs (a ClusterServiceVersion, a Service, …) are skipped silently.
func ParseManifests(name string, data []byte) ([]*CRD, []catalog.Finding, error) {
	return ParseManifestsContext(context.Background(), name, data)
}

// ParseManifestsContext is ParseManifests that stops with ctx's error when
// ctx ends (it is read every 1024 schema nodes).
func ParseManifestsContext(ctx context.Context, name string, data []byte) ([]*CRD, []catalog.Finding, error) {
	crds, fs := parseContext(ctx, name, data, true)
	if err := ctx.Err(); err != nil {
		return nil, fs, err
	}
	return crds, fs, firstError(fs)
}

func firstError(fs []catalog.Finding) error {
	for _, f := range fs {
		if f.Severity == catalog.SeverityError {
			return fmt.Errorf("%s: %s", f.Position, f.Message)
		}
	}
	return nil
}

// ignoredLoadRules are the catalog loader's findings that concern only
// file-based catalog blobs, not plain Kubernetes manifests.
func ignoredLoadRule(id string) bool {
	switch id {
	case "load.missing-schema", "load.meta-not-string", "load.case-folded-key", "load.empty-document":
		return true
	}
	return false
}

func parse(name string, data []byte, skipOthers bool) ([]*CRD, []catalog.Finding) {
	return parseContext(context.Background(), name, data, skipOthers)
}

func parseContext(ctx context.Context, name string, data []byte, skipOthers bool) ([]*CRD, []catalog.Finding) {
	var fs []catalog.Finding
	if len(data) > MaxFileSize {
		return nil, []catalog.Finding{finding(RuleSchemaTooLarge, name, 1,
			fmt.Sprintf("file is %d bytes, over the limit of %d bytes; it was not read", len(data), MaxFileSize))}
	}
	docs, loadFs := catalog.ParseFile(name, data, catalog.Limits{MaxFileSize: MaxFileSize})
	for _, f := range loadFs {
		if ignoredLoadRule(f.Rule) {
			continue
		}
		if f.Severity == catalog.SeverityError {
			f.Message = f.Message + " (" + f.Rule + ")"
			f.Rule = RuleInvalidDocument
		}
		fs = append(fs, f)
	}
	// A kubectl-style List contributes its items.
	var objs []*catalog.Value
	for i := range docs {
		v := &docs[i].Value
		if str(v.Get("kind")) == "List" && str(v.Get("apiVersion")) == "v1" && v.Get("items") != nil {
			items := v.Get("items")
			list := items.Items()
			for j := range list {
				objs = append(objs, &list[j])
			}
			continue
		}
		objs = append(objs, v)
	}
	var crds []*CRD
	seen := map[string]*CRD{}
	for _, obj := range objs {
		if !isCRD(obj) {
			if !skipOthers {
				fs = append(fs, finding(RuleNotACRD, name, int(obj.Line), fmt.Sprintf(
					"document is apiVersion %q kind %q, not an apiextensions.k8s.io/v1 or v1beta1 CustomResourceDefinition",
					str(obj.Get("apiVersion")), str(obj.Get("kind")))))
			}
			continue
		}
		if ctx.Err() != nil {
			break
		}
		c, cfs := crdFromValue(ctx, name, obj, DefaultLimits)
		fs = append(fs, cfs...)
		if c == nil {
			continue
		}
		if prev := seen[c.Name]; prev != nil {
			fs = append(fs, finding(RuleDuplicateCRD, name, c.Pos.Line,
				fmt.Sprintf("CRD %q is defined again (first at line %d)", c.Name, prev.Pos.Line)))
			continue
		}
		seen[c.Name] = c
		crds = append(crds, c)
	}
	catalog.SortFindings(fs)
	return crds, fs
}

func finding(rule, file string, line int, msg string) catalog.Finding {
	f := catalog.Finding{Rule: rule, Position: catalog.Position{File: file, Line: line}, Message: msg}
	if r, ok := ruleByID(rule); ok {
		f.Severity, f.Hint = r.Severity, r.Hint
	}
	return f
}

func isCRD(v *catalog.Value) bool {
	if str(v.Get("kind")) != "CustomResourceDefinition" {
		return false
	}
	switch str(v.Get("apiVersion")) {
	case "apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1":
		return true
	}
	return false
}

// str is the string at v, "" when v is absent or not a string.
func str(v *catalog.Value) string {
	if v == nil || v.Kind != catalog.KindString {
		return ""
	}
	return v.Str()
}

func boolAt(v *catalog.Value) (val, set bool) {
	if v == nil || v.Kind != catalog.KindBool {
		return false, false
	}
	return v.Str() == "true", true
}

func lineOf(v *catalog.Value) int32 {
	if v == nil {
		return 0
	}
	return v.Line
}

// crdFromValue reads one CRD document. v1beta1 documents are converted to the
// v1 shape: spec.validation and spec.subresources apply to every version that
// has none of its own, and spec.version alone means one served storage version.
func crdFromValue(ctx context.Context, file string, doc *catalog.Value, lim Limits) (*CRD, []catalog.Finding) {
	var fs []catalog.Finding
	bad := func(line int32, format string, args ...any) {
		fs = append(fs, finding(RuleInvalidCRD, file, int(line), fmt.Sprintf(format, args...)))
	}
	c := &CRD{APIVersion: str(doc.Get("apiVersion"))}
	c.Pos = catalog.Position{File: file, Line: int(doc.Line)}
	meta := doc.Get("metadata")
	if nv := meta.Get("name"); nv != nil {
		c.Name = str(nv)
		c.Pos.Line = int(nv.Line)
	}
	if c.Name == "" {
		bad(doc.Line, "CustomResourceDefinition has no metadata.name")
		return nil, fs
	}
	spec := doc.Get("spec")
	if spec == nil || spec.Kind != catalog.KindObject {
		bad(int32(c.Pos.Line), "CRD %q has no spec object", c.Name)
		return nil, fs
	}
	c.Group = str(spec.Get("group"))
	names := spec.Get("names")
	c.Kind, c.ListKind, c.Singular = str(names.Get("kind")), str(names.Get("listKind")), str(names.Get("singular"))
	sc := spec.Get("scope")
	c.Scope, c.ScopeLine = str(sc), lineOf(sc)
	if c.Scope != "Namespaced" && c.Scope != "Cluster" {
		bad(orLine(lineOf(sc), int32(c.Pos.Line)), "CRD %q has scope %q, want Namespaced or Cluster", c.Name, c.Scope)
		return nil, fs
	}
	c.Conversion = str(spec.Get("conversion").Get("strategy"))
	if sv := doc.Get("status").Get("storedVersions"); sv != nil {
		items := sv.Items()
		for i := range items {
			if name := str(&items[i]); name != "" {
				c.StoredVersions = append(c.StoredVersions, Name{Name: name, Line: items[i].Line})
			}
		}
	}

	beta := c.APIVersion == "apiextensions.k8s.io/v1beta1"
	c.PreserveUnknownFields = beta
	if p, set := boolAt(spec.Get("preserveUnknownFields")); set {
		c.PreserveUnknownFields = p
	}
	var sharedSchema *catalog.Value
	var sharedSub string
	if beta {
		sharedSchema = spec.Get("validation").Get("openAPIV3Schema")
		if sr := spec.Get("subresources"); sr != nil {
			sharedSub = canonicalJSON(sr)
		}
	}
	vs := spec.Get("versions")
	if vs == nil && beta {
		if v := spec.Get("version"); str(v) != "" {
			c.Versions = append(c.Versions, Version{Name: str(v), Served: true, Storage: true, Line: v.Line, Subresources: sharedSub})
		}
	} else if vs != nil && vs.Kind != catalog.KindArray {
		bad(vs.Line, "CRD %q: spec.versions is %s, want a list", c.Name, vs.Kind)
		return nil, fs
	}
	b := &schemaBuilder{lim: lim, ctx: ctx}
	var vals []*catalog.Value
	var items []catalog.Value
	if vs != nil {
		items = vs.Items()
	}
	seenVersion := make(map[string]bool, len(items))
	for i := range items {
		item := &items[i]
		nm := item.Get("name")
		if str(nm) == "" {
			bad(item.Line, "CRD %q: spec.versions[%d] has no name", c.Name, i)
			continue
		}
		v := Version{Name: str(nm), Line: nm.Line, Subresources: sharedSub}
		v.Served, _ = boolAt(item.Get("served"))
		v.ServedLine = lineOf(item.Get("served"))
		v.Storage, _ = boolAt(item.Get("storage"))
		if sr := item.Get("subresources"); sr != nil {
			v.Subresources = canonicalJSON(sr)
		}
		if seenVersion[v.Name] {
			bad(nm.Line, "CRD %q lists version %q twice", c.Name, v.Name)
			continue
		}
		seenVersion[v.Name] = true
		c.Versions = append(c.Versions, v)
		vals = append(vals, item.Get("schema").Get("openAPIV3Schema"))
	}
	if len(c.Versions) == 0 {
		bad(orLine(lineOf(vs), int32(c.Pos.Line)), "CRD %q has no versions", c.Name)
		return nil, fs
	}
	for i := range c.Versions {
		v := &c.Versions[i]
		var sv *catalog.Value
		if i < len(vals) {
			sv = vals[i]
		}
		if sv == nil {
			sv = sharedSchema
		}
		if sv == nil {
			fs = append(fs, finding(RuleMissingSchema, file, int(v.Line), fmt.Sprintf(
				"CRD %q version %q has no schema.openAPIV3Schema: there is nothing to compare", c.Name, v.Name)))
			continue
		}
		before := b.nodes
		v.Schema = b.build(sv, 0, 0, "^")
		v.nodes = b.nodes - before
		if b.err != "" {
			fs = append(fs, finding(b.errRule, file, int(b.errLine), fmt.Sprintf("CRD %q version %q: %s", c.Name, v.Name, b.err)))
			return nil, fs
		}
	}
	return c, fs
}
