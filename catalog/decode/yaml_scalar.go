package decode

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// scalarType is what goyaml.v2 resolves a plain scalar to.
type scalarType uint8

const (
	scalarString scalarType = iota
	scalarNull
	scalarBool
	scalarInt   // fits int64
	scalarUint  // beyond int64, fits uint64
	scalarFloat // float64, may be NaN or infinite
	scalarStamp // looks like a timestamp: kept as its text
	scalarMerge // "<<"
)

type resolvedScalar struct {
	typ scalarType
	b   bool
	i   int64
	u   uint64
	f   float64
}

// resolveYAML11 resolves a plain scalar exactly as goyaml.v2's resolve does
// with no tag: YAML 1.1 booleans (y, yes, on, ...), nulls, ints in bases
// 2/8/10/16 with underscores, floats, and timestamps (kept as text).
func resolveYAML11(s string) resolvedScalar {
	if s == "" {
		return resolvedScalar{typ: scalarNull}
	}
	switch c := s[0]; {
	case c == '+' || c == '-' || ('0' <= c && c <= '9'):
		if r, ok := resolveSpecial(s); ok {
			return r
		}
		if looksLikeTimestamp(s) {
			return resolvedScalar{typ: scalarStamp}
		}
		plain := s
		if strings.IndexByte(plain, '_') >= 0 {
			plain = strings.ReplaceAll(plain, "_", "")
		}
		if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return resolvedScalar{typ: scalarInt, i: i}
		}
		if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return resolvedScalar{typ: scalarUint, u: u}
		}
		if yamlStyleFloat(plain) {
			if f, err := strconv.ParseFloat(plain, 64); err == nil {
				return resolvedScalar{typ: scalarFloat, f: f}
			}
		}
		// 0b and -0b are covered by ParseInt with base 0.
	case c == '.':
		if r, ok := resolveSpecial(s); ok {
			return r
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return resolvedScalar{typ: scalarFloat, f: f}
		}
	case strings.IndexByte("yYnNtTfFoO~<", c) >= 0:
		if r, ok := resolveSpecial(s); ok {
			return r
		}
	}
	return resolvedScalar{typ: scalarString}
}

// resolveSpecial looks s up in goyaml.v2's table of fixed spellings.
func resolveSpecial(s string) (resolvedScalar, bool) {
	if len(s) > 6 {
		return resolvedScalar{}, false
	}
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return resolvedScalar{typ: scalarBool, b: true}, true
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return resolvedScalar{typ: scalarBool}, true
	case "~", "null", "Null", "NULL":
		return resolvedScalar{typ: scalarNull}, true
	case ".nan", ".NaN", ".NAN":
		return resolvedScalar{typ: scalarFloat, f: math.NaN()}, true
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return resolvedScalar{typ: scalarFloat, f: math.Inf(1)}, true
	case "-.inf", "-.Inf", "-.INF":
		return resolvedScalar{typ: scalarFloat, f: math.Inf(-1)}, true
	case "<<":
		return resolvedScalar{typ: scalarMerge}, true
	}
	return resolvedScalar{}, false
}

// yamlStyleFloat matches ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$.
func yamlStyleFloat(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// timestampLayouts are the layouts goyaml.v2 tries.
var timestampLayouts = [...]string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

func looksLikeTimestamp(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			break
		}
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, layout := range timestampLayouts {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}

// resolvePlainScalar turns a plain scalar into a Value as opm sees it after
// YAML → JSON → map[string]any → JSON. rule is set when opm would refuse it.
func resolvePlainScalar(s string) (v Value, rule, msg string) {
	r := resolveYAML11(s)
	switch r.typ {
	case scalarNull:
		return Value{Kind: KindNull}, "", ""
	case scalarBool:
		if r.b {
			return scalarValue(KindBool, "true"), "", ""
		}
		return scalarValue(KindBool, "false"), "", ""
	case scalarInt:
		if shortInteger(s) {
			return scalarValue(KindNumber, s), "", ""
		}
		str, _ := formatNumber(float64(r.i))
		return scalarValue(KindNumber, str), "", ""
	case scalarUint:
		str, _ := formatNumber(float64(r.u))
		return scalarValue(KindNumber, str), "", ""
	case scalarFloat:
		str, ok := formatNumber(r.f)
		if !ok {
			return Value{}, ruleLoadNumberRange, "value " + strconv.Quote(s) + " is YAML for a float that JSON cannot hold (NaN or infinity); opm refuses the file. Quote it if it is text"
		}
		return scalarValue(KindNumber, str), "", ""
	}
	return scalarValue(KindString, s), "", ""
}

// yamlKeyString converts a plain mapping key as sigs.k8s.io/yaml does.
// problem is non-empty when the conversion fails.
func yamlKeyString(s string) (key, problem string) {
	r := resolveYAML11(s)
	switch r.typ {
	case scalarNull:
		return "", "is null"
	case scalarBool:
		if r.b {
			return "true", ""
		}
		return "false", ""
	case scalarInt:
		return strconv.FormatInt(r.i, 10), ""
	case scalarUint:
		return "", "is an integer beyond int64"
	case scalarFloat:
		f := strconv.FormatFloat(r.f, 'g', -1, 32)
		switch f {
		case "+Inf":
			f = ".inf"
		case "-Inf":
			f = "-.inf"
		case "NaN":
			f = ".nan"
		}
		return f, ""
	}
	return s, ""
}
