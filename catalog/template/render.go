package template

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	mmsemver "github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/jsonout"
)

// Resolved is the olm.bundle blob of one bundle image, at the migrate level the resolver was made for.
type Resolved struct {
	// Bundle is the blob; its property values are compact JSON (as catalog/bundle renders them and
	// catalog.Value writes them), copied into the output as they are.
	Bundle *bundle.Rendered
	// CSV is the bundle's ClusterServiceVersion when the resolver has it (a bundle directory, an image, an
	// olm.bundle.object blob): newer opm releases take the package's icon and description from it.
	CSV *catalog.Value
	// From says where the blob came from, for messages ("catalogs/v4.16/foo/catalog.yaml:12").
	From string
	// ByTag: the blob is a catalog's for a reference by tag, taken verbatim; the tag may have moved since.
	ByTag bool
	// Package is, when CSV is nil and the blob comes from a catalog, that catalog's olm.package blob of the
	// bundle's package: the icon and description the last render took from the default channel's head.
	Package *PackageMeta
}

// PackageMeta is the icon and description of a committed olm.package blob.
type PackageMeta struct {
	Description string
	Icon        json.RawMessage // {"base64data":...,"mediatype":...}, nil when absent
	From        string          // where the blob is
}

// ErrNotFound is what a Resolver returns for an image it does not know; a Chain then asks the next one.
var ErrNotFound = errors.New("bundle image not found")

// Resolver renders a bundle image into its olm.bundle blob.
type Resolver interface {
	Resolve(ctx context.Context, image string) (*Resolved, error)
}

// Chain asks each resolver in turn, going on while they answer ErrNotFound.
type Chain []Resolver

// Resolve implements Resolver.
func (c Chain) Resolve(ctx context.Context, image string) (*Resolved, error) {
	var errs []error
	for _, r := range c {
		if r == nil {
			continue
		}
		res, err := r.Resolve(ctx, image)
		if err == nil {
			return res, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		if err != ErrNotFound { // a bare ErrNotFound: the resolver leaves the explaining to another
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("no resolver knows it: %w", ErrNotFound)
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = strings.TrimSuffix(e.Error(), ": "+ErrNotFound.Error())
	}
	return nil, fmt.Errorf("%s: %w", strings.Join(msgs, "; "), ErrNotFound)
}

// Behaviour is the opm release whose rendering is reproduced. Releases differ in olm.semver templates:
// up to v1.60 each channel is linked on its own (the head of each minor version replaces the previous
// head and skips the rest); from v1.61 the entries of all channels of one archetype and stream are
// linked as one sequence; from v1.65 the package also takes its icon and description from the head
// bundle of the default channel.
type Behaviour struct {
	TupleLinking    bool // v1.61 and later
	PackageMetadata bool // v1.65 and later
}

// BehaviourOf gives the behaviour of an opm release ("v1.60.0", "1.46"); "" is the newest known.
func BehaviourOf(version string) (Behaviour, error) {
	if version == "" || version == "latest" {
		return Behaviour{TupleLinking: true, PackageMetadata: true}, nil
	}
	v, err := mmsemver.NewVersion(version)
	if err != nil {
		return Behaviour{}, fmt.Errorf("opm version %q: %w", version, err)
	}
	if v.Major() != 1 {
		return Behaviour{}, fmt.Errorf("opm version %q: only 1.x releases are known", version)
	}
	return Behaviour{TupleLinking: v.Minor() >= 61, PackageMetadata: v.Minor() >= 65}, nil
}

// Options steer Render.
type Options struct {
	Resolver  Resolver
	Behaviour Behaviour
}

// Blob is one blob of a rendered catalog.
type Blob struct {
	Schema, Package, Name string
	// JSON is the blob as opm encodes it, compact.
	JSON []byte
	// Source is the template line it comes from (the entry, or the bundle reference).
	Source catalog.Position
}

// Output is a rendered catalog, its blobs in the order opm writes them.
type Output struct {
	Blobs []Blob

	yaml []byte // WriteYAML's bytes, kept: a drift check compares them with several catalogs
}

// WriteJSON writes the catalog as `opm alpha render-template -o json` prints it.
func (o *Output) WriteJSON(w io.Writer) error {
	var buf []byte
	for _, b := range o.Blobs {
		var err error
		// json.Indent's output, byte for byte, without stepping its scanner through every byte.
		if buf, err = jsonout.Indent(buf[:0], b.JSON, "    "); err != nil {
			return err
		}
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// WriteYAML writes the catalog as `opm alpha render-template -o yaml` prints it.
func (o *Output) WriteYAML(w io.Writer) error {
	if o.yaml == nil {
		var buf bytes.Buffer
		for _, b := range o.Blobs {
			y, err := jsonToYAML(b.JSON)
			if err != nil {
				return err
			}
			buf.WriteString("---\n")
			buf.Write(y)
		}
		o.yaml = buf.Bytes()
	}
	_, err := w.Write(o.yaml)
	return err
}

// The blobs opm decodes into typed structs, with its field names and order.
type packageBlob struct {
	Schema         string     `json:"schema"`
	Name           string     `json:"name"`
	DefaultChannel string     `json:"defaultChannel"`
	Icon           *iconBlob  `json:"icon,omitempty"`
	Description    string     `json:"description,omitempty"`
	Properties     []property `json:"properties,omitempty"`
}

type iconBlob struct {
	Data      []byte `json:"base64data"`
	MediaType string `json:"mediatype"`
}

type property struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

type channelBlob struct {
	Schema     string         `json:"schema"`
	Name       string         `json:"name"`
	Package    string         `json:"package"`
	Entries    []channelEntry `json:"entries"`
	Properties []property     `json:"properties,omitempty"`
}

type channelEntry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
}

type deprecationBlob struct {
	Schema  string `json:"schema"`
	Package string `json:"package"`
	Entries []struct {
		Reference struct {
			Schema string `json:"schema"`
			Name   string `json:"name,omitempty"`
		} `json:"reference"`
		Message string `json:"message"`
	} `json:"entries"`
}

// encode is encoding/json without HTML escaping and without the newline, as opm's encoders write.
func encode(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only our own structs are encoded here; they always encode.
		panic(fmt.Sprintf("template: encoding %T: %v", v, err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// bundleJSON encodes a rendered bundle as encoding/json encodes opm's declcfg.Bundle (fields in its order,
// empty ones left out, no HTML escaping), written directly: property values come from catalog/bundle's
// encoders or a parsed catalog, valid and compact already, and going through encoding/json would validate
// and copy every manifest once more.
func bundleJSON(r *bundle.Rendered) []byte {
	size := 128 + len(r.Name) + len(r.Package) + len(r.Image)
	for _, p := range r.Properties {
		size += len(p.Type) + len(p.Value) + 24
	}
	b := make([]byte, 0, size)
	b = append(b, `{"schema":"olm.bundle"`...)
	str := func(key, v string) {
		if v == "" {
			return
		}
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		b = catalog.AppendJSONString(b, v, false)
	}
	str("name", r.Name)
	str("package", r.Package)
	b = append(b, `,"image":`...)
	b = catalog.AppendJSONString(b, r.Image, false)
	if len(r.Properties) > 0 {
		b = append(b, `,"properties":[`...)
		for i, p := range r.Properties {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":`...)
			b = catalog.AppendJSONString(b, p.Type, false)
			b = append(b, `,"value":`...)
			if len(p.Value) == 0 {
				b = append(b, "null"...)
			} else {
				b = append(b, p.Value...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(r.RelatedImages) > 0 {
		b = append(b, `,"relatedImages":[`...)
		for i, ri := range r.RelatedImages {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = catalog.AppendJSONString(b, ri.Name, false)
			b = append(b, `,"image":`...)
			b = catalog.AppendJSONString(b, ri.Image, false)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// Render renders a template as `opm alpha render-template` does. Findings say why it does not render (a
// bundle that cannot be resolved, a version that is not semver, ...), each on its template line; the
// Output is nil when any finding is an error.
func Render(ctx context.Context, t *Template, opt Options) (*Output, []catalog.Finding) {
	if t == nil {
		return nil, nil
	}
	if opt.Resolver == nil {
		opt.Resolver = Chain(nil)
	}
	switch t.Schema {
	case SchemaBasic:
		return renderBasic(ctx, t, opt)
	case SchemaSemver:
		return renderSemver(ctx, t, opt)
	}
	return nil, []catalog.Finding{finding(ruleSchema, t.Pos, fmt.Sprintf("unknown template schema %q", t.Schema))}
}

// resolveAll renders every bundle reference once.
func resolveAll(ctx context.Context, t *Template, opt Options) (map[string]*Resolved, []catalog.Finding) {
	out := map[string]*Resolved{}
	var findings []catalog.Finding
	for _, ref := range t.Refs() {
		if err := ctx.Err(); err != nil {
			return nil, append(findings, finding(ruleUnresolved, ref.Pos, "rendering stopped: "+err.Error()))
		}
		res, err := opt.Resolver.Resolve(ctx, ref.Image)
		if err != nil {
			findings = append(findings, finding(ruleUnresolved, ref.Pos, fmt.Sprintf("bundle image %s could not be rendered: %v", ref.Image, err)))
			continue
		}
		if res == nil || res.Bundle == nil {
			findings = append(findings, finding(ruleBundleCount, ref.Pos, fmt.Sprintf("bundle reference %q resulted in 0 bundles, expected 1", ref.Image)))
			continue
		}
		if res.ByTag {
			findings = append(findings, finding(ruleTagReference, ref.Pos, fmt.Sprintf("bundle image %s is a tag: rendered from the blob the committed catalog holds for it (%s), which is what the tag named when that catalog was rendered; the tag may name other content now. Reference the image by digest (skopeo inspect or crane digest gives it) so the template names content", ref.Image, res.From)))
		}
		out[ref.Image] = res
	}
	return out, findings
}

func renderBasic(ctx context.Context, t *Template, opt Options) (*Output, []catalog.Finding) {
	resolved, findings := resolveAll(ctx, t, opt)
	if hasErrors(findings) {
		return nil, findings
	}
	var blobs []Blob
	for _, e := range t.Entries {
		switch e.Schema {
		case "olm.package":
			var p packageBlob
			if err := json.Unmarshal(e.Canonical, &p); err != nil {
				findings = append(findings, finding(ruleShape, e.Pos, "parse package: "+jsonErr(err)))
				continue
			}
			blobs = append(blobs, Blob{Schema: e.Schema, Package: p.Name, Name: p.Name, JSON: encode(p), Source: e.Pos})
		case "olm.channel":
			var c channelBlob
			if err := json.Unmarshal(e.Canonical, &c); err != nil {
				findings = append(findings, finding(ruleShape, e.Pos, "parse channel: "+jsonErr(err)))
				continue
			}
			blobs = append(blobs, Blob{Schema: e.Schema, Package: c.Package, Name: c.Name, JSON: encode(c), Source: e.Pos})
		case "olm.bundle":
			r := resolved[e.Image].Bundle
			blobs = append(blobs, Blob{Schema: "olm.bundle", Package: r.Package, Name: r.Name, JSON: bundleJSON(r), Source: e.ImagePos})
		case "olm.deprecations":
			var d deprecationBlob
			if err := json.Unmarshal(e.Canonical, &d); err != nil {
				findings = append(findings, finding(ruleShape, e.Pos, "parse deprecation: "+jsonErr(err)))
				continue
			}
			blobs = append(blobs, Blob{Schema: e.Schema, Package: d.Package, JSON: encode(d), Source: e.Pos})
		default:
			blobs = append(blobs, Blob{Schema: e.Schema, Package: e.Package, Name: e.Name, JSON: e.Canonical, Source: e.Pos})
		}
	}
	if hasErrors(findings) {
		return nil, findings
	}
	return &Output{Blobs: order(blobs)}, findings
}

// order arranges blobs as opm's writer does: by package name; in each package its olm.package blobs,
// channels by name, bundles by name, other schemas by schema, deprecations; blobs of no package last
// (only those of other schemas: opm drops a channel or bundle without a package).
func order(blobs []Blob) []Blob {
	rank := func(b *Blob) int {
		switch b.Schema {
		case "olm.package":
			return 0
		case "olm.channel":
			return 1
		case "olm.bundle":
			return 2
		case "olm.deprecations":
			return 4
		}
		return 3
	}
	var kept []Blob
	for _, b := range blobs {
		if b.Package == "" && rank(&b) != 3 {
			continue
		}
		kept = append(kept, b)
	}
	sort.SliceStable(kept, func(i, j int) bool {
		a, b := &kept[i], &kept[j]
		if (a.Package == "") != (b.Package == "") {
			return b.Package == ""
		}
		if a.Package != b.Package {
			return a.Package < b.Package
		}
		if a.Package == "" {
			return false // opm keeps package-less blobs in file order
		}
		ra, rb := rank(a), rank(b)
		if ra != rb {
			return ra < rb
		}
		switch ra {
		case 1, 2:
			return a.Name < b.Name
		case 3:
			return a.Schema < b.Schema
		}
		return false
	})
	return kept
}

// semverEntry is one bundle of a semver template with its version.
type semverEntry struct {
	name    string
	version *mmsemver.Version
	ref     Ref
}

func renderSemver(ctx context.Context, t *Template, opt Options) (*Output, []catalog.Finding) {
	s := t.Semver
	resolved, findings := resolveAll(ctx, t, opt)
	if hasErrors(findings) {
		return nil, findings
	}
	if len(resolved) == 0 {
		return nil, append(findings, finding(ruleNoBundles, t.Pos, "render: no bundles specified or no bundles could be rendered"))
	}
	pkg := ""
	var perArchetype [3][]semverEntry
	for ai, refs := range s.Channels {
		seen := map[string]bool{}
		for _, ref := range refs {
			r := resolved[ref.Image].Bundle
			var pkgs []struct {
				PackageName string `json:"packageName"`
				Version     string `json:"version"`
			}
			for _, p := range r.Properties {
				if p.Type != "olm.package" {
					continue
				}
				var v struct {
					PackageName string `json:"packageName"`
					Version     string `json:"version"`
				}
				if err := json.Unmarshal(p.Value, &v); err != nil {
					findings = append(findings, finding(ruleBundleVersion, ref.Pos, fmt.Sprintf("parse properties for bundle %q: %v", r.Name, jsonErr(err))))
					continue
				}
				pkgs = append(pkgs, v)
			}
			if len(pkgs) != 1 {
				findings = append(findings, finding(ruleBundleVersion, ref.Pos, fmt.Sprintf("bundle %q has %d olm.package properties, expected exactly 1", r.Name, len(pkgs))))
				continue
			}
			v, err := mmsemver.StrictNewVersion(pkgs[0].Version)
			if err != nil {
				findings = append(findings, finding(ruleBundleVersion, ref.Pos, fmt.Sprintf("bundle %q has invalid version %q: %v", r.Name, pkgs[0].Version, err)))
				continue
			}
			if pkg == "" {
				pkg = pkgs[0].PackageName
			} else if pkgs[0].PackageName != pkg {
				findings = append(findings, finding(ruleBundlePackage, ref.Pos, fmt.Sprintf("bundle %q belongs to package %q, not to this template's package %q", r.Name, pkgs[0].PackageName, pkg)))
				continue
			}
			if seen[r.Name] {
				findings = append(findings, finding(ruleDuplicateBundle, ref.Pos, fmt.Sprintf("duplicate bundle name %q in %s", r.Name, archetypes[ai])))
				continue
			}
			seen[r.Name] = true
			perArchetype[ai] = append(perArchetype[ai], semverEntry{name: r.Name, version: v, ref: ref})
		}
		// Versions that differ only in build metadata cannot be ordered.
		stripped := map[string]semverEntry{}
		for _, e := range perArchetype[ai] {
			key := strings.SplitN(e.version.String(), "+", 2)[0]
			if prev, ok := stripped[key]; ok {
				findings = append(findings, finding(ruleBuildMetadata, e.ref.Pos, fmt.Sprintf("bundle version %q cannot be ordered against %q (%s): they differ only by build metadata", e.version.Original(), prev.version.Original(), prev.name)))
				continue
			}
			stripped[key] = e
		}
	}
	if hasErrors(findings) {
		return nil, findings
	}
	channels, defaultChannel := generateChannels(s, pkg, perArchetype, opt.Behaviour)

	pb := packageBlob{Schema: "olm.package", Name: pkg, DefaultChannel: defaultChannel}
	if opt.Behaviour.PackageMetadata {
		if f := packageMetadata(&pb, channels, defaultChannel, resolved, t); f != nil {
			findings = append(findings, *f)
		}
	}
	blobs := []Blob{{Schema: "olm.package", Package: pkg, Name: pkg, JSON: encode(pb), Source: t.Pos}}
	for _, c := range channels {
		blobs = append(blobs, Blob{Schema: "olm.channel", Package: pkg, Name: c.Name, JSON: encode(c), Source: t.Pos})
	}
	for _, ref := range t.Refs() {
		r := resolved[ref.Image].Bundle
		blobs = append(blobs, Blob{Schema: "olm.bundle", Package: r.Package, Name: r.Name, JSON: bundleJSON(r), Source: ref.Pos})
	}
	return &Output{Blobs: order(blobs)}, findings
}

// packageMetadata gives the package the icon and description of the default channel head's CSV, as opm
// v1.65 and later do.
func packageMetadata(pb *packageBlob, channels []channelBlob, defaultChannel string, resolved map[string]*Resolved, t *Template) *catalog.Finding {
	var head string
	for _, c := range channels {
		if c.Name == defaultChannel && len(c.Entries) > 0 {
			head = c.Entries[len(c.Entries)-1].Name
			break
		}
	}
	if head == "" {
		return nil
	}
	for _, ref := range t.Refs() {
		res := resolved[ref.Image]
		if res.Bundle.Name != head {
			continue
		}
		if res.CSV == nil && res.Package != nil {
			// The committed catalog's package blob: what the last render took from the head's CSV.
			pb.Description = res.Package.Description
			var icon iconBlob
			if len(res.Package.Icon) > 0 && json.Unmarshal(res.Package.Icon, &icon) == nil {
				pb.Icon = &icon
			}
			f := finding(rulePackageMetadata, ref.Pos, fmt.Sprintf("the CSV of %s (the head of the default channel %s) is not available offline; the package's icon and description are those of the committed olm.package blob at %s", head, defaultChannel, res.Package.From))
			return &f
		}
		if res.CSV == nil {
			f := finding(rulePackageMetadata, ref.Pos, fmt.Sprintf("the CSV of %s (the head of the default channel %s) is not available offline, so the package's icon and description are left out", head, defaultChannel))
			return &f
		}
		var csv struct {
			Spec map[string]json.RawMessage `json:"spec"`
		}
		if err := json.Unmarshal(res.CSV.AppendJSON(nil), &csv); err != nil {
			return nil
		}
		if raw, ok := csv.Spec["description"]; ok {
			var d string
			if json.Unmarshal(raw, &d) == nil {
				pb.Description = d
			}
		}
		if raw, ok := csv.Spec["icon"]; ok {
			var icons []struct {
				MediaType  string `json:"mediatype"`
				Base64data []byte `json:"base64data"`
			}
			if json.Unmarshal(raw, &icons) == nil && len(icons) > 0 {
				pb.Icon = &iconBlob{Data: icons[0].Base64data, MediaType: icons[0].MediaType}
			}
		}
		return nil
	}
	return nil
}

var base64Char = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") {
		t[c] = true
	}
	return t
}()

// longPlain is the length from which a base64 string is set aside while converting JSON to YAML.
const longPlain = 256

// jsonToYAML converts one compact JSON blob to YAML as opm does (sigs.k8s.io/yaml), byte for byte. Long
// strings made only of base64 characters (manifests in olm.bundle.object, icons) are the bulk of a rendered
// catalog and the YAML emitter's slowest work; they are emitted as plain scalars whatever their content, so
// each is replaced by a short plain token before the conversion and put back after it.
func jsonToYAML(js []byte) ([]byte, error) {
	// Most blobs of a rendered catalog need no YAML library at all (yamlout.go).
	if y, ok := directYAML(js); ok {
		return y, nil
	}
	return jsonToYAMLLibrary(js)
}

// jsonToYAMLLibrary is jsonToYAML through sigs.k8s.io/yaml, long base64 strings set aside.
func jsonToYAMLLibrary(js []byte) ([]byte, error) {
	var long [][]byte
	var rewritten []byte
	// A token is "cbtok<len>q<index>"; the length makes it unlikely to be in the blob, checked below.
	token := func(i int) []byte { return fmt.Appendf(nil, "cbtok%dq%d", len(js), i) }
	last := 0
	for i := 0; i < len(js); i++ {
		if js[i] != '"' {
			continue
		}
		end := i + 1
		plain := true
		for end < len(js) && js[end] != '"' {
			c := js[end]
			if c == '\\' {
				plain = false
				end += 2
				continue
			}
			if plain && !base64Char[c] {
				plain = false
			}
			if !plain {
				// Find the end of the string without looking at each character again.
				next := bytes.IndexAny(js[end:], "\\\"")
				if next < 0 {
					end = len(js)
					break
				}
				end += next
				continue
			}
			end++
		}
		if end >= len(js) {
			break
		}
		if plain && end-i-1 >= longPlain && js[i+1] != '=' {
			rewritten = append(rewritten, js[last:i+1]...)
			rewritten = append(rewritten, token(len(long))...)
			long = append(long, js[i+1:end])
			last = end
		}
		i = end
	}
	if len(long) == 0 || bytes.Contains(js, []byte("cbtok")) {
		return yaml.JSONToYAML(js)
	}
	rewritten = append(rewritten, js[last:]...)
	y, err := yaml.JSONToYAML(rewritten)
	if err != nil {
		return nil, err
	}
	// YAML sorts keys, so the tokens come back in another order: each says which string it stands for.
	prefix := fmt.Appendf(nil, "cbtok%dq", len(js))
	out := make([]byte, 0, len(y)+len(js))
	pos, found := 0, 0
	for {
		at := bytes.Index(y[pos:], prefix)
		if at < 0 {
			break
		}
		start := pos + at + len(prefix)
		end := start
		for end < len(y) && y[end] >= '0' && y[end] <= '9' {
			end++
		}
		idx, err := strconv.Atoi(string(y[start:end]))
		if err != nil || idx >= len(long) {
			return yaml.JSONToYAML(js)
		}
		out = append(out, y[pos:pos+at]...)
		out = append(out, long[idx]...)
		pos = end
		found++
	}
	if found != len(long) {
		return yaml.JSONToYAML(js) // not emitted as expected: convert the slow way
	}
	return append(out, y[pos:]...), nil
}
