package decode

import "unsafe"

// compactStrings lets a file's buffer go once it is parsed. Scalars and keys
// are substrings of the file, so the whole buffer (held bytes, src and any
// capacity beyond it) stays in memory as long as any of its values does.
// Where they cover less than four fifths of it (block YAML, with its
// indentation and keys), they are copied into one block of their exact size
// and the buffer becomes garbage; where they cover nearly all of it (big
// base64 blobs), nothing is copied. Files under 64 KiB are left alone unless
// always is set (the caller wants to reuse the buffer). kept reports whether
// the documents still point into src.
func compactStrings(docs []Doc, src string, held int, always bool) (kept bool) {
	if len(docs) == 0 {
		return false // findings never point into the file
	}
	if len(src) < 64<<10 && !always {
		return true
	}
	c := stringCompactor{lo: uintptr(unsafe.Pointer(unsafe.StringData(src)))}
	c.hi = c.lo + uintptr(len(src))
	for i := range docs {
		c.measureValue(&docs[i].Value)
	}
	if c.size > held*4/5 {
		return true
	}
	c.block = make([]byte, 0, c.size)
	for i := range docs {
		d := &docs[i]
		c.moveValue(&d.Value)
		// The meta strings are substrings of their fields' values: point at
		// the moved copies.
		d.Schema, d.Package, d.Name = c.metaCopy(d.Schema), c.metaCopy(d.Package), c.metaCopy(d.Name)
	}
	return false
}

type stringCompactor struct {
	lo, hi uintptr // the file's bytes
	size   int     // bytes of file substrings referenced
	block  []byte  // where they move
}

func (c *stringCompactor) inFile(s string) bool {
	if len(s) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	return p >= c.lo && p < c.hi
}

func (c *stringCompactor) measureValue(v *Value) {
	if s := v.Str(); c.inFile(s) {
		c.size += len(s)
	}
	fields := v.Fields()
	for i := range fields {
		if c.inFile(fields[i].Key) {
			c.size += len(fields[i].Key)
		}
		c.measureValue(&fields[i].Value)
	}
	items := v.Items()
	for i := range items {
		c.measureValue(&items[i])
	}
}

func (c *stringCompactor) move(s string) string {
	if len(s) == 0 {
		return "" // an empty substring still points into the file
	}
	if !c.inFile(s) {
		return s
	}
	start := len(c.block)
	c.block = append(c.block, s...)
	// The block is never written again below start+len(s), and its capacity
	// was fixed up front, so it never moves.
	return unsafe.String(&c.block[start], len(s))
}

func (c *stringCompactor) moveValue(v *Value) {
	if v.holds == holdsText {
		v.setStr(c.move(v.Str()))
	}
	fields := v.Fields()
	for i := range fields {
		fields[i].Key = c.move(fields[i].Key)
		c.moveValue(&fields[i].Value)
	}
	items := v.Items()
	for i := range items {
		c.moveValue(&items[i])
	}
}

// metaCopy returns a copy of s that is not in the file (a meta string was
// measured only through its field, so it gets its own small allocation).
func (c *stringCompactor) metaCopy(s string) string {
	if len(s) == 0 {
		return ""
	}
	if !c.inFile(s) {
		return s
	}
	return string([]byte(s))
}
