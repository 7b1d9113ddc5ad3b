package template

import (
	"bytes"
	"slices"
	"strings"
	"unicode"
)

// directYAML writes one compact JSON blob (no whitespace between tokens, as encoding/json writes it) as YAML
// without going through a YAML library, for the blobs where that is certain to give jsonToYAML's bytes: every
// string is one go-yaml v2 writes as a plain scalar that no line folding can touch (ASCII letters, digits and a
// few punctuation marks, no space, not readable as anything but a string) or is empty, every number a small
// integer, no key repeated. ok is false for any other blob (and for whitespace between tokens: YAML reads some
// JSON layouts differently), which the caller converts the slow way. The bulk of a rendered catalog, the
// olm.bundle blobs with their base64 manifests, is of the first kind. FuzzDirectYAML compares both ways on
// arbitrary JSON.
func directYAML(js []byte) (out []byte, ok bool) {
	p := yamlParser{src: js}
	if p.i >= len(js) || js[p.i] != '{' {
		return nil, false
	}
	n, ok := p.value(0)
	if !ok {
		return nil, false
	}
	if p.i != len(js) {
		return nil, false
	}
	out = make([]byte, 0, len(js)+len(js)/8)
	if len(n.keys) == 0 {
		return append(out, "{}\n"...), true
	}
	return writeYAMLMap(out, n, 0, false), true
}

// ynode is a parsed JSON value: a scalar as YAML text, or a mapping (keys sorted as go-yaml v2 sorts them),
// or a sequence.
type ynode struct {
	kind  byte // 'v' scalar, 'm' mapping, 's' sequence
	text  []byte
	keys  []string
	vals  []*ynode
	items []*ynode
}

type yamlParser struct {
	src []byte
	i   int
}

// maxDirectDepth bounds the nesting the direct writer follows; deeper blobs go the slow way.
const maxDirectDepth = 100

func (p *yamlParser) value(depth int) (*ynode, bool) {
	if depth > maxDirectDepth || p.i >= len(p.src) {
		return nil, false
	}
	switch c := p.src[p.i]; {
	case c == '{':
		p.i++
		n := &ynode{kind: 'm'}
		if p.i < len(p.src) && p.src[p.i] == '}' {
			p.i++
			return n, true
		}
		for {
			kb, ok := p.str()
			if !ok || !plainKey(kb) {
				return nil, false
			}
			k := string(kb)
			if p.i >= len(p.src) || p.src[p.i] != ':' {
				return nil, false
			}
			p.i++
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			n.keys = append(n.keys, k)
			n.vals = append(n.vals, v)
			if p.i >= len(p.src) {
				return nil, false
			}
			if p.src[p.i] == ',' {
				p.i++
				continue
			}
			if p.src[p.i] != '}' {
				return nil, false
			}
			p.i++
			break
		}
		if !sortKeys(n) {
			return nil, false
		}
		return n, true
	case c == '[':
		p.i++
		n := &ynode{kind: 's'}
		if p.i < len(p.src) && p.src[p.i] == ']' {
			p.i++
			return n, true
		}
		for {
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			n.items = append(n.items, v)
			if p.i >= len(p.src) {
				return nil, false
			}
			if p.src[p.i] == ',' {
				p.i++
				continue
			}
			if p.src[p.i] != ']' {
				return nil, false
			}
			p.i++
			return n, true
		}
	case c == '"':
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		if len(s) == 0 {
			return &ynode{kind: 'v', text: []byte(`""`)}, true
		}
		if !plainValue(s) {
			return nil, false
		}
		return &ynode{kind: 'v', text: s}, true
	case c == '-' || '0' <= c && c <= '9':
		start := p.i
		if c == '-' {
			p.i++
		}
		digits := p.i
		for p.i < len(p.src) && '0' <= p.src[p.i] && p.src[p.i] <= '9' {
			p.i++
		}
		n := p.i - digits
		// A small integer in JSON's own spelling: go-yaml reads it as an int and writes it back the same.
		if n == 0 || n > 15 || (n > 1 && p.src[digits] == '0') || (c == '-' && n == 1 && p.src[digits] == '0') {
			return nil, false
		}
		if p.i < len(p.src) && (p.src[p.i] == '.' || p.src[p.i] == 'e' || p.src[p.i] == 'E') {
			return nil, false
		}
		return &ynode{kind: 'v', text: p.src[start:p.i]}, true
	}
	for _, lit := range []string{"true", "false", "null"} {
		if strings.HasPrefix(string(p.src[p.i:min(len(p.src), p.i+5)]), lit) {
			p.i += len(lit)
			return &ynode{kind: 'v', text: []byte(lit)}, true
		}
	}
	return nil, false
}

// str reads a JSON string made only of plainChar (so without escapes), returning it as a slice of the
// input: one test a byte, no copy. ok is false for any other string.
func (p *yamlParser) str() ([]byte, bool) {
	if p.i >= len(p.src) || p.src[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	j := start
	for j < len(p.src) && plainChar[p.src[j]] {
		j++
	}
	if j >= len(p.src) || p.src[j] != '"' {
		return nil, false
	}
	p.i = j + 1
	return p.src[start:j], true
}

// plainChar are the characters a plain scalar may hold here: none starts a comment, a flow collection, an
// alias, a tag or a quote anywhere in a scalar.
var plainChar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "._/-+=@:~" {
		t[c] = true
	}
	return t
}()

// yamlNonStrings are the words go-yaml v2 reads as something else than a string (booleans, null), compared
// without case.
var yamlNonStrings = []string{"y", "n", "yes", "no", "on", "off", "true", "false", "null"}

// plainValue reports whether go-yaml v2 writes s, made of plainChar only (str checked that), as a plain
// scalar, as it is: starting with a letter or a slash (no indicator, no number, no .inf), not ending with a
// colon, not a boolean or null word; a string starting with a digit only when it is a version with at least
// two dots or holds a slash (never a number, a base-60 number or a date).
func plainValue(s []byte) bool {
	if len(s) == 0 || s[len(s)-1] == ':' {
		return false
	}
	switch c := s[0]; {
	case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		if len(s) > 5 {
			return true
		}
		return !slices.Contains(yamlNonStrings, strings.ToLower(string(s)))
	case c == '/':
		return true
	case '0' <= c && c <= '9':
		// A slash is in no number, base-60 number or date: an image reference by address, say.
		return versionLike(string(s)) || bytes.IndexByte(s, '/') >= 0
	}
	return false
}

// versionLike: digits, then at least two more dot-separated runs of digits, then optionally - or + and
// anything plainChar allows but a colon.
func versionLike(s string) bool {
	i, dots := 0, 0
	for {
		j := i
		for j < len(s) && '0' <= s[j] && s[j] <= '9' {
			j++
		}
		if j == i {
			return false
		}
		i = j
		if i < len(s) && s[i] == '.' {
			dots++
			i++
			continue
		}
		break
	}
	if dots < 2 {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i] != '-' && s[i] != '+' {
		return false
	}
	return !strings.Contains(s[i:], ":")
}

// plainKey: a key is written as a simple key (at most 128 characters) in plain style, and holds no digit:
// go-yaml v2 compares runs of digits in keys as numbers, an order that is not transitive (a10, a2, A0, a1A),
// so it sorts such keys differently depending on the order it meets them in, which is Go's random map order.
// Keys without digits it orders by character (non-letters first), the order sortKeys gives them.
func plainKey(k []byte) bool {
	return len(k) <= 128 && plainValue(k) && !bytes.ContainsAny(k, "0123456789")
}

// sortKeys orders a mapping's keys as go-yaml v2 does (its keyList: runs of digits compared as numbers,
// letters before other characters) and reports false on a repeated key.
func sortKeys(n *ynode) bool {
	idx := make([]int, len(n.keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case yamlKeyLess(n.keys[a], n.keys[b]):
			return -1
		case yamlKeyLess(n.keys[b], n.keys[a]):
			return 1
		}
		return 0
	})
	keys := make([]string, len(idx))
	vals := make([]*ynode, len(idx))
	for i, j := range idx {
		keys[i], vals[i] = n.keys[j], n.vals[j]
		if i > 0 && keys[i] == keys[i-1] {
			return false
		}
	}
	n.keys, n.vals = keys, vals
	return true
}

// yamlKeyLess is go-yaml v2's order of two string keys (sorter.go, keyList.Less).
func yamlKeyLess(a, b string) bool {
	ar, br := []rune(a), []rune(b)
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al := unicode.IsLetter(ar[i])
		bl := unicode.IsLetter(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(ar[j]); j-- {
				if ar[j] != '0' {
					an = 1
					bn = 1
					break
				}
			}
		}
		for ai = i; ai < len(ar) && unicode.IsDigit(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && unicode.IsDigit(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}

func yamlIndent(b []byte, n int) []byte {
	for range n {
		b = append(b, ' ')
	}
	return b
}

// writeYAMLMap writes a non-empty mapping whose keys stand at column indent; inline: the first key goes on
// the line already begun (a sequence item's "- ").
func writeYAMLMap(b []byte, n *ynode, indent int, inline bool) []byte {
	for i, k := range n.keys {
		if i > 0 || !inline {
			b = yamlIndent(b, indent)
		}
		b = append(b, k...)
		b = append(b, ':')
		b = writeYAMLValue(b, n.vals[i], indent, indent+2, indent)
	}
	return b
}

// writeYAMLSeq writes a non-empty sequence whose dashes stand at column indent.
func writeYAMLSeq(b []byte, n *ynode, indent int, inline bool) []byte {
	for i, v := range n.items {
		if i > 0 || !inline {
			b = yamlIndent(b, indent)
		}
		b = append(b, '-')
		switch {
		case v.kind == 'm' && len(v.keys) > 0:
			b = append(b, ' ')
			b = writeYAMLMap(b, v, indent+2, true)
		case v.kind == 's' && len(v.items) > 0:
			b = append(b, ' ')
			b = writeYAMLSeq(b, v, indent+2, true)
		default:
			b = writeYAMLValue(b, v, indent, indent, indent)
		}
	}
	return b
}

// writeYAMLValue writes what follows "key:" or "-": a scalar or an empty collection on the same line, else a
// line break and the mapping (at mapIndent) or sequence (at seqIndent).
func writeYAMLValue(b []byte, v *ynode, _, mapIndent, seqIndent int) []byte {
	switch {
	case v.kind == 'v':
		b = append(b, ' ')
		b = append(b, v.text...)
		return append(b, '\n')
	case v.kind == 'm' && len(v.keys) == 0:
		return append(b, " {}\n"...)
	case v.kind == 's' && len(v.items) == 0:
		return append(b, " []\n"...)
	case v.kind == 'm':
		b = append(b, '\n')
		return writeYAMLMap(b, v, mapIndent, false)
	}
	b = append(b, '\n')
	return writeYAMLSeq(b, v, seqIndent, false)
}
