package gitfs

import (
	"bufio"
	"bytes"
	"container/list"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing"
	// klauspost's zlib inflates git objects about 1.3x faster than
	// compress/zlib (figures in docs/benchmarks.md); the module is already
	// in the build through go-containerregistry.
	"github.com/klauspost/compress/zlib"
)

// This file reads objects out of pack files (objects/pack/pack-*.pack with
// their version 2 .idx), for the one thing a check does most: read every blob
// of a catalog. go-git serialises all pack reads behind one lock, inflates
// through a byte-at-a-time scanner and hashes each object again with a
// collision-detecting SHA-1; here packs are read with ReadAt, so several
// objects inflate at once, and nothing is re-hashed: an object is asked for by
// the id its tree gives, and git, which wrote the pack, checked it (git does
// not re-hash what it reads from a pack either).
//
// Anything unusual is left to go-git (errFallback): a version 1 index, a pack
// whose header disagrees with its index, an object not in these packs (loose
// ones are read by loose.go), a REF_DELTA whose base is
// not in these packs. Damaged data in a pack that was accepted is an error,
// never a panic, and every size is bounded before it is allocated.

const (
	// maxDeltaDepth bounds a delta chain. git never writes one deeper than
	// 4095 (its cap on --depth); a cycle of REF_DELTAs stops here too.
	maxDeltaDepth = 4095
	// defaultMaxBaseSize bounds what is inflated on the way to the object
	// asked for (delta bases and delta data), whose sizes no caller vetted.
	defaultMaxBaseSize = 256 << 20
	// maxIndexSize bounds a .idx file, which is read whole: about 36
	// million objects. Larger indexes are left to go-git.
	maxIndexSize = 1 << 30
	// deltaCacheSize bounds the delta bases kept per Repo for chains that
	// share them.
	deltaCacheSize = 32 << 20
	// maxCachedInfos bounds the object types and sizes kept per Repo.
	maxCachedInfos = 100_000
	// packReadBuffer is the read size from a pack file.
	packReadBuffer = 32 << 10
	// growStep is the allocation step for data whose claimed size nobody
	// vetted: memory follows what really inflates, not what a header says.
	growStep = 1 << 20
	// packHeaderSize and packTrailerSize frame a pack: "PACK", version,
	// object count; a SHA-1 of everything before it.
	packHeaderSize  = 12
	packTrailerSize = 20
)

// errFallback: the pack reader leaves this object to go-git. It is returned
// before the caller's size check runs, never after.
var errFallback = errors.New("left to go-git")

// errCorruptPack wraps every error about damaged pack or index data.
var errCorruptPack = errors.New("corrupt pack")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errCorruptPack, fmt.Sprintf(format, args...))
}

// packIndex is a parsed version 2 .idx file: a fan-out table, the sorted
// object ids, their CRC-32s (unused here), their 31-bit offsets, and 64-bit
// offsets for entries whose 31-bit offset has its top bit set.
type packIndex struct {
	fanout  [256]uint32
	names   []byte // count × 20 bytes, sorted
	offsets []byte // count × 4 bytes
	large   []byte // 8 bytes each
	count   int
	// packSum is the checksum of the pack the index was written for: the
	// pack's own last 20 bytes.
	packSum [20]byte
}

var idxMagic = []byte{0xff, 't', 'O', 'c'}

// parseIndex checks the structure of a .idx (not its checksums) and keeps
// slices of data.
func parseIndex(data []byte) (*packIndex, error) {
	const head = 8 + 256*4
	if len(data) < head+2*20 {
		return nil, corrupt("pack index of %d bytes is too short", len(data))
	}
	if !bytes.Equal(data[:4], idxMagic) {
		return nil, fmt.Errorf("pack index is not version 2: %w", errFallback)
	}
	if v := binary.BigEndian.Uint32(data[4:8]); v != 2 {
		return nil, fmt.Errorf("pack index version %d: %w", v, errFallback)
	}
	ix := &packIndex{}
	var prev uint32
	for i := range ix.fanout {
		n := binary.BigEndian.Uint32(data[8+4*i:])
		if n < prev {
			return nil, corrupt("pack index fan-out decreases at %d", i)
		}
		ix.fanout[i], prev = n, n
	}
	count := uint64(prev) // < 2^32, so nothing below overflows
	fixed := head + count*(20+4+4) + 2*20
	size := uint64(len(data))
	if size < fixed || (size-fixed)%8 != 0 {
		return nil, corrupt("pack index of %d bytes does not match its %d objects", size, count)
	}
	pos := uint64(head)
	ix.names = data[pos : pos+count*20]
	pos += count * 20
	pos += count * 4 // CRC-32s
	ix.offsets = data[pos : pos+count*4]
	pos += count * 4
	ix.large = data[pos : size-2*20]
	ix.count = int(count)
	copy(ix.packSum[:], data[size-2*20:size-20])
	return ix, nil
}

// find returns the pack offset of h; ok is false when the index does not
// list it.
func (ix *packIndex) find(h Hash) (off uint64, ok bool, err error) {
	var lo uint32
	if h[0] > 0 {
		lo = ix.fanout[h[0]-1]
	}
	hi := ix.fanout[h[0]] // lo <= hi <= count: the fan-out was checked
	n := int(hi - lo)
	i := int(lo) + sort.Search(n, func(i int) bool {
		j := (int(lo) + i) * 20
		return bytes.Compare(ix.names[j:j+20], h[:]) >= 0
	})
	if i == int(hi) || !bytes.Equal(ix.names[i*20:i*20+20], h[:]) {
		return 0, false, nil
	}
	o := binary.BigEndian.Uint32(ix.offsets[i*4:])
	if o&0x8000_0000 == 0 {
		return uint64(o), true, nil
	}
	j := uint64(o &^ 0x8000_0000)
	if j >= uint64(len(ix.large)/8) {
		return 0, false, corrupt("pack index: 64-bit offset %d of %s is past the table", j, h)
	}
	return binary.BigEndian.Uint64(ix.large[j*8:]), true, nil
}

// packFile is one pack and its index. ReadAt is safe for concurrent use.
type packFile struct {
	name string // file name, for messages
	f    billy.File
	size int64
	idx  *packIndex
}

// packEntry is the header of one object in a pack.
type packEntry struct {
	p    *packFile
	off  int64
	typ  plumbing.ObjectType
	size int64 // inflated size of the entry's data: the object, or the delta
	data int64 // where its zlib stream starts
	// base of a delta: an offset in the same pack (OFS_DELTA) or an id (REF_DELTA)
	baseOff  int64
	baseName Hash
}

// maxEntryHeader covers the longest header: a 64-bit size in 10 bytes and a
// 20-byte base id, or a base offset in 10 bytes.
const maxEntryHeader = 32

// entryAt reads the header of the entry at off.
func (p *packFile) entryAt(off int64) (packEntry, error) {
	end := p.size - packTrailerSize
	if off < packHeaderSize || off >= end {
		return packEntry{}, corrupt("%s: entry offset %d is outside the pack (%d bytes)", p.name, off, p.size)
	}
	var b [maxEntryHeader]byte
	n, err := p.f.ReadAt(b[:min(int64(len(b)), end-off)], off)
	if n == 0 && err != nil {
		return packEntry{}, fmt.Errorf("%s: reading at %d: %w", p.name, off, err)
	}
	buf := b[:n]
	c := buf[0]
	e := packEntry{p: p, off: off, typ: plumbing.ObjectType((c >> 4) & 7)}
	size := uint64(c & 0x0f)
	shift, i := uint(4), 1
	for c&0x80 != 0 {
		if i >= len(buf) || shift > 60 {
			return packEntry{}, corrupt("%s: malformed size of the entry at %d", p.name, off)
		}
		c = buf[i]
		i++
		size |= uint64(c&0x7f) << shift
		shift += 7
	}
	if size > 1<<62 {
		return packEntry{}, corrupt("%s: entry at %d claims %d bytes", p.name, off, size)
	}
	e.size = int64(size)
	switch e.typ {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	case plumbing.OFSDeltaObject:
		if i >= len(buf) {
			return packEntry{}, corrupt("%s: truncated delta entry at %d", p.name, off)
		}
		c = buf[i]
		i++
		rel := uint64(c & 0x7f)
		for c&0x80 != 0 {
			if i >= len(buf) || rel >= 1<<56 {
				return packEntry{}, corrupt("%s: malformed base offset of the delta at %d", p.name, off)
			}
			c = buf[i]
			i++
			rel = (rel+1)<<7 | uint64(c&0x7f)
		}
		if rel == 0 || rel > uint64(off-packHeaderSize) {
			return packEntry{}, corrupt("%s: delta at %d has its base %d bytes back, outside the pack", p.name, off, rel)
		}
		e.baseOff = off - int64(rel)
	case plumbing.REFDeltaObject:
		if i+20 > len(buf) {
			return packEntry{}, corrupt("%s: truncated delta entry at %d", p.name, off)
		}
		copy(e.baseName[:], buf[i:i+20])
		i += 20
	default:
		return packEntry{}, corrupt("%s: entry at %d has the unknown type %d", p.name, off, e.typ)
	}
	e.data = off + int64(i)
	return e, nil
}

// packReader reads objects from the packs of one repository. It is safe for
// concurrent use.
type packReader struct {
	packs    []*packFile
	maxBase  int64
	cache    *deltaCache
	inflates sync.Pool // *inflater

	// infos keeps what info found: a file is sized (fs.Stat) before it is
	// read, often twice, and sizing a delta walks its chain.
	infosMu sync.Mutex
	infos   map[Hash]objectInfo
}

type objectInfo struct {
	typ  plumbing.ObjectType
	size int64
}

// openPacks opens every pack of the repository whose index this reader
// understands. Packs it cannot use are skipped: go-git reads them.
func openPacks(dirs []objectDir) *packReader {
	pr := newPackReader(nil, defaultMaxBaseSize)
	for _, d := range dirs {
		infos, err := d.fs.ReadDir(path.Join(d.prefix, "pack"))
		if err != nil {
			continue
		}
		for _, fi := range infos {
			name := fi.Name()
			if !fi.Mode().IsRegular() || !strings.HasSuffix(name, ".idx") {
				continue
			}
			if p, err := openPack(d.fs, path.Join(d.prefix, "pack", strings.TrimSuffix(name, ".idx"))); err == nil {
				pr.packs = append(pr.packs, p)
			}
		}
	}
	return pr
}

func newPackReader(packs []*packFile, maxBase int64) *packReader {
	return &packReader{packs: packs, maxBase: maxBase, cache: newDeltaCache(deltaCacheSize), infos: map[Hash]objectInfo{}}
}

// openPack opens base.pack and base.idx, checking that they agree. The pack
// is opened first: whatever replaces the files later (a fetch into the
// directory), the index kept is the one written for the open pack, or the
// pack is not used.
func openPack(dot billy.Filesystem, base string) (*packFile, error) {
	f, err := dot.Open(base + ".pack")
	if err != nil {
		return nil, err
	}
	data, err := readSmallFile(dot, base+".idx", maxIndexSize)
	if err != nil {
		f.Close()
		return nil, err
	}
	ix, err := parseIndex(data)
	if err != nil {
		f.Close()
		return nil, err
	}
	p, err := newPackFile(path.Base(base)+".pack", f, ix)
	if err != nil {
		f.Close()
		return nil, err
	}
	return p, nil
}

// newPackFile checks the pack's header and checksum against its index. The
// pack reader trusts the index for every offset and never hashes what it
// reads, so an index written for another pack (one with the same name from
// another write, or an index still being written) must not be used: the
// offsets would land on other objects.
func newPackFile(name string, f billy.File, ix *packIndex) (*packFile, error) {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	var head [packHeaderSize]byte
	if size < packHeaderSize+packTrailerSize {
		return nil, corrupt("%s is %d bytes long", name, size)
	}
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return nil, err
	}
	if string(head[:4]) != "PACK" {
		return nil, corrupt("%s does not start with PACK", name)
	}
	if v := binary.BigEndian.Uint32(head[4:]); v != 2 && v != 3 {
		return nil, fmt.Errorf("%s has version %d: %w", name, v, errFallback)
	}
	if n := binary.BigEndian.Uint32(head[8:]); int(n) != ix.count {
		return nil, corrupt("%s holds %d objects, its index %d", name, n, ix.count)
	}
	var sum [packTrailerSize]byte
	if _, err := f.ReadAt(sum[:], size-packTrailerSize); err != nil {
		return nil, err
	}
	if sum != ix.packSum {
		return nil, corrupt("%s ends with checksum %x, its index was written for %x", name, sum, ix.packSum)
	}
	return &packFile{name: name, f: f, size: size, idx: ix}, nil
}

func readSmallFile(dot billy.Filesystem, name string, max int64) ([]byte, error) {
	f, err := dot.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	if size > max {
		return nil, fmt.Errorf("%s is %d bytes, over %d: %w", name, size, max, errFallback)
	}
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil && !(errors.Is(err, io.EOF) && size == 0) {
		return nil, err
	}
	return buf, nil
}

// close closes the pack files.
func (pr *packReader) close() error {
	var errs []error
	for _, p := range pr.packs {
		errs = append(errs, p.f.Close())
	}
	return errors.Join(errs...)
}

// find looks h up in every pack.
func (pr *packReader) find(h Hash) (*packFile, int64, bool, error) {
	for _, p := range pr.packs {
		off, ok, err := p.idx.find(h)
		if err != nil {
			return nil, 0, false, fmt.Errorf("%s: %w", p.name, err)
		}
		if ok {
			if off > uint64(p.size) {
				return nil, 0, false, corrupt("%s: %s is at %d, past the end", p.name, h, off)
			}
			return p, int64(off), true, nil
		}
	}
	return nil, 0, false, nil
}

// chain returns the entry of h followed by its delta bases, down to the
// first entry that is not a delta. errFallback when h or a REF_DELTA base
// is not in these packs.
func (pr *packReader) chain(h Hash) ([]packEntry, error) {
	p, off, ok, err := pr.find(h)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errFallback
	}
	e, err := p.entryAt(off)
	if err != nil {
		return nil, err
	}
	chain := []packEntry{e}
	for {
		switch e.typ {
		case plumbing.OFSDeltaObject:
			e, err = e.p.entryAt(e.baseOff)
		case plumbing.REFDeltaObject:
			base := e.baseName
			p, off, ok, err2 := pr.find(base)
			switch {
			case err2 != nil:
				return nil, err2
			case !ok:
				return nil, fmt.Errorf("delta base %s is not in the packs: %w", base, errFallback)
			}
			e, err = p.entryAt(off)
		default:
			return chain, nil
		}
		if err != nil {
			return nil, err
		}
		if len(chain) > maxDeltaDepth {
			return nil, corrupt("%s: delta chain of %s is longer than %d", e.p.name, h, maxDeltaDepth)
		}
		chain = append(chain, e)
	}
}

// info returns the type and size of a packed object without inflating more
// than a delta's header.
func (pr *packReader) info(h Hash) (plumbing.ObjectType, int64, error) {
	if in, ok := pr.cachedInfo(h); ok {
		return in.typ, in.size, nil
	}
	chain, err := pr.chain(h)
	if err != nil {
		return 0, 0, err
	}
	in := objectInfo{typ: chain[len(chain)-1].typ, size: chain[0].size}
	if len(chain) > 1 {
		if in.size, err = pr.deltaResultSize(chain[0]); err != nil {
			return 0, 0, err
		}
	}
	pr.infosMu.Lock()
	if len(pr.infos) >= maxCachedInfos {
		clear(pr.infos) // simple and bounded, as for trees
	}
	pr.infos[h] = in
	pr.infosMu.Unlock()
	return in.typ, in.size, nil
}

// cachedInfo returns what info found for h, if it is still kept.
func (pr *packReader) cachedInfo(h Hash) (objectInfo, bool) {
	pr.infosMu.Lock()
	defer pr.infosMu.Unlock()
	in, ok := pr.infos[h]
	return in, ok
}

// read returns the content of h, which must be of type want. check gets the
// object's size before its content is inflated; its error is returned as is.
func (pr *packReader) read(h Hash, want plumbing.ObjectType, check func(size int64) error) ([]byte, error) {
	chain, err := pr.chain(h)
	if err != nil {
		return nil, err
	}
	last := len(chain) - 1
	if typ := chain[last].typ; typ != want {
		return nil, fmt.Errorf("object %s is a %s, not a %s", h, typ, want)
	}
	if last == 0 {
		if err := check(chain[0].size); err != nil {
			return nil, err
		}
		if b, ok := pr.cache.get(chain[0].p, chain[0].off); ok {
			// Inflated earlier as a delta base: copy, as the caller owns what it gets.
			return bytes.Clone(b), nil
		}
		return pr.inflate(chain[0], true)
	}
	// The result's size: known if the file was sized (as it usually is),
	// else from the start of the delta.
	in, known := pr.cachedInfo(h)
	size := in.size
	if !known {
		if size, err = pr.deltaResultSize(chain[0]); err != nil {
			return nil, err
		}
	}
	if err := check(size); err != nil {
		return nil, err
	}
	// Start from the nearest base already inflated.
	start := last
	var base []byte
	for i := 1; i <= last; i++ {
		if b, ok := pr.cache.get(chain[i].p, chain[i].off); ok {
			base, start = b, i
			break
		}
	}
	if base == nil {
		if base, err = pr.inflate(chain[last], false); err != nil {
			return nil, err
		}
		pr.cache.put(chain[last].p, chain[last].off, base)
	}
	for i := start - 1; i >= 0; i-- {
		delta, err := pr.inflate(chain[i], false)
		if err != nil {
			return nil, err
		}
		limit := pr.maxBase
		if i == 0 {
			limit = size
		}
		out, err := applyDelta(base, delta, limit, i == 0)
		if err != nil {
			return nil, corrupt("%s: delta at %d: %v", chain[i].p.name, chain[i].off, err)
		}
		if i > 0 {
			// Intermediate results only: the last one goes to the caller,
			// who may write to it.
			pr.cache.put(chain[i].p, chain[i].off, out)
		}
		base = out
	}
	return base, nil
}

// inflater is a zlib reader over a pack, kept for reuse.
type inflater struct {
	br  *bufio.Reader // buffered reads from the pack, for long streams
	buf []byte        // a short stream, read at once
	rd  bytes.Reader  // over buf
	z   io.ReadCloser
}

// Most entries (deltas above all) are small: reading them with the 32 KiB
// buffer would copy far more than they hold. A stream of a size zlib would
// write for shortEntry bytes or fewer is read with one ReadAt of just that.
const shortEntry = 16 << 10

// compressedBound is the most zlib takes to store n bytes: stored blocks
// (5 bytes of header per 64 KiB) and its own 6 bytes of framing.
func compressedBound(n int64) int64 { return n + n>>9 + 64 }

// openStream returns an inflater on e's zlib stream. With short > 0 it holds
// at most short bytes of the stream; cut says the stream may go on past them.
func (pr *packReader) openStream(e packEntry, short int64) (in *inflater, cut bool, err error) {
	in, _ = pr.inflates.Get().(*inflater)
	if in == nil {
		in = &inflater{}
	}
	rest := e.p.size - packTrailerSize - e.data
	var src io.Reader
	if short > 0 {
		n := min(short, rest)
		cut = n < rest
		if int64(cap(in.buf)) < n {
			in.buf = make([]byte, n)
		}
		m, err := e.p.f.ReadAt(in.buf[:n], e.data)
		if m < int(n) && err != nil && err != io.EOF {
			pr.inflates.Put(in)
			return nil, false, fmt.Errorf("%s: reading at %d: %w", e.p.name, e.data, err)
		}
		in.rd.Reset(in.buf[:m])
		src = &in.rd
	} else {
		sec := io.NewSectionReader(e.p.f, e.data, rest)
		if in.br == nil {
			in.br = bufio.NewReaderSize(sec, packReadBuffer)
		} else {
			in.br.Reset(sec)
		}
		src = in.br
	}
	if in.z == nil {
		in.z, err = zlib.NewReader(src) // nil on error
	} else {
		err = in.z.(zlib.Resetter).Reset(src, nil)
	}
	if err != nil {
		pr.release(in)
		return nil, cut, corrupt("%s: entry at %d: %v", e.p.name, e.off, err)
	}
	return in, cut, nil
}

func (pr *packReader) release(in *inflater) {
	if in.br != nil {
		in.br.Reset(nil)
	}
	in.rd.Reset(nil)
	pr.inflates.Put(in)
}

// inflate returns an entry's data, which must be exactly the size its
// header gives and end the zlib stream (whose checksum is thus checked).
// vetted says a caller's check accepted the size; otherwise it is bounded by
// maxBase and memory grows with what really inflates.
func (pr *packReader) inflate(e packEntry, vetted bool) ([]byte, error) {
	if !vetted && e.size > pr.maxBase {
		return nil, corrupt("%s: entry at %d claims %d bytes, over the %d bytes allowed for a delta or delta base", e.p.name, e.off, e.size, pr.maxBase)
	}
	if bound := compressedBound(e.size); bound <= shortEntry {
		b, cut, err := pr.inflateFrom(e, vetted, bound)
		if err == nil || !cut {
			return b, err
		}
		// Longer than zlib writes it, or damaged: read on to tell.
	}
	b, _, err := pr.inflateFrom(e, vetted, 0)
	return b, err
}

func (pr *packReader) inflateFrom(e packEntry, vetted bool, short int64) ([]byte, bool, error) {
	in, cut, err := pr.openStream(e, short)
	if err != nil {
		return nil, cut, err
	}
	defer pr.release(in)
	var buf []byte
	if vetted || e.size <= growStep {
		buf = make([]byte, e.size)
		_, err = io.ReadFull(in.z, buf)
	} else {
		buf, err = readGrowing(in.z, e.size)
	}
	if err == nil {
		err = expectEnd(in.z)
	}
	if err != nil {
		return nil, cut, corrupt("%s: entry at %d (%d bytes): %v", e.p.name, e.off, e.size, err)
	}
	return buf, cut, nil
}

// readGrowing reads exactly size bytes, allocating as data arrives.
func readGrowing(r io.Reader, size int64) ([]byte, error) {
	buf := make([]byte, 0, min(size, growStep))
	for int64(len(buf)) < size {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*int64(cap(buf)), size))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case int64(len(buf)) == size:
		case err == io.EOF:
			return nil, io.ErrUnexpectedEOF
		case err != nil:
			return nil, err
		}
	}
	return buf, nil
}

// expectEnd reads past the last byte: the stream must end there, with a
// good checksum.
func expectEnd(z io.Reader) error {
	var b [1]byte
	for range 16 {
		n, err := z.Read(b[:])
		switch {
		case n > 0:
			return errors.New("more data than the header says")
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
	}
	return errors.New("the stream does not end")
}

// deltaResultSize inflates the start of a delta for the size of the object
// it builds (the second size of its header, after its base's).
func (pr *packReader) deltaResultSize(e packEntry) (int64, error) {
	// The first 20 bytes take at most a zlib header, a block header with its
	// code tables (some 300 bytes) and 20 codes; more is read if need be.
	dst, cut, err := pr.deltaResultSizeFrom(e, min(compressedBound(e.size), 512))
	if err != nil && cut {
		dst, _, err = pr.deltaResultSizeFrom(e, 0)
	}
	return dst, err
}

func (pr *packReader) deltaResultSizeFrom(e packEntry, short int64) (dst int64, cut bool, err error) {
	in, cut, err := pr.openStream(e, short)
	if err != nil {
		return 0, cut, err
	}
	defer pr.release(in)
	var b [20]byte
	n, err := io.ReadFull(in.z, b[:min(int64(len(b)), e.size)])
	if err != nil {
		return 0, cut, corrupt("%s: delta at %d: %v", e.p.name, e.off, err)
	}
	_, rest, err := deltaVarint(b[:n])
	if err == nil {
		dst, _, err = deltaVarint(rest)
	}
	if err != nil {
		return 0, cut, corrupt("%s: delta at %d: %v", e.p.name, e.off, err)
	}
	return dst, cut, nil
}

// deltaVarint decodes a delta's size: 7 bits a byte, least significant first.
func deltaVarint(b []byte) (int64, []byte, error) {
	var v uint64
	for i, shift := 0, uint(0); i < len(b); i, shift = i+1, shift+7 {
		if shift > 56 {
			break
		}
		v |= uint64(b[i]&0x7f) << shift
		if b[i]&0x80 == 0 {
			if v > 1<<62 {
				break
			}
			return int64(v), b[i+1:], nil
		}
	}
	return 0, nil, errors.New("malformed size in delta header")
}

// applyDelta builds an object from base and a git delta: the base's size,
// the result's size, then instructions that copy a range of the base or
// insert literal bytes. The result may not exceed limit; vetted says the
// result's size was accepted by the caller, so it is allocated at once.
func applyDelta(base, delta []byte, limit int64, vetted bool) ([]byte, error) {
	srcSize, rest, err := deltaVarint(delta)
	if err != nil {
		return nil, err
	}
	dstSize, ops, err := deltaVarint(rest)
	if err != nil {
		return nil, err
	}
	if srcSize != int64(len(base)) {
		return nil, fmt.Errorf("delta is for a base of %d bytes, the base has %d", srcSize, len(base))
	}
	if dstSize > limit {
		return nil, fmt.Errorf("delta result of %d bytes is over %d", dstSize, limit)
	}
	capacity := dstSize
	if !vetted {
		capacity = min(dstSize, growStep)
	}
	out := make([]byte, 0, capacity)
	for i := 0; i < len(ops); {
		cmd := ops[i]
		i++
		switch {
		case cmd&0x80 != 0: // copy from the base
			var off, n uint64
			for bit := range 7 {
				if cmd&(1<<bit) == 0 {
					continue
				}
				if i >= len(ops) {
					return nil, errors.New("truncated copy instruction")
				}
				if bit < 4 {
					off |= uint64(ops[i]) << (8 * bit)
				} else {
					n |= uint64(ops[i]) << (8 * (bit - 4))
				}
				i++
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > uint64(len(base)) {
				return nil, fmt.Errorf("copy of %d bytes at %d is outside the base of %d bytes", n, off, len(base))
			}
			if uint64(len(out))+n > uint64(dstSize) {
				return nil, errors.New("delta writes past the size it declared")
			}
			out = append(out, base[off:off+n]...)
		case cmd != 0: // insert cmd literal bytes
			n := int(cmd)
			if i+n > len(ops) {
				return nil, errors.New("truncated insert instruction")
			}
			if int64(len(out)+n) > dstSize {
				return nil, errors.New("delta writes past the size it declared")
			}
			out = append(out, ops[i:i+n]...)
			i += n
		default:
			return nil, errors.New("reserved delta instruction 0")
		}
	}
	if int64(len(out)) != dstSize {
		return nil, fmt.Errorf("delta built %d bytes, it declared %d", len(out), dstSize)
	}
	return out, nil
}

// deltaCache keeps recently inflated delta bases, least recently used out
// first. Entries are never written once stored.
type deltaCache struct {
	mu    sync.Mutex
	max   int64
	used  int64
	order list.List // of *cachedBase, most recent first
	byKey map[cacheKey]*list.Element
}

type cacheKey struct {
	p   *packFile
	off int64
}

type cachedBase struct {
	key  cacheKey
	data []byte
}

func newDeltaCache(max int64) *deltaCache {
	return &deltaCache{max: max, byKey: map[cacheKey]*list.Element{}}
}

func (c *deltaCache) get(p *packFile, off int64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[cacheKey{p, off}]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cachedBase).data, true
}

// cacheEntryOverhead is what an entry costs besides its data (list element,
// map entry, key): charged so that many tiny entries stay bounded too.
const cacheEntryOverhead = 128

// put stores data unless it would take more than a quarter of the cache.
func (c *deltaCache) put(p *packFile, off int64, data []byte) {
	size := int64(len(data)) + cacheEntryOverhead
	if size > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cacheKey{p, off}
	if _, ok := c.byKey[k]; ok {
		return
	}
	for c.used+size > c.max {
		el := c.order.Back()
		old := el.Value.(*cachedBase)
		c.order.Remove(el)
		delete(c.byKey, old.key)
		c.used -= int64(len(old.data)) + cacheEntryOverhead
	}
	c.byKey[k] = c.order.PushFront(&cachedBase{key: k, data: data})
	c.used += size
}
