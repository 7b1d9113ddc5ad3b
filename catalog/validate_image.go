package catalog

import "strings"

// ParseImageReference reports why s is not a valid image reference as the distribution project's
// reference.ParseNormalizedNamed judges it (what opm and operator-framework/api's bundle validator use).
func ParseImageReference(s string) error { return parseImageRef(s) }

// parseImageRef reports why s is not a valid image reference, as newer opm
// judges it (the docker reference grammar, with Docker Hub normalisation:
// the distribution project's reference.ParseNormalizedNamed). References in
// the plain shape catalogs use — registry/path[:tag][@sha256:<hex>] in lower
// case — are accepted by a quick scan; anything else goes through the
// grammar's regular expressions (parseRefGrammar).
func parseImageRef(s string) error {
	if plainImageRef(s) {
		return nil
	}
	return parseRefGrammar(s)
}

// plainImageRef accepts a subset of valid references quickly. It never
// accepts what ParseNormalizedNamed refuses (tested); it may refuse valid
// ones, which then take the slow path.
func plainImageRef(s string) bool {
	name := s
	if at := strings.IndexByte(s, '@'); at >= 0 {
		name = s[:at]
		d := s[at+1:]
		if len(d) != len("sha256:")+64 || !strings.HasPrefix(d, "sha256:") || !lowerHex(d[len("sha256:"):]) {
			return false
		}
	}
	slash := strings.IndexByte(name, '/')
	if slash <= 0 {
		return false
	}
	if colon := strings.LastIndexByte(name, ':'); colon > strings.LastIndexByte(name, '/') {
		if !plainTag(name[colon+1:]) {
			return false
		}
		name = name[:colon]
	}
	if len(name) > 255 {
		return false
	}
	domain, path := name[:slash], name[slash+1:]
	if !plainDomain(domain) {
		return false
	}
	for _, comp := range strings.Split(path, "/") {
		if !plainComponent(comp) {
			return false
		}
	}
	return true
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func alnumLower(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' }

// plainTag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}.
func plainTag(t string) bool {
	if len(t) == 0 || len(t) > 128 || t[0] == '.' || t[0] == '-' {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(alnumLower(c) || 'A' <= c && c <= 'Z' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// plainDomain: lower-case host labels (with inner '-') joined by '.', with a
// '.' somewhere (or "localhost"), and an optional numeric port.
func plainDomain(d string) bool {
	host := d
	if c := strings.IndexByte(d, ':'); c >= 0 {
		host = d[:c]
		port := d[c+1:]
		if port == "" {
			return false
		}
		for i := 0; i < len(port); i++ {
			if port[i] < '0' || port[i] > '9' {
				return false
			}
		}
	}
	if host != "localhost" && !strings.Contains(host, ".") {
		return false
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			if !alnumLower(label[i]) && label[i] != '-' {
				return false
			}
		}
	}
	return true
}

// plainComponent: [a-z0-9]+ runs joined by single '.', '_' or '-'.
func plainComponent(c string) bool {
	if c == "" || !alnumLower(c[0]) || !alnumLower(c[len(c)-1]) {
		return false
	}
	for i := 1; i < len(c); i++ {
		if !alnumLower(c[i]) && !alnumLower(c[i-1]) {
			return false // two separators in a row
		}
		if !alnumLower(c[i]) && c[i] != '.' && c[i] != '_' && c[i] != '-' {
			return false
		}
	}
	return true
}
