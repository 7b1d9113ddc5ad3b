package decode

import (
	"strings"
)

// yamlChunk is one document of a YAML file as opm's reader cuts it.
type yamlChunk struct {
	text string // the chunk's bytes, a substring of the file
	off  int    // offset of text in the file
	line int    // file line of the first line of text
}

// parseYAMLStream cuts the file into documents exactly as
// k8s.io/apimachinery's YAMLReader (used by opm) does, and parses each.
//
// The reader cuts on every line starting with "---" whose rest is blank or a
// comment (any other rest rejects the whole file). A separator met while the
// current chunk is still empty is not a cut: it is kept as the chunk's first
// line. So a leading "---" is harmless, "---" twice in the middle of a file is
// harmless, but a chunk of only blank or comment lines (a header comment
// before the first "---", a trailing "---" with anything after it, "---"
// three times in a row) becomes a document that is null, which opm refuses.
func (p *fileParser) parseYAMLStream() {
	src := p.src
	chunkStart, chunkLine := 0, 1
	for off, line := 0, 1; ; {
		at, end, atLine, ok := nextSeparatorLine(src, off, line)
		if !ok {
			break
		}
		next := min(end+1, len(src))
		rest := strings.TrimSpace(src[at+3 : end])
		if rest != "" && rest[0] != '#' {
			p.addf(ruleLoadYAMLSeparator, atLine, 4, "",
				"line starts with \"---\" followed by %q: opm reads every line starting with \"---\" as a document separator and refuses the whole file when more than a comment follows", clip(rest, 40))
			return
		}
		if at > chunkStart { // the chunk holds something: cut here
			if !p.yamlDocument(yamlChunk{text: src[chunkStart:at], off: chunkStart, line: chunkLine}) {
				return
			}
			chunkStart, chunkLine = next, atLine+1
		}
		off, line = next, atLine+1
	}
	if chunkStart < len(src) {
		p.yamlDocument(yamlChunk{text: src[chunkStart:], off: chunkStart, line: chunkLine})
	}
}

// nextSeparatorLine finds the first line at or after off (the start of a line, line its number) that starts
// with "---": its offset at, the offset of its end (its line break, or the end of src) and its line number.
// ok is false when there is none. It looks for "---" and counts line breaks over the whole stretch at once
// rather than line by line (most lines of a manifest are short, and a call for each cost a fifth of the cut).
func nextSeparatorLine(src string, off, line int) (at, end, atLine int, ok bool) {
	for {
		k := strings.Index(src[off:], "---")
		if k < 0 {
			return 0, 0, 0, false
		}
		at = off + k
		if at > off && src[at-1] != '\n' {
			// Inside a line: go on from the next one.
			nl := strings.IndexByte(src[at:], '\n')
			if nl < 0 {
				return 0, 0, 0, false
			}
			line += strings.Count(src[off:at+nl+1], "\n")
			off = at + nl + 1
			continue
		}
		line += strings.Count(src[off:at], "\n")
		end = strings.IndexByte(src[at:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += at
		}
		return at, end, line, true
	}
}

// yamlDocument parses one chunk and records its document. It returns false
// when the file must not be read further.
func (p *fileParser) yamlDocument(c yamlChunk) bool {
	if len(p.docs) >= p.lim.MaxDocuments {
		p.addf(ruleLoadTooManyDocs, c.line, 1, "", "file holds more than %d documents; the rest were not read", p.lim.MaxDocuments)
		return false
	}
	if blankYAML(c.text) {
		p.addf(ruleLoadEmptyDocument, c.line, 1, "", "%s", emptyChunkMessage(c.text))
		return true
	}
	v, ok := p.yamlFast(c)
	if !ok {
		v, ok = p.yamlFull(c)
		if !ok {
			// Past an alias budget of the file or of the read, the rest is not read: one finding, no cascade.
			return !p.aliasBudgetSpent()
		}
	}
	p.addDoc(v)
	return true
}

// aliasBudgetSpent reports whether the file or the read it belongs to has used up its alias expansions.
func (p *fileParser) aliasBudgetSpent() bool {
	if p.aliasValues > p.lim.MaxAliasExpansionPerFile {
		return true
	}
	return p.lim.AliasSpent != nil && p.lim.AliasSpent.Load() > p.lim.MaxAliasExpansionPerRead
}

// blankYAML reports whether a chunk holds only blank lines, comment lines and
// separator lines: YAML reads it as null.
func blankYAML(text string) bool {
	for len(text) > 0 {
		nl := strings.IndexByte(text, '\n')
		var ln string
		if nl < 0 {
			ln, text = text, ""
		} else {
			ln, text = text[:nl], text[nl+1:]
		}
		t := strings.Trim(ln, " \t\r")
		if t == "" || t[0] == '#' {
			continue
		}
		if strings.HasPrefix(ln, "---") {
			if r := strings.TrimSpace(ln[3:]); r == "" || r[0] == '#' {
				continue
			}
		}
		return false
	}
	return true
}

func emptyChunkMessage(text string) string {
	hasComment, hasSep := false, false
	for _, ln := range strings.Split(text, "\n") {
		t := strings.TrimSpace(ln)
		switch {
		case strings.HasPrefix(ln, "---"):
			hasSep = true
		case strings.HasPrefix(t, "#"):
			hasComment = true
		}
	}
	switch {
	case hasComment:
		return "a document holding only comments: opm reads it as an object without schema and refuses it; remove the '---' that cuts the comment off from the next document, or the comment-only block"
	case hasSep:
		return "an empty document between separators: opm cuts the file on every '---' line and reads the empty piece as an object without schema, which it refuses; remove the extra '---'"
	}
	return "a document holding only blank lines (after a trailing '---', say): opm reads it as an object without schema and refuses it; remove the blank lines or the '---' before them"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
