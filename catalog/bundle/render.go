package bundle

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/jsonout"
)

// Property is one property of a rendered bundle: its type and its value as JSON.
type Property struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// RelatedImage is one entry of a rendered bundle's relatedImages.
type RelatedImage struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

// Rendered is the olm.bundle blob of a bundle, its fields in the order opm writes them.
type Rendered struct {
	Schema        string         `json:"schema"`
	Name          string         `json:"name"`
	Package       string         `json:"package"`
	Image         string         `json:"image"`
	Properties    []Property     `json:"properties"`
	RelatedImages []RelatedImage `json:"relatedImages,omitempty"`
}

// Render makes the olm.bundle blob `opm render` makes of this bundle when its image is image: the
// olm.package property (the CSV's version), olm.gvk for every API the bundle provides (its CRDs' served
// versions, the CSV's owned API services), olm.gvk.required for what the CSV requires, the properties of
// metadata/properties.yaml and the dependencies of metadata/dependencies.yaml (olm.package becomes
// olm.package.required), sorted by type and value, then one olm.bundle.object per manifest; and the
// relatedImages of the CSV, the bundle image and the images of the operator's containers.
func Render(b *Bundle, image string) (*Rendered, error) {
	if b == nil || b.CSV == nil {
		return nil, errors.New("the bundle has no ClusterServiceVersion")
	}
	csv := b.CSV.Value
	// opm takes spec.version as it is: absent is "", anything but a string stops the render.
	version := ""
	if v := path2(csv, "spec", "version"); v != nil && v.Kind != catalog.KindNull {
		if v.Kind != catalog.KindString {
			return nil, fmt.Errorf("%s: spec.version is %s, not a string", b.CSV.File, v.Kind)
		}
		version = v.Str()
	}
	type gvk struct{ group, version, kind string }
	provided := map[gvk]bool{}
	required := map[gvk]bool{}
	var pkgProp *Property
	var props, others []Property
	mustJSON := func(v any) json.RawMessage {
		data, _ := json.Marshal(v)
		return data
	}
	// The properties of metadata/properties.yaml and of the CSV's olm.properties annotation (a JSON list).
	type prop struct {
		Type string
		raw  json.RawMessage
		Pos  catalog.Position
	}
	var declared []prop
	for _, p := range b.Properties {
		raw, err := entryJSON(p.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: property %s: %w", p.Pos, p.Type, err)
		}
		declared = append(declared, prop{p.Type, raw, p.Pos})
	}
	// opm puts the annotations' package between the two lists: a CSV's olm.package overrides it, a
	// properties file's does not (the last olm.package counts).
	if b.Package != "" {
		rel, err := csvRelease(csv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.CSV.File, err)
		}
		declared = append(declared, prop{"olm.package", mustJSON(packageValue{b.Package, version, rel}), b.AnnotationsAt})
	}
	if ann := str(path2(csv, "metadata", "annotations", "olm.properties")); ann != "" {
		var list []struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		}
		// opm logs a warning and keeps what decoded: nothing on a syntax error, the entries (with the
		// mistyped fields empty) on a type error.
		if err := json.Unmarshal([]byte(ann), &list); err != nil {
			var typeErr *json.UnmarshalTypeError
			if !errors.As(err, &typeErr) {
				list = nil
			}
		}
		for _, p := range list {
			if len(p.Value) == 0 {
				declared = append(declared, prop{p.Type, nil, b.CSV.Pos})
				continue
			}
			raw, err := reencode(p.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: olm.properties %s: %w", b.CSV.File, p.Type, err)
			}
			declared = append(declared, prop{p.Type, raw, b.CSV.Pos})
		}
	}
	for _, p := range declared {
		raw := p.raw
		switch p.Type {
		case "olm.gvk":
			var v struct{ Group, Kind, Version string }
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("%s: olm.gvk property: %w", p.Pos, err)
			}
			provided[gvk{v.Group, v.Version, v.Kind}] = true
		case "olm.package":
			var v struct {
				PackageName string `json:"packageName"`
				Version     string `json:"version"`
				Release     string `json:"release"`
			}
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("%s: olm.package property: %w", p.Pos, err)
			}
			pkgProp = &Property{Type: "olm.package", Value: mustJSON(packageValue{v.PackageName, v.Version, v.Release})}
		default:
			others = append(others, Property{Type: p.Type, Value: raw})
		}
	}
	var pkgRequired []Property
	for _, d := range b.Dependencies {
		raw, err := entryJSON(d.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: dependency %s: %w", d.Pos, d.Type, err)
		}
		switch d.Type {
		case "olm.gvk":
			var v struct{ Group, Kind, Version string }
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("%s: olm.gvk dependency: %w", d.Pos, err)
			}
			required[gvk{v.Group, v.Version, v.Kind}] = true
		case "olm.package":
			var v struct {
				PackageName string `json:"packageName"`
				Version     string `json:"version"`
			}
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("%s: olm.package dependency: %w", d.Pos, err)
			}
			pkgRequired = append(pkgRequired, Property{Type: "olm.package.required", Value: mustJSON(packageRequiredValue{v.PackageName, v.Version})})
		default:
			others = append(others, Property{Type: d.Type, Value: raw})
		}
	}
	// What the bundle provides: every served version of its CRDs, and the API services the CSV owns.
	for _, c := range b.CRDs {
		spec := c.Value.Get("spec")
		if spec == nil {
			continue
		}
		group, kind := str(spec.Get("group")), str(path2(*spec, "names", "kind"))
		if vs := spec.Get("versions"); vs != nil {
			for _, v := range vs.Items() {
				provided[gvk{group, str(v.Get("name")), kind}] = true
			}
		}
		if v := str(spec.Get("version")); v != "" {
			provided[gvk{group, v, kind}] = true
		}
	}
	for _, a := range apiServices(csv, "owned") {
		provided[gvk{str(a.Get("group")), str(a.Get("version")), str(a.Get("kind"))}] = true
	}
	if reqCRDs := path2(csv, "spec", "customresourcedefinitions", "required"); reqCRDs != nil {
		for _, r := range reqCRDs.Items() {
			name := str(r.Get("name"))
			_, group, ok := strings.Cut(name, ".")
			if !ok {
				return nil, fmt.Errorf("%s: required CRD %q is not plural.group", b.CSV.File, name)
			}
			required[gvk{group, str(r.Get("version")), str(r.Get("kind"))}] = true
		}
	}
	for _, a := range apiServices(csv, "required") {
		required[gvk{str(a.Get("group")), str(a.Get("version")), str(a.Get("kind"))}] = true
	}

	// One olm.bundle.object per manifest, as the JSON Kubernetes would store.
	manifests := append(append([]*Manifest{b.CSV}, b.CRDs...), b.Others...)
	objects := make([]Property, 0, len(manifests))
	// One buffer for every manifest's JSON, as large as the largest file and half more (the JSON of a YAML
	// manifest is rarely longer), so that it rarely grows.
	largest := 0
	for _, m := range manifests {
		largest = max(largest, m.size)
	}
	scratch := make([]byte, 0, largest+largest/2)
	for _, m := range manifests {
		scratch = appendCanonical(scratch[:0], &m.Value)
		objects = append(objects, Property{Type: "olm.bundle.object", Value: bundleObjectValue(scratch)})
	}
	if pkgProp == nil {
		pkgProp = &Property{Type: "olm.package", Value: mustJSON(packageValue{"", version, ""})}
	}
	props = append(props, *pkgProp)
	for k := range provided {
		props = append(props, Property{Type: "olm.gvk", Value: mustJSON(gvkValue{k.group, k.kind, k.version})})
	}
	for k := range required {
		props = append(props, Property{Type: "olm.gvk.required", Value: mustJSON(gvkValue{k.group, k.kind, k.version})})
	}
	props = append(props, pkgRequired...)
	props = append(props, others...)
	sortProperties(props)
	sortProperties(objects)
	props = append(props, objects...)

	return &Rendered{
		Schema: "olm.bundle", Name: b.CSV.Name, Package: b.Package, Image: image,
		Properties: props, RelatedImages: relatedImages(b, image),
	}, nil
}

// csvRelease is spec.release as opm v1.69+ takes it into the olm.package property: a string as it is, a number
// as an integer when whole, else in %g form; "" when absent.
func csvRelease(csv catalog.Value) (string, error) {
	v := path2(csv, "spec", "release")
	if v == nil || v.Kind == catalog.KindNull {
		return "", nil
	}
	switch v.Kind {
	case catalog.KindString:
		return v.Str(), nil
	case catalog.KindNumber:
		f, err := strconv.ParseFloat(string(v.AppendJSON(nil)), 64)
		if err != nil {
			return "", err
		}
		if f == float64(int64(f)) {
			return strconv.FormatInt(int64(f), 10), nil
		}
		return fmt.Sprintf("%g", f), nil
	}
	return "", fmt.Errorf("spec.release is %s: it must be a string or a number", v.Kind)
}

// bundleObjectValue is {"data":"<base64 of data>"}, written as encoding/json writes that map (base64's
// alphabet needs no escape), in one allocation of the exact size.
func bundleObjectValue(data []byte) json.RawMessage {
	const head, tail = `{"data":"`, `"}`
	n := base64.StdEncoding.EncodedLen(len(data))
	out := make([]byte, len(head)+n+len(tail))
	copy(out, head)
	base64.StdEncoding.Encode(out[len(head):], data)
	copy(out[len(head)+n:], tail)
	return out
}

type packageValue struct {
	PackageName string `json:"packageName"`
	Version     string `json:"version"`
	Release     string `json:"release,omitempty"`
}

type packageRequiredValue struct {
	PackageName  string `json:"packageName"`
	VersionRange string `json:"versionRange"`
}

type gvkValue struct {
	Group   string `json:"group"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

// sortProperties orders properties by type, then by the JSON of their values, as opm does.
func sortProperties(ps []Property) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Type != ps[j].Type {
			return ps[i].Type < ps[j].Type
		}
		return string(ps[i].Value) < string(ps[j].Value)
	})
}

func apiServices(csv catalog.Value, which string) []catalog.Value {
	list := path2(csv, "spec", "apiservicedefinitions", which)
	if list == nil {
		return nil
	}
	return list.Items()
}

// relatedImages: the CSV's spec.relatedImages, then the bundle image and the images of the operator's
// containers (deployments of the install strategy, init containers included) not already listed.
func relatedImages(b *Bundle, image string) []RelatedImage {
	var out []RelatedImage
	seen := map[string]bool{}
	if list := path2(b.CSV.Value, "spec", "relatedImages"); list != nil {
		for _, ri := range list.Items() {
			img := str(ri.Get("image"))
			out = append(out, RelatedImage{Name: str(ri.Get("name")), Image: img})
			seen[img] = true
		}
	}
	if image != "" && !seen[image] {
		out = append(out, RelatedImage{Image: image})
		seen[image] = true
	}
	var ops []string
	// opm takes the operator's images from the deployment install strategy only (the only one OLM knows).
	deps := path2(b.CSV.Value, "spec", "install", "spec", "deployments")
	if str(path2(b.CSV.Value, "spec", "install", "strategy")) != "deployment" {
		deps = nil
	}
	if deps != nil {
		for _, d := range deps.Items() {
			for _, key := range []string{"initContainers", "containers"} {
				if cs := path2(d, "spec", "template", "spec", key); cs != nil {
					for _, c := range cs.Items() {
						if img := str(c.Get("image")); !seen[img] {
							seen[img] = true
							ops = append(ops, img)
						}
					}
				}
			}
		}
	}
	// opm takes these from a set, in no fixed order; sorted here so the output is stable.
	sort.Strings(ops)
	for _, img := range ops {
		out = append(out, RelatedImage{Image: img})
	}
	// opm's render sorts the list by image (after adding the bundle image, whatever its name).
	sort.SliceStable(out, func(i, j int) bool { return out[i].Image < out[j].Image })
	return out
}

// entryJSON is the value of a metadata entry as opm holds it: nothing when the entry has no value (opm then
// cannot read an olm.gvk or olm.package from it, and writes any other as null), else canonicalJSON.
func entryJSON(v *catalog.Value) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	return canonicalJSON(v)
}

// canonicalJSON writes v as Kubernetes keeps an object: JSON with keys sorted, whole numbers as integers,
// others as float64, and <, > and & escaped (what encoding/json does to the map Kubernetes decodes).
func canonicalJSON(v *catalog.Value) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("null"), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	out, err := json.Marshal(numbersAsKubernetes(x))
	if err != nil {
		return nil, err
	}
	return out, nil
}

func numbersAsKubernetes(x any) any {
	switch t := x.(type) {
	case map[string]any:
		for k, v := range t {
			t[k] = numbersAsKubernetes(v)
		}
	case []any:
		for i, v := range t {
			t[i] = numbersAsKubernetes(v)
		}
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(string(t), 64); err == nil {
			return f
		}
	}
	return x
}

// reencode writes JSON as canonicalJSON does.
func reencode(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	return json.Marshal(numbersAsKubernetes(x))
}

// AppendJSON appends r as encoding/json's Encoder writes it with SetIndent("", indent) and SetEscapeHTML(false),
// byte for byte, newline included; each property's value must be JSON (encoding/json refuses it too). It
// copies the values' strings, where encoding/json steps through every byte of them twice (FuzzRenderedJSON).
func (r *Rendered) AppendJSON(dst []byte, indent string) ([]byte, error) {
	orig := len(dst)
	nl := func(depth int) {
		dst = append(dst, '\n')
		for range depth {
			dst = append(dst, indent...)
		}
	}
	field := func(depth int, name, value string) {
		nl(depth)
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, `": `...)
		dst = jsonout.AppendString(dst, value)
	}
	dst = append(dst, '{')
	field(1, "schema", r.Schema)
	dst = append(dst, ',')
	field(1, "name", r.Name)
	dst = append(dst, ',')
	field(1, "package", r.Package)
	dst = append(dst, ',')
	field(1, "image", r.Image)
	dst = append(dst, ',')
	nl(1)
	dst = append(dst, `"properties": `...)
	switch {
	case r.Properties == nil:
		dst = append(dst, "null"...)
	case len(r.Properties) == 0:
		dst = append(dst, "[]"...)
	default:
		dst = append(dst, '[')
		for i, p := range r.Properties {
			if i > 0 {
				dst = append(dst, ',')
			}
			nl(2)
			dst = append(dst, '{')
			field(3, "type", p.Type)
			dst = append(dst, ',')
			nl(3)
			dst = append(dst, `"value": `...)
			var err error
			if dst, err = jsonout.AppendNested(dst, p.Value, indent, 3); err != nil {
				return dst[:orig], fmt.Errorf("property %d (%s): %w", i, p.Type, err)
			}
			nl(2)
			dst = append(dst, '}')
		}
		nl(1)
		dst = append(dst, ']')
	}
	if len(r.RelatedImages) > 0 {
		dst = append(dst, ',')
		nl(1)
		dst = append(dst, `"relatedImages": [`...)
		for i, ri := range r.RelatedImages {
			if i > 0 {
				dst = append(dst, ',')
			}
			nl(2)
			dst = append(dst, '{')
			field(3, "name", ri.Name)
			dst = append(dst, ',')
			field(3, "image", ri.Image)
			nl(2)
			dst = append(dst, '}')
		}
		nl(1)
		dst = append(dst, ']')
	}
	nl(0)
	dst = append(dst, "}\n"...)
	return dst, nil
}
