package catalog

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// This file checks a Value against the Go type opm decodes it into, with
// encoding/json's rules: object keys match struct fields case-insensitively
// (when several keys match one field, opm's re-encoded blob has them in byte
// order and the last one wins), unknown keys are ignored, null is accepted for
// every type, every number has gone through float64, and []byte fields hold
// standard base64 (or a list of byte values).

// shapeKind is the Go type a value is decoded into.
type shapeKind uint8

const (
	shapeAny    shapeKind = iota // json.RawMessage: any JSON value
	shapeString                  // string
	shapeBool                    // bool
	shapeInt                     // int (64-bit)
	shapeInt32                   // int32
	shapeBytes                   // []byte: base64 string
	shapeObject                  // a struct
	shapeArray                   // a slice
	shapeMap                     // map[string]T
)

// shape describes a Go type for checking; fields for objects, elem for arrays and maps.
type shape struct {
	kind   shapeKind
	fields []shapeField
	elem   *shape
}

type shapeField struct {
	name  string
	shape *shape
}

// The immutable shape tables of the types opm decodes catalog blobs and
// properties into (declcfg and property packages of operator-registry v1.60.0).
// Composite literals only, so that the linker lays them out and no code runs
// for them when a process starts (issue 33.1).
var (
	shString    = &shape{kind: shapeString}
	shBool      = &shape{kind: shapeBool}
	shInt       = &shape{kind: shapeInt}
	shInt32     = &shape{kind: shapeInt32}
	shAnyJSON   = &shape{kind: shapeAny}
	shBytes     = &shape{kind: shapeBytes}
	shStrings   = &shape{kind: shapeArray, elem: shString}
	shStringMap = &shape{kind: shapeMap, elem: shString}

	shProperty  = &shape{kind: shapeObject, fields: []shapeField{{"type", shString}, {"value", shAnyJSON}}}
	shPropertys = &shape{kind: shapeArray, elem: shProperty}

	shPackageBlob = &shape{kind: shapeObject, fields: []shapeField{
		{"defaultChannel", shString},
		{"icon", &shape{kind: shapeObject, fields: []shapeField{{"base64data", shBytes}, {"mediatype", shString}}}},
		{"description", shString},
		{"properties", shPropertys},
	}}
	shChannelBlob = &shape{kind: shapeObject, fields: []shapeField{
		{"entries", &shape{kind: shapeArray, elem: &shape{kind: shapeObject, fields: []shapeField{
			{"name", shString},
			{"replaces", shString},
			{"skips", shStrings},
			{"skipRange", shString},
		}}}},
		{"properties", shPropertys},
	}}
	shBundleBlob = &shape{kind: shapeObject, fields: []shapeField{
		{"image", shString},
		{"properties", shPropertys},
		{"relatedImages", &shape{kind: shapeArray, elem: &shape{kind: shapeObject, fields: []shapeField{{"name", shString}, {"image", shString}}}}},
	}}
	shDeprecationBlob = &shape{kind: shapeObject, fields: []shapeField{
		{"entries", &shape{kind: shapeArray, elem: &shape{kind: shapeObject, fields: []shapeField{
			{"reference", &shape{kind: shapeObject, fields: []shapeField{{"schema", shString}, {"name", shString}}}},
			{"message", shString},
		}}}},
	}}

	shPackageProp         = &shape{kind: shapeObject, fields: []shapeField{{"packageName", shString}, {"version", shString}}}
	shPackageRequiredProp = &shape{kind: shapeObject, fields: []shapeField{{"packageName", shString}, {"versionRange", shString}}}
	shGVKProp             = &shape{kind: shapeObject, fields: []shapeField{{"group", shString}, {"kind", shString}, {"version", shString}}}
	shBundleObjectProp    = &shape{kind: shapeObject, fields: []shapeField{{"data", shBytes}}}
	shChannelProp         = &shape{kind: shapeObject, fields: []shapeField{{"channelName", shString}, {"priority", shInt}}}

	shAPIResourceRefs = &shape{kind: shapeArray, elem: &shape{kind: shapeObject, fields: []shapeField{{"name", shString}, {"kind", shString}, {"version", shString}}}}
	shDescriptors     = &shape{kind: shapeArray, elem: &shape{kind: shapeObject, fields: []shapeField{
		{"path", shString},
		{"displayName", shString},
		{"description", shString},
		{"x-descriptors", shStrings},
		{"value", shAnyJSON},
	}}}
	shCRDDescriptions = &shape{kind: shapeArray, elem: &shape{kind: shapeObject, fields: []shapeField{
		{"name", shString},
		{"version", shString},
		{"kind", shString},
		{"displayName", shString},
		{"description", shString},
		{"resources", shAPIResourceRefs},
		{"statusDescriptors", shDescriptors},
		{"specDescriptors", shDescriptors},
		{"actionDescriptors", shDescriptors},
	}}}
	shAPIServiceDescriptions = &shape{kind: shapeArray, elem: &shape{kind: shapeObject, fields: []shapeField{
		{"name", shString},
		{"group", shString},
		{"version", shString},
		{"kind", shString},
		{"deploymentName", shString},
		{"containerPort", shInt32},
		{"displayName", shString},
		{"description", shString},
		{"resources", shAPIResourceRefs},
		{"statusDescriptors", shDescriptors},
		{"specDescriptors", shDescriptors},
		{"actionDescriptors", shDescriptors},
	}}}
	shAppLink         = &shape{kind: shapeObject, fields: []shapeField{{"name", shString}, {"url", shString}}}
	shCSVMetadataProp = &shape{kind: shapeObject, fields: []shapeField{
		{"annotations", shStringMap},
		{"apiServiceDefinitions", &shape{kind: shapeObject, fields: []shapeField{
			{"owned", shAPIServiceDescriptions},
			{"required", shAPIServiceDescriptions},
		}}},
		{"crdDescriptions", &shape{kind: shapeObject, fields: []shapeField{{"owned", shCRDDescriptions}, {"required", shCRDDescriptions}}}},
		{"description", shString},
		{"displayName", shString},
		{"installModes", &shape{kind: shapeArray, elem: &shape{kind: shapeObject, fields: []shapeField{{"type", shString}, {"supported", shBool}}}}},
		{"keywords", shStrings},
		{"labels", shStringMap},
		{"links", &shape{kind: shapeArray, elem: shAppLink}},
		{"maintainers", &shape{kind: shapeArray, elem: &shape{kind: shapeObject, fields: []shapeField{{"name", shString}, {"email", shString}}}}},
		{"maturity", shString},
		{"minKubeVersion", shString},
		{"nativeAPIs", &shape{kind: shapeArray, elem: &shape{kind: shapeObject, fields: []shapeField{{"group", shString}, {"version", shString}, {"kind", shString}}}}},
		{"provider", shAppLink},
	}}
)

// shapeError is one value that does not fit its Go type.
type shapeError struct {
	path string // e.g. entries[2].skips[0]
	at   *Value
	want string
}

func (e shapeError) message() string {
	return fmt.Sprintf("%s is %s, but opm expects %s", e.path, describeValue(e.at), e.want)
}

// maxShapeErrors bounds the errors kept for one blob.
const maxShapeErrors = 20

// shapePath is the path from the checked root to the value being checked,
// spelt out only for an error (most values have none). It is passed by
// value, each level appending its step to a copy, so that its steps stay in
// the array on checkShape's stack (the shape tables nest a few levels deep,
// well within it) instead of one heap allocation per value checked.
type shapePath struct {
	root  string
	steps []shapeStep
}

// shapeStep is an object key, or an array index when key is "" and index >= 0.
type shapeStep struct {
	key   string
	index int
}

// with returns the path one step further.
func (p shapePath) with(key string, index int) shapePath {
	p.steps = append(p.steps, shapeStep{key: key, index: index})
	return p
}

// String spells the path out, as entries[2].skips[0]. It copies the keys'
// bytes, so nothing of the path outlives the check.
func (p shapePath) String() string {
	b := append([]byte(nil), p.root...)
	for _, st := range p.steps {
		if st.key == "" && st.index >= 0 {
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(st.index), 10)
			b = append(b, ']')
			continue
		}
		if len(b) > 0 {
			b = append(b, '.')
		}
		b = append(b, st.key...)
	}
	return string(b)
}

// checkShape appends the values of v that opm could not decode into s; root
// names v in messages ("" for a whole blob, "value" for a property's value).
func checkShape(v *Value, s *shape, root string, errs []shapeError) []shapeError {
	var steps [16]shapeStep
	return checkShapeAt(v, s, shapePath{root: root, steps: steps[:0]}, errs)
}

func checkShapeAt(v *Value, s *shape, path shapePath, errs []shapeError) []shapeError {
	if v == nil || v.Kind == KindNull || len(errs) >= maxShapeErrors {
		return errs
	}
	bad := func(want string) []shapeError {
		return append(errs, shapeError{path: path.String(), at: v, want: want})
	}
	switch s.kind {
	case shapeAny:
		return errs
	case shapeString:
		if v.Kind != KindString {
			return bad("a string")
		}
	case shapeBool:
		if v.Kind != KindBool {
			return bad("true or false")
		}
	case shapeInt, shapeInt32:
		bits := 64
		if s.kind == shapeInt32 {
			bits = 32
		}
		if v.Kind != KindNumber || !fitsInt(v.Str(), bits) {
			return bad(fmt.Sprintf("an integer (%d-bit)", bits))
		}
	case shapeBytes:
		switch v.Kind {
		case KindString:
			if _, err := decodeStdBase64(v.Str()); err != nil {
				return bad("standard base64 text (" + err.Error() + ")")
			}
		case KindArray:
			items := v.Items()
			for i := range items {
				it := &items[i]
				if it.Kind != KindNull && (it.Kind != KindNumber || !fitsByte(it.Str())) {
					errs = append(errs, shapeError{path: path.with("", i).String(), at: it, want: "a byte value 0 to 255"})
					if len(errs) >= maxShapeErrors {
						return errs
					}
				}
			}
		default:
			return bad("a base64 string")
		}
	case shapeArray:
		if v.Kind != KindArray {
			return bad("a list")
		}
		if s.elem.kind == shapeAny {
			return errs
		}
		items := v.Items()
		for i := range items {
			if s.elem.kind == shapeString && (items[i].Kind == KindString || items[i].Kind == KindNull) {
				continue // the common case, without a step
			}
			errs = checkShapeAt(&items[i], s.elem, path.with("", i), errs)
		}
	case shapeMap:
		if v.Kind != KindObject {
			return bad("an object")
		}
		fields := v.Fields()
		for i := range fields {
			errs = checkShapeAt(&fields[i].Value, s.elem, path.with(fields[i].Key, -1), errs)
		}
	case shapeObject:
		if v.Kind != KindObject {
			return bad("an object")
		}
		fields := v.Fields()
		for i := range fields {
			f := &fields[i]
			for j := range s.fields {
				if foldMatch(f.Key, s.fields[j].name) {
					errs = checkShapeAt(&f.Value, s.fields[j].shape, path.with(f.Key, -1), errs)
					break
				}
			}
		}
	}
	return errs
}

// fitsInt reports whether a JSON number decodes into a Go integer of bits
// bits after opm's float64 round trip: integral and in range.
func fitsInt(lit string, bits int) bool {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1e21 {
		return false
	}
	limit := math.Ldexp(1, bits-1)
	return f >= -limit && f < limit
}

func fitsByte(lit string) bool {
	f, err := strconv.ParseFloat(lit, 64)
	return err == nil && f == math.Trunc(f) && f >= 0 && f <= 255
}

// decodeStdBase64 decodes as encoding/json does for []byte: standard
// alphabet, padding required, CR and LF ignored.
func decodeStdBase64(s string) ([]byte, error) {
	buf := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(buf, []byte(s))
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// fieldFold returns the field of obj that encoding/json would decode into a
// struct field named key: among the keys equal to key under case folding, the
// greatest in byte order (opm re-encodes blobs with sorted keys; the last wins).
func fieldFold(obj *Value, key string) *Field {
	if obj == nil || obj.Kind != KindObject {
		return nil
	}
	var best *Field
	fields := obj.Fields()
	for i := range fields {
		f := &fields[i]
		if strings.EqualFold(f.Key, key) && (best == nil || f.Key > best.Key) {
			best = f
		}
	}
	return best
}

// getFold is fieldFold's value, or nil.
func getFold(obj *Value, key string) *Value {
	if f := fieldFold(obj, key); f != nil {
		return &f.Value
	}
	return nil
}

// strFold returns the string at key, "" when absent, null or not a string.
func strFold(obj *Value, key string) string {
	if v := getFold(obj, key); v != nil && v.Kind == KindString {
		return v.Str()
	}
	return ""
}

// describeValue names a value's kind and shows it briefly, for messages.
func describeValue(v *Value) string {
	if v == nil {
		return "missing"
	}
	switch v.Kind {
	case KindNull:
		return "null"
	case KindArray:
		return "a list " + v.String()
	case KindObject:
		return "an object " + v.String()
	}
	return "a " + v.Kind.String() + " " + v.String()
}

// foldMatch is strings.EqualFold with a quick exit for ASCII keys of another
// length (non-ASCII letters such as the Kelvin sign fold across lengths).
func foldMatch(key, name string) bool {
	if len(key) != len(name) {
		for i := 0; i < len(key); i++ {
			if key[i] >= 0x80 {
				return strings.EqualFold(key, name)
			}
		}
		return false
	}
	return strings.EqualFold(key, name)
}
