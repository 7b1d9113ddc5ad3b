package load

import (
	"bufio"
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
)

// FileSummary is what one catalog file holds, in the few facts a partial
// load needs to decide, without parsing the file again, whether the packages
// it is asked for need it: the packages its blobs and findings belong to and
// the packages it declares. It depends only on the file's content (never on
// its path), so it is kept by content key (a git blob id) in a SummaryIndex.
type FileSummary struct {
	// Packages are the packages the file's blobs belong to (an olm.package
	// blob to the package it declares) and those its findings name, sorted
	// and without repeats. "" is among them when a blob names no package or
	// the file has a finding of its own (a syntax error, a key opm refuses):
	// such a file is read by every partial load, since its findings are
	// catalog-wide.
	Packages []string `json:"p,omitempty"`
	// Declares names the package of each olm.package blob, in file order
	// (repeats kept): a package declared twice anywhere is read whole.
	Declares []string `json:"d,omitempty"`
	// Aliases is set when the file's YAML expands aliases: what it yields
	// can depend on the other files of the read (the per-read alias
	// budget), so a partial load always reads it and it is never indexed.
	Aliases bool `json:"a,omitempty"`
}

// Summarize gives the summary of one file from its parse.
func Summarize(docs []Doc, findings []Finding) FileSummary {
	var s FileSummary
	for i := range docs {
		d := &docs[i]
		p := d.Package
		if d.Schema == schemaPackage {
			p = d.Name
			s.Declares = append(s.Declares, d.Name)
		}
		s.Packages = append(s.Packages, p)
	}
	for i := range findings {
		s.Packages = append(s.Packages, findings[i].Package)
	}
	slices.Sort(s.Packages)
	s.Packages = slices.Compact(s.Packages)
	// The names are substrings of the file's text: copies keep an index of
	// a whole catalog from holding every file it summarized.
	for i := range s.Packages {
		s.Packages[i] = strings.Clone(s.Packages[i])
	}
	for i := range s.Declares {
		s.Declares[i] = strings.Clone(s.Declares[i])
	}
	s.Packages = slices.Clip(s.Packages)
	return s
}

// Concerns reports whether the file holds anything of one of pkgs (a set), or
// something every load needs (a blob of no package, a finding, aliases).
func (s *FileSummary) Concerns(pkgs map[string]bool) bool {
	if s.Aliases {
		return true
	}
	for _, p := range s.Packages {
		if p == "" || pkgs[p] {
			return true
		}
	}
	return false
}

// SummaryIndex keeps file summaries by content key, the least recently used
// going first once it holds its maximum. A summary is a few dozen bytes, so
// an index of every file of the largest catalogs (tens of thousands) is a
// few MB. It is safe for concurrent use.
type SummaryIndex struct {
	mu      sync.Mutex
	max     int
	entries map[string]*list.Element
	order   *list.List // front: most recently used
	hits    int64
	misses  int64
	added   int64 // entries put since it was made or read
}

type summaryEntry struct {
	key string
	sum FileSummary
}

// DefaultSummaryEntries bounds a SummaryIndex made with a zero maximum: ten
// times the files of the largest catalog the loader accepts by default.
const DefaultSummaryEntries = 1_000_000

// NewSummaryIndex returns an empty index holding at most maxEntries summaries
// (DefaultSummaryEntries when zero or less).
func NewSummaryIndex(maxEntries int) *SummaryIndex {
	if maxEntries <= 0 {
		maxEntries = DefaultSummaryEntries
	}
	return &SummaryIndex{max: maxEntries, entries: map[string]*list.Element{}, order: list.New()}
}

// Get returns the summary of a content key.
func (x *SummaryIndex) Get(key string) (FileSummary, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.entries[key]
	if !ok {
		x.misses++
		return FileSummary{}, false
	}
	x.hits++
	x.order.MoveToFront(e)
	return e.Value.(*summaryEntry).sum, true
}

// Put keeps the summary of a content key. Summaries of files that expand
// aliases are not kept (see FileSummary.Aliases).
func (x *SummaryIndex) Put(key string, s FileSummary) {
	if key == "" || s.Aliases {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.entries[key]; ok {
		x.order.MoveToFront(e)
		return
	}
	x.entries[key] = x.order.PushFront(&summaryEntry{key: key, sum: s})
	x.added++
	for len(x.entries) > x.max {
		last := x.order.Back()
		x.order.Remove(last)
		delete(x.entries, last.Value.(*summaryEntry).key)
	}
}

// Stats returns the lookups that found a summary and those that did not.
func (x *SummaryIndex) Stats() (hits, misses int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.hits, x.misses
}

// Len returns the number of summaries held.
func (x *SummaryIndex) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.entries)
}

// Added returns how many summaries were put since the index was made or
// read: a caller that keeps it on disk writes it back only when some were.
func (x *SummaryIndex) Added() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.added
}

// summaryRecord is one line of a written index.
type summaryRecord struct {
	Key string `json:"k"`
	FileSummary
}

// WriteTo writes the index as JSON lines, most recently used first, after a
// header line holding stamp: ReadSummaryIndex refuses an index written
// under another stamp. The stamp names what the summaries depend on (the
// parser's build and the limits it ran with), so an index never outlives
// the program that made it.
func (x *SummaryIndex) WriteTo(w io.Writer, stamp string) error {
	x.mu.Lock()
	recs := make([]summaryRecord, 0, len(x.entries))
	for e := x.order.Front(); e != nil; e = e.Next() {
		s := e.Value.(*summaryEntry)
		recs = append(recs, summaryRecord{Key: s.key, FileSummary: s.sum})
	}
	x.mu.Unlock()
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(summaryHeader{Format: summaryFormat, Stamp: stamp}); err != nil {
		return err
	}
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

type summaryHeader struct {
	Format string `json:"format"`
	Stamp  string `json:"stamp"`
}

// summaryFormat names the written form (and what Summarize records); change
// it when either changes.
const summaryFormat = "catalogbot-file-summaries/1"

// ErrSummaryStamp is returned by ReadSummaryIndex for an index written under
// another stamp or format: it is to be rebuilt, not used.
var ErrSummaryStamp = errors.New("file summary index was written by another build or with other limits")

// ReadSummaryIndex reads an index written by WriteTo with the same stamp,
// keeping at most maxEntries (the most recently used). A line that does not
// decode is an error: a truncated or edited file is rebuilt, never half
// trusted.
func ReadSummaryIndex(r io.Reader, stamp string, maxEntries int) (*SummaryIndex, error) {
	x := NewSummaryIndex(maxEntries)
	dec := json.NewDecoder(bufio.NewReader(r))
	var h summaryHeader
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("file summary index: header: %w", err)
	}
	if h.Format != summaryFormat || h.Stamp != stamp {
		return nil, ErrSummaryStamp
	}
	for n := 1; ; n++ {
		var rec summaryRecord
		err := dec.Decode(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("file summary index: record %d: %w", n, err)
		}
		if rec.Key == "" {
			return nil, fmt.Errorf("file summary index: record %d has no key", n)
		}
		if len(x.entries) >= x.max {
			break
		}
		if _, dup := x.entries[rec.Key]; !dup {
			x.entries[rec.Key] = x.order.PushBack(&summaryEntry{key: rec.Key, sum: rec.FileSummary})
		}
	}
	return x, nil
}

// ParseStamp names the limits that change what a file's parse reports, for
// the stamp of a written SummaryIndex: summaries made under other limits
// may name other findings.
func (l Limits) ParseStamp() string {
	l = l.withDefaults()
	return fmt.Sprintf("%s file=%d docs=%d depth=%d alias=%d/%d", summaryFormat, l.MaxFileSize, l.MaxDocuments, l.MaxDepth, l.MaxAliasExpansion, l.MaxAliasExpansionPerFile)
}
