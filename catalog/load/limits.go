package load

import (
	"runtime"
	"sync/atomic"

	"github.com/catalogbot/catalogbot/catalog/decode"
)

// Limits bound every input the loader reads. A zero field means its default
// (see DefaultLimits).
type Limits struct {
	// MaxFileSize is the largest file read, in bytes (at most 2 GiB - 1,
	// the longest text a Value holds; larger settings are lowered to it).
	MaxFileSize int64
	// MaxTotalSize bounds the bytes of all files of one tree.
	MaxTotalSize int64
	// MaxFiles bounds the files of one tree (directories not counted).
	MaxFiles int
	// MaxDocuments bounds the documents of one file.
	MaxDocuments int
	// MaxDepth bounds the nesting of objects and arrays.
	MaxDepth int
	// MaxAliasExpansion bounds the values YAML aliases may produce in one document.
	MaxAliasExpansion int
	// MaxAliasExpansionPerFile bounds the values aliases may produce in all
	// documents of one file, and MaxAliasExpansionPerRead in all files of
	// one ReadFS (one revision of a pull request): many small alias bombs,
	// each under the per-document bound, cannot add up to gigabytes.
	MaxAliasExpansionPerFile int
	MaxAliasExpansionPerRead int64
	// Concurrency is how many files ReadFS parses at once (default GOMAXPROCS).
	Concurrency int
	// aliasSpent counts, across the files of one ReadFS, the values aliases produced.
	aliasSpent *atomic.Int64
	// Cache, when set and the file system is a ContentKeyer, lets ReadFS
	// reuse the parse of contents it has seen. It is not a bound: it is here
	// because Limits travels with every read.
	Cache *ParseCache
	// Index, when set and the file system is a ContentKeyer, keeps what
	// each file content holds (FileSummary) for LoadPartial, which then
	// parses only the files the packages it is asked for need.
	Index *SummaryIndex
}

// DefaultLimits returns the limits used for zero fields: the decoder's (decode.DefaultLimits) for one
// file, and for a tree bounds far above real catalogs and low enough that hostile input is refused in
// milliseconds.
func DefaultLimits() Limits {
	d := decode.DefaultLimits()
	return Limits{
		MaxFileSize:              d.MaxFileSize,
		MaxTotalSize:             2 << 30,
		MaxFiles:                 100_000,
		MaxDocuments:             d.MaxDocuments,
		MaxDepth:                 d.MaxDepth,
		MaxAliasExpansion:        d.MaxAliasExpansion,
		MaxAliasExpansionPerFile: d.MaxAliasExpansionPerFile,
		MaxAliasExpansionPerRead: d.MaxAliasExpansionPerRead,
		Concurrency:              runtime.GOMAXPROCS(0),
	}
}

// withDefaults fills zero fields from DefaultLimits: the per-file bounds as the decoder fills them
// (decode.Limits.WithDefaults), then the tree's.
func (l Limits) withDefaults() Limits {
	f := l.Decoding().WithDefaults()
	l.MaxFileSize, l.MaxDocuments, l.MaxDepth = f.MaxFileSize, f.MaxDocuments, f.MaxDepth
	l.MaxAliasExpansion, l.MaxAliasExpansionPerFile, l.MaxAliasExpansionPerRead =
		f.MaxAliasExpansion, f.MaxAliasExpansionPerFile, f.MaxAliasExpansionPerRead
	d := DefaultLimits()
	if l.MaxTotalSize <= 0 {
		l.MaxTotalSize = d.MaxTotalSize
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = d.MaxFiles
	}
	if l.Concurrency <= 0 {
		l.Concurrency = d.Concurrency
	}
	return l
}

// decoding is the part of l that bounds the parse of one file.
func (l Limits) Decoding() decode.Limits {
	return decode.Limits{
		MaxFileSize:              l.MaxFileSize,
		MaxDocuments:             l.MaxDocuments,
		MaxDepth:                 l.MaxDepth,
		MaxAliasExpansion:        l.MaxAliasExpansion,
		MaxAliasExpansionPerFile: l.MaxAliasExpansionPerFile,
		MaxAliasExpansionPerRead: l.MaxAliasExpansionPerRead,
		AliasSpent:               l.aliasSpent,
	}
}
