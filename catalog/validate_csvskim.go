package catalog

import (
	"bytes"
	"strconv"
)

// csvIdentity reads kind, metadata.name and spec.version from a JSON object
// without decoding the rest: CSVs are large (icons, install strategy) and
// only these three strings are compared with the bundle. ok is false when the
// text is not a JSON object this skimmer understands.
func csvIdentity(doc []byte) (kind, name, version string, ok bool) {
	s := jsonSkim{b: doc}
	ok = s.object(func(key string) bool {
		switch key {
		case "kind":
			kind, ok = s.str()
			return ok
		case "metadata":
			return s.object(func(k string) bool {
				if k == "name" {
					var ok bool
					name, ok = s.str()
					return ok
				}
				return s.skip()
			})
		case "spec":
			return s.object(func(k string) bool {
				if k == "version" {
					var ok bool
					version, ok = s.str()
					return ok
				}
				return s.skip()
			})
		}
		return s.skip()
	})
	return kind, name, version, ok
}

// jsonSkim walks JSON text, skipping what it is not asked for at the speed of
// bytes.IndexByte. It trusts nothing: every failure is a false return.
type jsonSkim struct {
	b []byte
	i int
}

func (s *jsonSkim) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// object calls field for each key, with the reader before the value; field
// must consume the value.
func (s *jsonSkim) object(field func(key string) bool) bool {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return s.skip() && false
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		s.ws()
		key, ok := s.str()
		if !ok {
			return false
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		if !field(key) {
			return false
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// strEnd returns the index of the closing quote of the string starting at s.i
// (at its opening quote), and whether it holds escapes.
func (s *jsonSkim) strEnd() (int, bool, bool) {
	escaped := false
	for j := s.i + 1; j < len(s.b); {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			return 0, false, false
		}
		end := j + k
		// An odd run of backslashes before the quote escapes it.
		n := 0
		for p := end - 1; p > s.i && s.b[p] == '\\'; p-- {
			n++
		}
		if n > 0 || bytes.IndexByte(s.b[j:end], '\\') >= 0 {
			escaped = true
		}
		if n%2 == 0 {
			return end, escaped, true
		}
		j = end + 1
	}
	return 0, false, false
}

func (s *jsonSkim) str() (string, bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	end, escaped, ok := s.strEnd()
	if !ok {
		return "", false
	}
	raw := s.b[s.i : end+1]
	s.i = end + 1
	if !escaped {
		return string(raw[1 : len(raw)-1]), true
	}
	v, err := strconv.Unquote(string(raw))
	return v, err == nil
}

// skip passes over one value of any kind.
func (s *jsonSkim) skip() bool {
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		end, _, ok := s.strEnd()
		s.i = end + 1
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '{', '[':
				depth++
				s.i++
			case '}', ']':
				depth--
				s.i++
				if depth == 0 {
					return true
				}
			case '"':
				end, _, ok := s.strEnd()
				if !ok {
					return false
				}
				s.i = end + 1
			default:
				s.i++
			}
		}
		return false
	}
	// A number, true, false or null: up to the next delimiter.
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return s.i > start
		}
		s.i++
	}
	return s.i > start
}
