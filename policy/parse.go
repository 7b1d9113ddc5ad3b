package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/blang/semver/v4"
	"github.com/google/go-containerregistry/pkg/name"
	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// MaxFileSize bounds the policy file and a teams file.
const MaxFileSize = 1 << 20

const (
	// maxNodes bounds the values visited, aliases expanded included.
	maxNodes = 100_000
	// maxAliasChain bounds an alias that points at an alias.
	maxAliasChain = 16
)

// Parse reads a policy file. file names it in problems. On failure the error
// is a *ParseError listing every problem found, each with a line, a column
// where known, what is wrong and how to fix it.
func Parse(file string, data []byte) (*Policy, error) {
	p := &parser{file: file}
	pol := p.parse(data)
	if len(p.problems) > 0 {
		return nil, p.err()
	}
	pol.File = file
	return pol, nil
}

// maxProblems bounds the problems reported for one file.
const maxProblems = 100

// err returns the problems found, sorted and capped at maxProblems.
func (p *parser) err() *ParseError {
	sortProblems(p.problems)
	if n := len(p.problems); n > maxProblems {
		last := p.problems[maxProblems-1]
		p.problems = append(p.problems[:maxProblems], Problem{File: p.file, Line: last.Line,
			Message: fmt.Sprintf("%d more problems not shown", n-maxProblems), Hint: "fix the problems above first"})
	}
	return &ParseError{Problems: p.problems}
}

type parser struct {
	file     string
	problems []Problem
	visits   int
}

func (p *parser) add(n *yaml.Node, hint, format string, args ...any) {
	pr := Problem{File: p.file, Message: fmt.Sprintf(format, args...), Hint: hint}
	if n != nil {
		pr.Line, pr.Column = n.Line, n.Column
	}
	p.problems = append(p.problems, pr)
}

var yamlErrLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// document decodes the single YAML document in data into its root node, or
// records why it cannot. A document that is empty yields nil and no problem.
func (p *parser) document(data []byte) (root *yaml.Node) {
	if len(data) > MaxFileSize {
		p.add(nil, "keep the file small: it lists people and settings, not content", "file is %d bytes, over the %d byte limit", len(data), MaxFileSize)
		return nil
	}
	defer func() {
		// The YAML library reports its own failures by panicking and recovering;
		// anything escaping that is still bad input, never a crash of ours.
		if r := recover(); r != nil {
			p.add(nil, "check the file with a YAML linter", "the YAML parser failed: %v", r)
			root = nil
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		p.syntax(err)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		p.add(&extra, "keep one document: remove the --- line and what follows, or merge it into the first", "the file holds more than one YAML document")
	} else if !errors.Is(err, io.EOF) {
		p.syntax(err)
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0]
	}
	return &doc
}

func (p *parser) syntax(err error) {
	msg := err.Error()
	if m := yamlErrLine().FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		p.problems = append(p.problems, Problem{File: p.file, Line: line, Message: "YAML syntax error: " + m[2],
			Hint: "fix the YAML syntax at this line (indentation with spaces, a space after ':' and '-', quotes closed)"})
		return
	}
	p.add(nil, "fix the YAML syntax", "YAML syntax error: %s", strings.TrimPrefix(msg, "yaml: "))
}

// deref follows aliases and counts the visit. It returns nil once the value
// budget is spent (after recording that once) or for a broken alias.
func (p *parser) deref(n *yaml.Node) *yaml.Node {
	at := n
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i == maxAliasChain || n.Alias == nil {
			p.add(at, "write the value out instead of using an alias", "alias *%s cannot be resolved", at.Value)
			return nil
		}
		n = n.Alias
	}
	p.visits++
	if p.visits == maxNodes+1 {
		p.add(at, "write values out instead of repeating large anchors", "the file expands to more than %d values (aliases included)", maxNodes)
	}
	if p.visits > maxNodes {
		return nil
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!int", "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			return "nothing (null)"
		}
		return fmt.Sprintf("a %s value", n.ShortTag())
	}
	return "an unexpected YAML node"
}

// fields walks a mapping, calling handle for each known key and reporting
// unknown, duplicate and non-string keys. where names the mapping in messages.
func (p *parser) fields(n *yaml.Node, where string, handlers map[string]func(k, v *yaml.Node)) {
	m := p.deref(n)
	if m == nil || isNull(m) {
		return // an empty value: the caller checks what is required
	}
	if m.Kind != yaml.MappingNode {
		p.add(n, "write it as key: value lines indented under its name", "%s must be a mapping, not %s", where, describe(m))
		return
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := p.deref(k)
		if key == nil {
			continue
		}
		if key.Kind != yaml.ScalarNode || (key.ShortTag() != "!!str" && key.ShortTag() != "!!merge") {
			p.add(k, "keys are plain names such as version or catalogs", "%s has a key that is %s", where, describe(key))
			continue
		}
		if key.ShortTag() == "!!merge" {
			p.add(k, "write the keys out", "merge keys (<<) are not supported in %s", where)
			continue
		}
		if prev, dup := seen[key.Value]; dup {
			p.add(k, "remove one of them", "%s has key %q twice (first at line %d)", where, key.Value, prev.Line)
			continue
		}
		seen[key.Value] = k
		h, ok := handlers[key.Value]
		if !ok {
			p.add(k, unknownKeyHint(key.Value, handlers), "unknown key %q in %s", key.Value, where)
			continue
		}
		h(k, v)
	}
}

func unknownKeyHint(key string, handlers map[string]func(k, v *yaml.Node)) string {
	known := make([]string, 0, len(handlers))
	for k := range handlers {
		known = append(known, k)
	}
	sort.Strings(known)
	best, bestDist := "", 3
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return fmt.Sprintf("keys are case-sensitive: write %q", k)
		}
		if d := editDistance(strings.ToLower(k), strings.ToLower(key)); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf("did you mean %q? known keys here: %s", best, strings.Join(known, ", "))
	}
	return "known keys here: " + strings.Join(known, ", ")
}

// editDistance is the Levenshtein distance, for spelling hints on short keys.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// str reads a string scalar. Numbers and booleans are refused: quote them.
func (p *parser) str(n *yaml.Node, what string) (string, bool) {
	v := p.deref(n)
	if v == nil {
		return "", false
	}
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		hint := "write a string"
		if v.Kind == yaml.ScalarNode && v.ShortTag() != "!!null" {
			hint = fmt.Sprintf("quote it: %q", v.Value)
		}
		p.add(n, hint, "%s must be a string, not %s", what, describe(v))
		return "", false
	}
	return v.Value, true
}

func (p *parser) boolean(n *yaml.Node, what string) (bool, bool) {
	v := p.deref(n)
	if v == nil {
		return false, false
	}
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" {
		p.add(n, "write true or false", "%s must be true or false, not %s", what, describe(v))
		return false, false
	}
	b, _ := strconv.ParseBool(strings.ToLower(v.Value))
	return b, true
}

// list reads a sequence, calling each for every item. null is an empty list.
func (p *parser) list(n *yaml.Node, what string, each func(item *yaml.Node)) {
	v := p.deref(n)
	if v == nil || isNull(v) {
		return
	}
	if v.Kind != yaml.SequenceNode {
		p.add(n, fmt.Sprintf("write a list: %s: [a, b] or one '- item' per line", what), "%s must be a list, not %s", what, describe(v))
		return
	}
	for _, it := range v.Content {
		each(it)
	}
}

func (p *parser) strings(n *yaml.Node, what string, each func(item *yaml.Node, s string)) {
	p.list(n, what, func(it *yaml.Node) {
		if s, ok := p.str(it, "each item of "+what); ok {
			each(it, s)
		}
	})
}

func (p *parser) principals(n *yaml.Node, what string) []Principal {
	var out []Principal
	seen := map[string]int{}
	p.strings(n, what, func(it *yaml.Node, s string) {
		pr, err := ParsePrincipal(s)
		if err != nil {
			p.add(it, "a user is written as their login (alice), a team as @org/team-slug", "%s: %v", what, err)
			return
		}
		key := strings.ToLower(pr.String())
		if line, dup := seen[key]; dup {
			p.add(it, "remove the repeated entry", "%s lists %s twice (first at line %d)", what, s, line)
			return
		}
		seen[key] = it.Line
		out = append(out, pr)
	})
	return out
}

func (p *parser) parse(data []byte) *Policy {
	pol := Default()
	root := p.document(data)
	if len(p.problems) > 0 {
		return nil
	}
	if root == nil || isNull(root) {
		p.add(nil, "start the file with version: 1 and list catalogs and maintainers; see docs/policy.md", "the policy file is empty")
		return nil
	}
	if r := p.deref(root); r != nil && r.Kind == yaml.MappingNode && !p.version(r, pol) {
		return nil // an unknown version: its other keys would only add noise
	}
	var haveVersion, haveCatalogs, haveMaintainers bool
	p.fields(root, "the policy", map[string]func(k, v *yaml.Node){
		"version": func(_, _ *yaml.Node) { haveVersion = true },
		"catalogs": func(k, v *yaml.Node) {
			haveCatalogs = true
			pol.Catalogs = p.catalogs(k, v)
		},
		"maintainers": func(k, v *yaml.Node) {
			haveMaintainers = true
			before := len(p.problems)
			pol.Maintainers = p.principals(v, "maintainers")
			if len(pol.Maintainers) == 0 && len(p.problems) == before {
				p.add(k, "name at least one user or @org/team: maintainers review new packages and protected paths", "maintainers is empty")
			}
		},
		"packages":       func(_, v *yaml.Node) { pol.Packages = p.packages(v) },
		"newPackages":    func(_, v *yaml.Node) { pol.NewPackages = p.newPackages(v) },
		"protectedPaths": func(_, v *yaml.Node) { pol.ProtectedPaths = p.protectedPaths(v) },
		"images":         func(_, v *yaml.Node) { pol.Images = p.images(v) },
		"crdSafety":      func(_, v *yaml.Node) { pol.CRDSafety = p.crdSafety(v) },
		"automerge":      func(_, v *yaml.Node) { pol.Automerge = p.automerge(v) },
		"limits":         func(_, v *yaml.Node) { pol.Limits = p.limits(v) },
		"bundles":        func(_, v *yaml.Node) { pol.Bundles = p.bundles(v) },
		"templates":      func(_, v *yaml.Node) { pol.Templates = p.templates(v) },
		"removals":       func(_, v *yaml.Node) { pol.Removals = p.removals(v) },
	})
	if r := p.deref(root); r == nil || r.Kind != yaml.MappingNode {
		return nil
	}
	if !haveVersion {
		p.add(&yaml.Node{Line: 1, Column: 1}, "add `version: 1` as the first line", "version is missing")
	}
	if !haveCatalogs {
		p.add(&yaml.Node{Line: 1, Column: 1}, "add catalogs: with one '- path: <dir>' per file-based catalog root", "catalogs is missing")
	}
	if !haveMaintainers {
		p.add(&yaml.Node{Line: 1, Column: 1}, "add maintainers: [login, \"@org/team\"]", "maintainers is missing")
	}
	return pol
}

// version checks the version key before anything else, so that a file written
// for another schema version gets one clear message.
func (p *parser) version(root *yaml.Node, pol *Policy) bool {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "version" || root.Content[i].Kind != yaml.ScalarNode {
			continue
		}
		n := root.Content[i+1]
		v := p.deref(n)
		if v == nil {
			return false
		}
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
			p.add(n, "write version: 1", "version must be the number 1, not %s", describe(v))
			return false
		}
		ver, err := strconv.Atoi(v.Value)
		if err != nil || ver != Version {
			p.add(n, "write version: 1, or upgrade catalogbot if the file was written for a newer one", "version %s is not supported: this catalogbot reads version %d", v.Value, Version)
			return false
		}
		pol.Version = ver
		return true
	}
	return true
}

func (p *parser) catalogs(k, n *yaml.Node) []Catalog {
	var out []Catalog
	before := len(p.problems)
	p.list(n, "catalogs", func(it *yaml.Node) {
		c := Catalog{Pos: Position{it.Line, it.Column}}
		if v := p.deref(it); v == nil {
			return
		} else if v.Kind != yaml.MappingNode {
			p.add(it, "write each entry as '- path: <directory>'", "each catalogs entry must be a mapping with a path, not %s", describe(v))
			return
		}
		var havePath bool
		var pathNode *yaml.Node
		p.fields(it, "a catalogs entry", map[string]func(k, v *yaml.Node){
			"path": func(_, v *yaml.Node) {
				s, ok := p.str(v, "catalogs[].path")
				if !ok {
					return
				}
				clean, err := cleanRepoPath(s)
				if err == nil && IsPattern(clean) {
					err = checkRootPattern(clean)
				}
				if err != nil {
					p.add(v, "write the catalog directory relative to the repository root, e.g. catalogs/v4.16, or a pattern such as catalogs/v4.*", "catalogs[].path: %v", err)
					return
				}
				c.Path, havePath = clean, true
				pathNode = v
			},
			"image": func(_, v *yaml.Node) {
				s, ok := p.str(v, "catalogs[].image")
				if !ok {
					return
				}
				if _, err := name.NewTag(s, name.StrictValidation); err != nil {
					p.add(v, "write registry/repository:tag, e.g. quay.io/acme/catalog:v4.16", "catalogs[].image %q is not an image reference with a registry and a tag: %s", s, strings.TrimRight(err.Error(), ": "))
					return
				}
				c.Image = s
			},
			"baseImage": func(_, v *yaml.Node) {
				s, ok := p.str(v, "catalogs[].baseImage")
				if !ok {
					return
				}
				if _, err := name.NewDigest(s, name.StrictValidation); err != nil {
					p.add(v, "pin it by digest: registry/repository@sha256:<64 hex digits> (crane digest <image> prints it)", "catalogs[].baseImage %q is not pinned by digest: %s", s, strings.TrimRight(err.Error(), ": "))
					return
				}
				c.BaseImage = s
			},
		})
		if !havePath {
			if !hasKey(p.deref(it), "path") {
				p.add(it, "add path: <directory of the catalog>", "a catalogs entry has no path")
			}
			return
		}
		if IsPattern(c.Path) {
			// One image cannot hold the several catalogs a pattern stands for.
			if c.Image != "" || c.BaseImage != "" {
				p.add(pathNode, "list each catalog that is built into an image on its own, with its image", "catalog pattern %s cannot name an image or baseImage: each directory it matches would push to the same image", c.Path)
				return
			}
			c.Pattern = c.Path
		}
		for _, prev := range out {
			switch {
			case prev.Path == c.Path:
				p.add(it, "remove the repeated entry", "catalog %s is listed twice (first at line %d)", c.Path, prev.Pos.Line)
				return
			case contains(prev.Path, c.Path) || contains(c.Path, prev.Path):
				p.add(it, "list only separate directories: a file must belong to one catalog", "catalog %s and catalog %s (line %d) are nested", c.Path, prev.Path, prev.Pos.Line)
				return
			}
		}
		out = append(out, c)
	})
	if len(out) == 0 && len(p.problems) == before {
		p.add(k, "list at least one catalog: catalogs: [{path: catalogs/v4.16}]", "catalogs is empty")
	}
	return out
}

func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

// contains reports whether directory dir holds path p (or is it).
func contains(dir, p string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

// cleanRepoPath checks a repository-relative directory and returns it cleaned.
func cleanRepoPath(s string) (string, error) {
	switch {
	case s == "":
		return "", errors.New("empty path")
	case strings.HasPrefix(s, "/"):
		return "", fmt.Errorf("%q is absolute", s)
	case strings.Contains(s, `\`):
		return "", fmt.Errorf("%q contains a backslash: use /", s)
	case len(s) >= 2 && s[1] == ':':
		return "", fmt.Errorf("%q looks like a Windows drive path", s)
	}
	for _, seg := range strings.Split(s, "/") {
		if seg == ".." {
			return "", fmt.Errorf("%q contains ..: catalogs must lie inside the repository", s)
		}
	}
	return path.Clean(s), nil
}

// isDNSLabel: lower-case letters, digits and inner '-' (RFC 1123); the caller bounds the length.
func isDNSLabel(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func (p *parser) packages(n *yaml.Node) map[string]Package {
	out := map[string]Package{}
	m := p.deref(n)
	if m == nil || isNull(m) {
		return out
	}
	if m.Kind != yaml.MappingNode {
		p.add(n, "write packages: then one 'name: {owners: [...]}' per package", "packages must be a mapping from package name to settings, not %s", describe(m))
		return out
	}
	handlers := map[string]func(k, v *yaml.Node){}
	for i := 0; i+1 < len(m.Content); i += 2 {
		key := p.deref(m.Content[i])
		if key == nil || key.Kind != yaml.ScalarNode {
			continue // fields reports it
		}
		pkg := key.Value
		handlers[pkg] = func(k, v *yaml.Node) {
			if len(pkg) > 63 || !isDNSLabel(pkg) {
				p.add(k, "use the package name exactly as in the catalog's olm.package blob", "package name %q is not a valid package name (lower-case letters, digits and '-', at most 63)", pkg)
				return
			}
			pk := Package{Pos: Position{k.Line, k.Column}}
			noOwners := func() {
				p.add(k, "list at least one owner (a login or @org/team), or remove the package: unlisted packages are handled by maintainers", "package %s has no owners", pkg)
			}
			vv := p.deref(v)
			switch {
			case vv == nil:
				return
			case isNull(vv):
				noOwners()
				return
			case vv.Kind == yaml.SequenceNode:
				p.add(v, fmt.Sprintf("write %s: {owners: [...]}", pkg), "package %s must be a mapping with owners, not a list", pkg)
				return
			}
			before := len(p.problems)
			p.fields(v, "package "+pkg, map[string]func(k, v *yaml.Node){
				"owners": func(_, v *yaml.Node) { pk.Owners = p.principals(v, "packages."+pkg+".owners") },
			})
			if len(pk.Owners) == 0 {
				if len(p.problems) == before {
					noOwners()
				}
				return
			}
			out[pkg] = pk
		}
	}
	p.fields(n, "packages", handlers)
	return out
}

func (p *parser) newPackages(n *yaml.Node) NewPackageRule {
	s, ok := p.str(n, "newPackages")
	if !ok {
		return NewPackagesMaintainers
	}
	switch r := NewPackageRule(s); r {
	case NewPackagesMaintainers, NewPackagesAnyone:
		return r
	}
	p.add(n, "write maintainers or anyone", "newPackages %q is not a known rule", s)
	return NewPackagesMaintainers
}

func (p *parser) protectedPaths(n *yaml.Node) []string {
	out := []string{FileName}
	p.strings(n, "protectedPaths", func(it *yaml.Node, s string) {
		if err := checkPattern(s); err != nil {
			p.add(it, "write a path or glob from the repository root, e.g. .github/** or docs/*.md", "protectedPaths: %v", err)
			return
		}
		if s != FileName {
			out = append(out, s)
		}
	})
	return out
}

func (p *parser) images(n *yaml.Node) Images {
	var im Images
	p.fields(n, "images", map[string]func(k, v *yaml.Node){
		"allowedRegistries": func(_, v *yaml.Node) {
			p.strings(v, "images.allowedRegistries", func(it *yaml.Node, s string) {
				if err := checkRegistryPrefix(s); err != nil {
					p.add(it, "write a registry host, optionally with a path: quay.io/acme/ or registry.example.com", "images.allowedRegistries: %v", err)
					return
				}
				im.AllowedRegistries = append(im.AllowedRegistries, s)
			})
		},
		"requireDigest": func(_, v *yaml.Node) {
			im.RequireDigest, _ = p.boolean(v, "images.requireDigest")
		},
	})
	return im
}

func checkRegistryPrefix(s string) error {
	switch {
	case s == "":
		return errors.New("empty entry")
	case strings.Contains(s, "://"):
		return fmt.Errorf("%q has a URL scheme: write the host without it", s)
	case strings.ContainsAny(s, " \t\r\n@"):
		return fmt.Errorf("%q contains a space or @: write a registry and repository prefix, not an image reference", s)
	}
	host, rest, _ := strings.Cut(s, "/")
	if !strings.ContainsAny(host, ".:") && host != "localhost" {
		return fmt.Errorf("%q does not start with a registry host (a name with a dot or a port, or localhost)", s)
	}
	if strings.Contains(rest, ":") {
		return fmt.Errorf("%q has a tag: a prefix names a registry or repository, not a tag", s)
	}
	return nil
}

// isRuleID: a letter or digit, then up to 99 letters, digits, '.', '_' or '-'. (A regular expression with
// {0,99} compiled a hundred states at every start of every program that links the policy.)
func isRuleID(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

func (p *parser) crdSafety(n *yaml.Node) CRDSafety {
	c := CRDSafety{Profile: ProfilePreflight}
	p.fields(n, "crdSafety", map[string]func(k, v *yaml.Node){
		"profile": func(k, v *yaml.Node) {
			s, ok := p.str(v, "crdSafety.profile")
			if !ok {
				return
			}
			switch s {
			case ProfilePreflight, ProfileCompatibility:
				c.Profile, c.ProfilePos = s, Position{k.Line, k.Column}
			default:
				p.add(v, "write preflight (OLM v1's verdict, the default) or compatibility", "crdSafety.profile %q is not known", s)
			}
		},
		"overrides": func(_, v *yaml.Node) {
			m := p.deref(v)
			if m == nil || isNull(m) {
				return
			}
			if m.Kind != yaml.MappingNode {
				p.add(v, "write overrides: {rule.id: warning}", "crdSafety.overrides must be a mapping from rule id to severity, not %s", describe(m))
				return
			}
			handlers := map[string]func(k, v *yaml.Node){}
			for i := 0; i+1 < len(m.Content); i += 2 {
				key := p.deref(m.Content[i])
				if key == nil || key.Kind != yaml.ScalarNode {
					continue
				}
				id := key.Value
				handlers[id] = func(k, v *yaml.Node) {
					if !isRuleID(id) {
						p.add(k, "use a rule id as printed in findings, e.g. crd.enum-added", "crdSafety.overrides: %q is not a rule id", id)
						return
					}
					s, ok := p.str(v, "the severity of "+id)
					if !ok {
						return
					}
					switch s {
					case "error", "warning", "ignore":
						c.Overrides = append(c.Overrides, Override{Rule: id, Severity: s, Pos: Position{k.Line, k.Column}})
					default:
						p.add(v, "write error, warning or ignore", "severity %q for %s is not known", s, id)
					}
				}
			}
			p.fields(v, "crdSafety.overrides", handlers)
		},
	})
	return c
}

func (p *parser) bundles(n *yaml.Node) []BundleRoot {
	var out []BundleRoot
	p.list(n, "bundles", func(it *yaml.Node) {
		b := BundleRoot{Pos: Position{it.Line, it.Column}}
		if v := p.deref(it); v == nil || v.Kind != yaml.MappingNode {
			p.add(it, "write each entry as '- path: operators'", "each bundles entry must be a mapping with a path")
			return
		}
		var havePath bool
		p.fields(it, "a bundles entry", map[string]func(k, v *yaml.Node){
			"path": func(_, v *yaml.Node) {
				s, ok := p.str(v, "bundles[].path")
				if !ok {
					return
				}
				clean, err := cleanRepoPath(s)
				if err != nil {
					p.add(v, "write the directory of the bundle directories relative to the repository root, e.g. operators", "bundles[].path: %v", err)
					return
				}
				b.Path, havePath = clean, true
			},
			"ownersFromCIYaml": func(_, v *yaml.Node) { b.CIYamlOwners, _ = p.boolean(v, "bundles[].ownersFromCIYaml") },
			"requireOLMv1":     func(_, v *yaml.Node) { b.RequireOLMv1, _ = p.boolean(v, "bundles[].requireOLMv1") },
			"strict":           func(_, v *yaml.Node) { b.Strict, _ = p.boolean(v, "bundles[].strict") },
			"optionalSuites": func(_, v *yaml.Node) {
				p.strings(v, "bundles[].optionalSuites", func(item *yaml.Node, s string) {
					switch s {
					case "operatorhub", "deprecated-apis", "good-practices", "operatorframework":
					default:
						p.add(item, "the optional suites catalogbot runs are operatorhub, deprecated-apis, good-practices and operatorframework (all three)", "bundles[].optionalSuites: unknown suite %q", s)
						return
					}
					b.OptionalSuites = append(b.OptionalSuites, s)
				})
			},
			"k8sVersion": func(_, v *yaml.Node) {
				s, ok := p.str(v, "bundles[].k8sVersion")
				if !ok {
					return
				}
				if _, err := semver.ParseTolerant(s); err != nil || len(s) > 64 {
					p.add(v, "write a Kubernetes version such as \"1.25\"", "bundles[].k8sVersion: %q is not a Kubernetes version", s)
					return
				}
				b.K8sVersion = s
			},
			"templatesFromCIYaml": func(_, v *yaml.Node) {
				b.TemplatesFromCIYaml, _ = p.boolean(v, "bundles[].templatesFromCIYaml")
			},
			"image": func(_, v *yaml.Node) {
				s, ok := p.str(v, "bundles[].image")
				if !ok {
					return
				}
				if !strings.Contains(s, "{package}") || !strings.Contains(s, "{version}") || strings.ContainsAny(s, " \t\n") {
					p.add(v, "write the image reference with {package} and {version}, e.g. quay.io/acme/{package}-bundle:v{version}", "bundles[].image %q does not name {package} and {version}", s)
					return
				}
				b.Image = s
			},
		})
		if !havePath {
			if !hasKey(p.deref(it), "path") {
				p.add(it, "add path: <directory holding <package>/<version>/ bundle directories>", "a bundles entry has no path")
			}
			return
		}
		for _, prev := range out {
			if prev.Path == b.Path || contains(prev.Path, b.Path) || contains(b.Path, prev.Path) {
				p.add(it, "list separate directories", "bundle root %s overlaps %s (line %d)", b.Path, prev.Path, prev.Pos.Line)
				return
			}
		}
		out = append(out, b)
	})
	return out
}

func (p *parser) templates(n *yaml.Node) []Template {
	var out []Template
	seen := map[string]int{}
	p.list(n, "templates", func(it *yaml.Node) {
		t := Template{Pos: Position{it.Line, it.Column}}
		if v := p.deref(it); v == nil || v.Kind != yaml.MappingNode {
			p.add(it, "write each entry as '- path: <template file>' with catalogs: [<catalog file>, ...]", "each templates entry must be a mapping with a path and catalogs")
			return
		}
		level := "none"
		var levelSet bool
		var catalogs []*yaml.Node
		p.fields(it, "a templates entry", map[string]func(k, v *yaml.Node){
			"path": func(_, v *yaml.Node) {
				s, ok := p.str(v, "templates[].path")
				if !ok {
					return
				}
				clean, err := cleanRepoPath(s)
				if err != nil || clean == "." {
					p.add(v, "write the template file relative to the repository root", "templates[].path %q is not a file path", s)
					return
				}
				t.Path = clean
			},
			"catalogs": func(_, v *yaml.Node) {
				p.list(v, "templates[].catalogs", func(c *yaml.Node) { catalogs = append(catalogs, c) })
			},
			"migrateLevel": func(_, v *yaml.Node) {
				if s, ok := p.migrateLevel(v, "templates[].migrateLevel"); ok {
					level, levelSet = s, true
				}
			},
			"opm": func(_, v *yaml.Node) {
				s, ok := p.str(v, "templates[].opm")
				if !ok {
					return
				}
				if !validOpmVersion(s) {
					p.add(v, "name an opm release, e.g. v1.46.0", "templates[].opm %q is not an opm release (v1.N.M)", s)
					return
				}
				t.Opm = s
			},
		})
		_ = levelSet
		for _, c := range catalogs {
			tc := TemplateCatalog{MigrateLevel: level}
			c = p.deref(c)
			var raw string
			switch {
			case c != nil && c.Kind == yaml.ScalarNode:
				raw = c.Value
			case c != nil && c.Kind == yaml.MappingNode:
				p.fields(c, "a templates[].catalogs entry", map[string]func(k, v *yaml.Node){
					"path": func(_, v *yaml.Node) { raw, _ = p.str(v, "templates[].catalogs[].path") },
					"migrateLevel": func(_, v *yaml.Node) {
						if s, ok := p.migrateLevel(v, "templates[].catalogs[].migrateLevel"); ok {
							tc.MigrateLevel = s
						}
					},
				})
			default:
				p.add(c, "write a catalog file path, or {path: ..., migrateLevel: ...}", "a templates[].catalogs entry must be a path or a mapping")
				continue
			}
			clean, err := cleanRepoPath(raw)
			if err != nil || clean == "." {
				p.add(c, "write the catalog file relative to the repository root", "templates[].catalogs: %q is not a file path", raw)
				continue
			}
			tc.Path = clean
			t.Catalogs = append(t.Catalogs, tc)
		}
		if t.Path == "" {
			if !hasKey(p.deref(it), "path") {
				p.add(it, "add path: <template file>", "a templates entry has no path")
			}
			return
		}
		if len(t.Catalogs) == 0 {
			p.add(it, "add catalogs: [<catalog file the template renders into>]", "templates entry %s names no catalog", t.Path)
			return
		}
		if line, dup := seen[t.Path]; dup {
			p.add(it, "list each template once, with all its catalogs", "template %s is listed twice (line %d)", t.Path, line)
			return
		}
		seen[t.Path] = it.Line
		out = append(out, t)
	})
	return out
}

func (p *parser) migrateLevel(v *yaml.Node, what string) (string, bool) {
	s, ok := p.str(v, what)
	if !ok {
		return "", false
	}
	for _, l := range MigrateLevels {
		if s == l {
			return s, true
		}
	}
	p.add(v, "use none or bundle-object-to-csv-metadata", "%s %q is not a migrate level opm knows", what, s)
	return "", false
}

func validOpmVersion(s string) bool {
	s = strings.TrimPrefix(s, "v")
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 || parts[0] != "1" {
		return false
	}
	for _, part := range parts {
		if part == "" || strings.Trim(part, "0123456789") != "" {
			return false
		}
	}
	return true
}

// maxFileBytesCeiling is the largest limits.maxFileBytes accepted: the loader's own bound.
const maxFileBytesCeiling = 256 << 20

func (p *parser) limits(n *yaml.Node) Limits {
	l := Default().Limits
	p.fields(n, "limits", map[string]func(k, v *yaml.Node){
		"maxFileBytes": func(_, v *yaml.Node) {
			v = p.deref(v)
			if v == nil {
				return
			}
			var b int64
			if v.Kind != yaml.ScalarNode || v.Decode(&b) != nil || v.Tag != "!!int" {
				p.add(v, "write a whole number of bytes, e.g. 16777216 for 16 MiB", "limits.maxFileBytes must be a number of bytes")
				return
			}
			if b < 1024 || b > maxFileBytesCeiling {
				p.add(v, fmt.Sprintf("choose between 1024 and %d bytes", maxFileBytesCeiling), "limits.maxFileBytes %d is out of range", b)
				return
			}
			l.MaxFileBytes = b
		},
	})
	return l
}

func (p *parser) automerge(n *yaml.Node) Automerge {
	a := Default().Automerge
	p.fields(n, "automerge", map[string]func(k, v *yaml.Node){
		"enabled": func(_, v *yaml.Node) { a.Enabled, _ = p.boolean(v, "automerge.enabled") },
		"method": func(_, v *yaml.Node) {
			s, ok := p.str(v, "automerge.method")
			if !ok {
				return
			}
			switch m := MergeMethod(s); m {
			case MergeMethodMerge, MergeMethodSquash, MergeMethodRebase:
				a.Method = m
			default:
				p.add(v, "write merge, squash or rebase", "automerge.method %q is not a GitHub merge method", s)
			}
		},
		"holdLabels": func(_, v *yaml.Node) {
			a.HoldLabels = []string{}
			p.strings(v, "automerge.holdLabels", func(it *yaml.Node, s string) {
				if s == "" || len(s) > 50 {
					p.add(it, "GitHub labels are 1 to 50 characters", "automerge.holdLabels: %q is not a valid label name", s)
					return
				}
				a.HoldLabels = append(a.HoldLabels, s)
			})
		},
		"requireOwnerApproval": func(_, v *yaml.Node) {
			a.RequireOwnerApproval, _ = p.boolean(v, "automerge.requireOwnerApproval")
		},
	})
	return a
}
