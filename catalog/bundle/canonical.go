package bundle

import (
	"math"
	"sort"
	"strconv"

	"github.com/catalogbot/catalogbot/catalog"
)

// appendCanonical writes v as encoding/json writes the map Kubernetes decodes an object into: object keys
// sorted, whole numbers as integers and others as float64, strings escaped as encoding/json escapes them
// (<, > and & included). It is canonicalJSON without the round trip through Go values.
func appendCanonical(b []byte, v *catalog.Value) []byte {
	switch v.Kind {
	case catalog.KindNull:
		return append(b, "null"...)
	case catalog.KindBool:
		return append(b, v.Str()...)
	case catalog.KindNumber:
		return appendNumber(b, v.Str())
	case catalog.KindString:
		return appendString(b, v.Str())
	case catalog.KindArray:
		b = append(b, '[')
		items := v.Items()
		for i := range items {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonical(b, &items[i])
		}
		return append(b, ']')
	case catalog.KindObject:
		fields := v.Fields()
		order := make([]int, len(fields))
		for i := range order {
			order[i] = i
		}
		// Stable: of keys written twice, the last in the document stays last, and it is the one a map keeps.
		sort.SliceStable(order, func(i, j int) bool { return fields[order[i]].Key < fields[order[j]].Key })
		b = append(b, '{')
		wrote := false
		for n, i := range order {
			if n+1 < len(order) && fields[order[n+1]].Key == fields[i].Key {
				continue
			}
			if wrote {
				b = append(b, ',')
			}
			wrote = true
			b = appendString(b, fields[i].Key)
			b = append(b, ':')
			b = appendCanonical(b, &fields[i].Value)
		}
		return append(b, '}')
	}
	return append(b, "null"...)
}

// appendNumber writes a number literal as int64 when it is one, else as encoding/json writes a float64.
func appendNumber(b []byte, lit string) []byte {
	if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return strconv.AppendInt(b, i, 10)
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, lit...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		n := len(b) - start
		if n >= 4 && b[len(b)-4] == 'e' && b[len(b)-3] == '-' && b[len(b)-2] == '0' {
			b[len(b)-2] = b[len(b)-1]
			b = b[:len(b)-1]
		}
	}
	return b
}

// appendString writes s as encoding/json does with HTML escaping on.
func appendString(b []byte, s string) []byte { return catalog.AppendJSONString(b, s, true) }
