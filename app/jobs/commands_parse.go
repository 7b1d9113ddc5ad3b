package jobs

import (
	"sort"
	"strings"
)

// Comment commands are read from a comment as GitHub renders it (CommonMark with GitHub's handling of raw
// HTML): a command is a line of Markdown text that a reader sees as it is. A line is a command only when
// it starts at the left margin with the slash and it is part of a paragraph of the top level — not of a
// fenced or indented code block, a block quote (lazy continuation lines included), an HTML block, an HTML
// comment, a code span, or the content of <details>, <pre>, <textarea>, <script> or <style> (collapsed,
// preformatted or removed by GitHub). A fence closes only with the same character, at least as many of
// them, and nothing but spaces after; a fence or a quote that is never closed runs to the end.

// mdBlock is the block parser's state for one container: the document, or the content of a block quote.
type mdBlock struct {
	// fence is the open code fence ("" when none): its character repeated as often as it was opened.
	fence string
	// html is the end condition of the open HTML block (0 when none), as CommonMark numbers them.
	html int
	// para holds the lines of the open paragraph, lazy the open paragraph belongs to this container.
	para []string
	// quote is the open block quote's content.
	quote *mdBlock
}

// mdDoc is the whole comment: the top-level container and what crosses paragraphs (raw HTML elements
// that hide their content).
type mdDoc struct {
	top mdBlock
	// hidden counts the open elements whose content is not shown as text (see hiddenTags).
	hidden map[string]int
	// out collects the command lines, in order.
	out []string
}

// hiddenTags are the raw HTML elements whose content is no command: collapsed (details), preformatted
// (pre) or removed by GitHub's sanitizer (the others).
var hiddenTags = []string{"details", "pre", "textarea", "script", "style"}

// commandLines returns the lines of body that are commands by their place (their text is not judged).
func commandLines(body string) []string {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	body = strings.ReplaceAll(body, "\r", "\n")
	body = strings.ReplaceAll(body, "\x00", "\uFFFD")
	d := &mdDoc{hidden: map[string]int{}}
	for _, line := range strings.Split(body, "\n") {
		d.line(&d.top, line, true)
	}
	d.endPara(&d.top, true)
	return d.out
}

// hiddenNow reports whether an element hiding its content is open.
func (d *mdDoc) hiddenNow() bool {
	for _, n := range d.hidden {
		if n > 0 {
			return true
		}
	}
	return false
}

// indentOf returns the columns of leading white space (tabs to the next multiple of 4) and the rest.
func indentOf(s string) (int, string) {
	col := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			col++
		case '\t':
			col += 4 - col%4
		default:
			return col, s[i:]
		}
	}
	return col, ""
}

func isBlank(s string) bool { return strings.TrimLeft(s, " \t") == "" }

// line feeds one line to container b; top says b is the document (whose paragraphs may carry commands).
func (d *mdDoc) line(b *mdBlock, line string, top bool) {
	ind, rest := indentOf(line)
	// Inside a fenced code block: only its closing fence matters.
	if b.fence != "" {
		if ind <= 3 && closesFence(rest, b.fence) {
			b.fence = ""
		}
		return
	}
	// Inside an HTML block: raw HTML up to its end condition.
	if b.html != 0 {
		if (b.html == 6 || b.html == 7) && isBlank(line) {
			b.html = 0
			return
		}
		if b.html == 1 || b.html >= 6 {
			d.scanTags(line) // the other blocks (comments, declarations) hold no elements
		}
		if b.html <= 5 && htmlBlockEnds(b.html, line) {
			b.html = 0
		}
		return
	}
	// A block quote line, or a lazy continuation of a paragraph in an open quote.
	if ind <= 3 && strings.HasPrefix(rest, ">") {
		d.endPara(b, top)
		if b.quote == nil {
			b.quote = &mdBlock{}
		}
		content := rest[1:]
		if strings.HasPrefix(content, " ") {
			content = content[1:]
		} else if strings.HasPrefix(content, "\t") {
			content = "  " + content[1:] // the tab's first column is the quote's optional space
		}
		d.line(b.quote, content, false)
		return
	}
	if b.quote != nil {
		if !isBlank(line) && b.quote.lazyOpen() && !interruptsParagraph(ind, rest) {
			d.line(b.quote, line, false)
			return
		}
		d.endPara(b.quote, false)
		b.quote = nil
	}
	if isBlank(line) {
		d.endPara(b, top)
		return
	}
	if len(b.para) > 0 && ind >= 4 {
		b.para = append(b.para, line) // indented code cannot interrupt a paragraph
		return
	}
	if ind >= 4 {
		return // indented code
	}
	if f := opensFence(rest); f != "" {
		d.endPara(b, top)
		b.fence = f
		return
	}
	if k := htmlBlockStart(rest, len(b.para) > 0); k != 0 {
		d.endPara(b, top)
		if k == 1 || k >= 6 {
			d.scanTags(line)
		}
		if k <= 5 && htmlBlockEnds(k, rest) {
			return
		}
		b.html = k
		return
	}
	if len(b.para) > 0 && interruptsParagraph(ind, rest) || isATXHeading(rest) || isThematicBreak(rest) {
		d.endPara(b, top)
		if isATXHeading(rest) || isThematicBreak(rest) {
			return
		}
	}
	b.para = append(b.para, line)
}

// lazyOpen reports whether the innermost open block of b is a paragraph (a lazy line continues it).
func (b *mdBlock) lazyOpen() bool {
	if b.quote != nil {
		return b.quote.lazyOpen()
	}
	return b.fence == "" && b.html == 0 && len(b.para) > 0
}

// endPara closes the open paragraph of b, reading its inline content: a line is a command when b is the
// document and the line starts with the slash outside any code span, HTML comment or hiding element.
func (d *mdDoc) endPara(b *mdBlock, top bool) {
	if len(b.para) == 0 {
		return
	}
	lines := b.para
	b.para = nil
	text := strings.Join(lines, "\n")
	starts := make([]int, len(lines))
	at := 0
	for i, l := range lines {
		starts[i] = at
		at += len(l) + 1
	}
	next := 0 // the next line whose start is to be judged
	judge := func(upTo int, inside bool) {
		for next < len(lines) && starts[next] <= upTo {
			if top && !inside && !d.hiddenNow() && strings.HasPrefix(lines[next], "/") {
				d.out = append(d.out, lines[next])
			}
			next++
		}
	}
	spans := backtickRuns(text)
	noCommentEnd := false // once a comment finds no end, none after it does (linear on hostile input)
	for i := 0; i < len(text); {
		judge(i, false)
		switch c := text[i]; {
		case c == '\\' && i+1 < len(text) && isASCIIPunct(text[i+1]):
			i += 2
		case c == '`':
			n := run(text, i, '`')
			if end := spans.next(n, i+n); end >= 0 {
				judge(end, true) // lines starting inside the span are code
				i = end + n
			} else {
				i += n
			}
		case c == '<' && strings.HasPrefix(text[i:], "<!--"):
			end := -1
			if !noCommentEnd {
				end = commentEnd(text, i)
				noCommentEnd = end < 0
			}
			if end >= 0 {
				judge(end-1, true)
				i = end
			} else {
				i += 4
			}
		case c == '<':
			i += d.tagAt(text, i)
		default:
			i++
		}
	}
	judge(len(text), false)
}

// run counts the bytes equal to c from i.
func run(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// runsByLength are the backtick runs of a paragraph: for each length, the positions of the runs, in order.
// A code span opener finds its closer by a binary search instead of a scan, so a paragraph of many unmatched
// runs stays linear (CommonMark's reference parser keeps the same kind of table).
type runsByLength map[int][]int

func backtickRuns(s string) runsByLength {
	out := runsByLength{}
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		n := run(s, i, '`')
		out[n] = append(out[n], i)
		i += n
	}
	return out
}

// next returns the position of the first run of exactly n backticks at or after from, -1 when none.
func (r runsByLength) next(n, from int) int {
	list := r[n]
	j := sort.SearchInts(list, from)
	if j == len(list) {
		return -1
	}
	return list[j]
}

// commentEnd returns the index after the HTML comment starting at i ("<!-->", "<!--->" and "<!-- … -->"),
// -1 when it does not close.
func commentEnd(s string, i int) int {
	rest := s[i+4:]
	switch {
	case strings.HasPrefix(rest, ">"):
		return i + 5
	case strings.HasPrefix(rest, "->"):
		return i + 6
	}
	if j := strings.Index(rest, "-->"); j >= 0 {
		return i + 4 + j + 3
	}
	return -1
}

// tagAt reads a raw HTML tag at s[i] (which is '<'), counting the hiding elements it opens or closes, and
// returns how many bytes to skip (1 when it is no tag).
func (d *mdDoc) tagAt(s string, i int) int {
	name, closing, end := htmlTag(s[i:])
	if end == 0 {
		return 1
	}
	d.countTag(name, closing, s[i:i+end])
	return end
}

// countTag moves the count of a hiding element.
func (d *mdDoc) countTag(name string, closing bool, raw string) {
	for _, h := range hiddenTags {
		if name != h {
			continue
		}
		switch {
		case closing:
			if d.hidden[h] > 0 {
				d.hidden[h]--
			}
		case !strings.HasSuffix(raw, "/>"):
			d.hidden[h]++
		}
	}
}

// scanTags counts the hiding elements opened and closed on a line of raw HTML (comments skipped).
func (d *mdDoc) scanTags(line string) {
	for i := 0; i < len(line); {
		j := strings.IndexByte(line[i:], '<')
		if j < 0 {
			return
		}
		i += j
		if strings.HasPrefix(line[i:], "<!--") {
			if end := commentEnd(line, i); end >= 0 {
				i = end
				continue
			}
			return // the comment goes on past this line: nothing more here is a tag
		}
		i += d.tagAt(line, i)
	}
}

// htmlTag reads an open or closing tag at the start of s: its lower-case name, whether it closes, and its
// length (0 when s does not start with a tag). Attributes are skipped up to the first '>' outside quotes.
func htmlTag(s string) (name string, closing bool, n int) {
	if len(s) < 3 || s[0] != '<' {
		return "", false, 0
	}
	i := 1
	if s[i] == '/' {
		closing = true
		i++
	}
	start := i
	for i < len(s) && (isASCIILetter(s[i]) || i > start && (s[i] >= '0' && s[i] <= '9' || s[i] == '-')) {
		i++
	}
	if i == start || i >= len(s) {
		return "", false, 0
	}
	name = strings.ToLower(s[start:i])
	if c := s[i]; c != '>' && c != '/' && c != ' ' && c != '\t' && c != '\n' {
		return "", false, 0
	}
	var quote byte
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			if !closing {
				quote = c
			}
		case c == '<':
			return "", false, 0
		case c == '>':
			return name, closing, i + 1
		}
	}
	return "", false, 0
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

// opensFence returns the opening fence of a line (without its indentation), "" when it is none: at least
// three backticks or tildes; a backtick fence's info string has no backtick.
func opensFence(rest string) string {
	if rest == "" || rest[0] != '`' && rest[0] != '~' {
		return ""
	}
	n := run(rest, 0, rest[0])
	if n < 3 {
		return ""
	}
	if rest[0] == '`' && strings.Contains(rest[n:], "`") {
		return ""
	}
	return rest[:n]
}

// closesFence: the same character, at least as many, then only spaces or tabs.
func closesFence(rest, fence string) bool {
	n := run(rest, 0, fence[0])
	return n >= len(fence) && strings.Trim(rest[n:], " \t") == ""
}

// blockTags are the tag names of CommonMark's HTML block condition 6.
var blockTags = map[string]bool{}

func init() {
	for _, t := range strings.Fields(`address article aside base basefont blockquote body caption center col colgroup dd
		details dialog dir div dl dt fieldset figcaption figure footer form frame frameset h1 h2 h3 h4 h5 h6 head header
		hr html iframe legend li link main menu menuitem nav noframes ol optgroup option p param search section summary
		table tbody td tfoot th thead title tr track ul`) {
		blockTags[t] = true
	}
}

// htmlBlockStart returns which HTML block (CommonMark's conditions 1–7) a line starts, 0 for none; inPara
// says a paragraph is open (condition 7 cannot interrupt one).
func htmlBlockStart(rest string, inPara bool) int {
	if !strings.HasPrefix(rest, "<") {
		return 0
	}
	low := strings.ToLower(rest)
	for _, t := range []string{"pre", "script", "style", "textarea"} {
		if strings.HasPrefix(low, "<"+t) {
			after := low[1+len(t):]
			if after == "" || after[0] == ' ' || after[0] == '\t' || after[0] == '>' {
				return 1
			}
		}
	}
	switch {
	case strings.HasPrefix(rest, "<!--"):
		return 2
	case strings.HasPrefix(rest, "<?"):
		return 3
	case strings.HasPrefix(rest, "<![CDATA["):
		return 5
	case len(rest) > 2 && rest[1] == '!' && isASCIILetter(rest[2]):
		return 4
	}
	i := 1
	if strings.HasPrefix(rest, "</") {
		i = 2
	}
	j := i
	for j < len(low) && (isASCIILetter(low[j]) || j > i && low[j] >= '0' && low[j] <= '9') {
		j++
	}
	if name := low[i:j]; blockTags[name] {
		after := low[j:]
		if after == "" || after[0] == ' ' || after[0] == '\t' || after[0] == '>' || strings.HasPrefix(after, "/>") {
			return 6
		}
	}
	if inPara {
		return 0
	}
	// Condition 7: a complete open or closing tag alone on its line.
	if name, _, n := htmlTag(strings.TrimRight(rest, " \t")); n > 0 && n == len(strings.TrimRight(rest, " \t")) &&
		name != "pre" && name != "script" && name != "style" && name != "textarea" {
		return 7
	}
	return 0
}

// htmlBlockEnds reports whether a line holds the end of an HTML block of condition 1–5.
func htmlBlockEnds(k int, line string) bool {
	low := strings.ToLower(line)
	switch k {
	case 1:
		return strings.Contains(low, "</pre>") || strings.Contains(low, "</script>") || strings.Contains(low, "</style>") || strings.Contains(low, "</textarea>")
	case 2:
		return strings.Contains(line, "-->")
	case 3:
		return strings.Contains(line, "?>")
	case 4:
		return strings.Contains(line, ">")
	case 5:
		return strings.Contains(line, "]]>")
	}
	return false
}

// interruptsParagraph reports whether a line (indentation ind, then rest) starts a block that ends an open
// paragraph: a fence, a quote, a heading, a thematic break, an HTML block of conditions 1–6, or a list item
// that is not empty (an ordered one only from 1).
func interruptsParagraph(ind int, rest string) bool {
	if ind >= 4 {
		return false
	}
	if opensFence(rest) != "" || strings.HasPrefix(rest, ">") || isATXHeading(rest) || isThematicBreak(rest) || htmlBlockStart(rest, true) != 0 {
		return true
	}
	if len(rest) >= 2 && (rest[0] == '-' || rest[0] == '*' || rest[0] == '+') && (rest[1] == ' ' || rest[1] == '\t') && !isBlank(rest[2:]) {
		return true
	}
	if strings.HasPrefix(rest, "1.") || strings.HasPrefix(rest, "1)") {
		return len(rest) > 2 && (rest[2] == ' ' || rest[2] == '\t') && !isBlank(rest[3:])
	}
	return false
}

// isATXHeading: one to six '#' then a space, a tab or the end of the line.
func isATXHeading(rest string) bool {
	n := run(rest, 0, '#')
	return n >= 1 && n <= 6 && (len(rest) == n || rest[n] == ' ' || rest[n] == '\t')
}

// isThematicBreak: three or more of one of '-', '*', '_', with spaces or tabs between.
func isThematicBreak(rest string) bool {
	if rest == "" || rest[0] != '-' && rest[0] != '*' && rest[0] != '_' {
		return false
	}
	n := 0
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case rest[0]:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}
