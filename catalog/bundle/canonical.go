package bundle

import (
	"math"
	"slices"
	"strconv"
	"strings"

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
		var buf [32]int
		order := buf[:0]
		if len(fields) > len(buf) {
			order = make([]int, 0, len(fields))
		}
		for i := range fields {
			order = append(order, i)
		}
		// Stable: of keys written twice, the last in the document stays last, and it is the one a map keeps.
		if len(order) <= len(buf) {
			// Insertion sort: objects are small, and their keys often already in order.
			for i := 1; i < len(order); i++ {
				for j := i; j > 0 && fields[order[j-1]].Key > fields[order[j]].Key; j-- {
					order[j-1], order[j] = order[j], order[j-1]
				}
			}
		} else {
			slices.SortStableFunc(order, func(i, j int) int { return strings.Compare(fields[i].Key, fields[j].Key) })
		}
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

// appendString writes s as encoding/json does with HTML escaping on. Most strings of a manifest are plain
// ASCII that needs no escape: those are copied as they are; any other goes through catalog.AppendJSONString.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainJSON[s[i]] {
			return catalog.AppendJSONString(b, s, true)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainJSON[c]: encoding/json writes the byte c of a string as it is, whatever surrounds it (ASCII but for
// control characters, the quote, the backslash and the HTML-escaped <, > and &).
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()
