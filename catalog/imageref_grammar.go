package catalog

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// The docker image reference grammar, as newer opm applies it through the distribution project's reference
// package (ParseNormalizedNamed: Docker Hub names normalised, then the whole reference matched). That package
// compiles its regular expressions when a program starts, which was a third of the checker's start-up; here
// they are compiled the first time a reference takes the slow path (most never do: plainImageRef accepts the
// usual shapes by a scan). The results, errors included, are those of the package: a differential test and a
// fuzz target compare both.
//
//	reference  := name [ ":" tag ] [ "@" digest ]
//	name       := [ domain "/" ] component ( "/" component )*
//	domain     := label ( "." label )* [ ":" port ]      label: letters, digits, inner '-'
//	component  := alnum ( separator alnum )*            alnum: [a-z0-9]+, separator: '.', '_', "__", '-'+
//	tag        := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
//	digest     := algorithm ":" hex{32,}                 algorithm: sha256, sha384 or sha512 to be usable

// refGrammar is the compiled grammar.
type refGrammar struct {
	reference *regexp.Regexp // anchored; groups: name, tag, digest
	hexID     *regexp.Regexp // a bare 64-hex identifier, which is never a repository name
	digestAny *regexp.Regexp // the shape of any digest, usable algorithm or not
}

var compiledRefGrammar = sync.OnceValue(func() refGrammar {
	const (
		alnum     = `[a-z0-9]+`
		separator = `(?:[._]|__|[-]*)`
		component = alnum + `(?:` + separator + alnum + `)*`
		label     = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		domain    = label + `(?:\.` + label + `)*(?::[0-9]+)?`
		name      = `(?:` + domain + `/)?` + component + `(?:/` + component + `)*`
		tag       = `[\w][\w.-]{0,127}`
		digest    = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}`
	)
	return refGrammar{
		reference: regexp.MustCompile(`^(` + name + `)(?::(` + tag + `))?(?:@(` + digest + `))?$`),
		hexID:     regexp.MustCompile(`^[a-f0-9]{64}$`),
		digestAny: regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`),
	}
})

// The grammar's errors, worded as the reference package words them (findings quote them).
var (
	errRefFormat    = errors.New("invalid reference format")
	errRefUppercase = errors.New("invalid reference format: repository name must be lowercase")
	errRefTooLong   = errors.New("repository name must not be more than 255 characters")
	errDigestFormat = errors.New("invalid checksum digest format")
	errDigestLength = errors.New("invalid checksum digest length")
	errDigestAlgo   = errors.New("unsupported digest algorithm")
)

// maxRefName bounds a repository name with its domain, as the reference package does.
const maxRefName = 255

// digestHexLen is the length of a usable digest algorithm's hex (a switch, not a map: no code at start).
func digestHexLen(algo string) (int, bool) {
	switch algo {
	case "sha256":
		return 64, true
	case "sha384":
		return 96, true
	case "sha512":
		return 128, true
	}
	return 0, false
}

// parseRefGrammar is the slow path of parseImageRef: the whole grammar.
func parseRefGrammar(s string) error {
	g := compiledRefGrammar()
	if g.hexID.MatchString(s) {
		return fmt.Errorf("invalid repository name (%s), cannot specify 64-byte hexadecimal strings", s)
	}
	domain, rest := splitHubDomain(s)
	repo := rest
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		repo = rest[:i]
	}
	if strings.ToLower(repo) != repo {
		return errRefUppercase
	}
	full := domain + "/" + rest
	m := g.reference.FindStringSubmatch(full)
	if m == nil {
		if g.reference.MatchString(strings.ToLower(full)) {
			return errors.New("repository name must be lowercase")
		}
		return errRefFormat
	}
	if len(m[1]) > maxRefName {
		return errRefTooLong
	}
	if m[3] != "" {
		return checkDigest(g, m[3])
	}
	return nil
}

// checkDigest validates a digest as the OCI digest package does: a usable algorithm and lower-case hex of
// its exact length.
func checkDigest(g refGrammar, d string) error {
	i := strings.IndexByte(d, ':')
	if i <= 0 || i+1 == len(d) {
		return errDigestFormat
	}
	algo, hex := d[:i], d[i+1:]
	n, ok := digestHexLen(algo)
	if !ok {
		if !g.digestAny.MatchString(d) {
			return errDigestFormat
		}
		return errDigestAlgo
	}
	if len(hex) != n {
		return errDigestLength
	}
	if !lowerHex(hex) {
		return errDigestFormat
	}
	return nil
}

// splitHubDomain splits a reference into its registry and the rest, as Docker names them: no registry (the
// first part has no '.' or ':' and is not localhost) means Docker Hub, and a one-part Hub name is an official
// image under library/.
func splitHubDomain(s string) (domain, rest string) {
	i := strings.IndexByte(s, '/')
	if i == -1 || (!strings.ContainsAny(s[:i], ".:") && s[:i] != "localhost") {
		domain, rest = "docker.io", s
	} else {
		domain, rest = s[:i], s[i+1:]
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return domain, rest
}
