package gitfs

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// craft is one entry of a hand-made pack. The pack reader never hashes
// content, so names are whatever the test says.
type craft struct {
	name Hash
	typ  plumbing.ObjectType
	size int64  // size in the entry header; -1: len(data)
	data []byte // inflated data: the object, or the delta
	// raw, when set, is the whole entry (header and stream) as is.
	raw []byte
	// base of a delta: the index of an earlier entry (OFS_DELTA) or a name (REF_DELTA)
	base     int
	baseName Hash
	// stream, when set, replaces the zlib stream of data.
	stream []byte
}

func craftName(i int) Hash {
	var h Hash
	h[0], h[1], h[19] = byte(i>>8), byte(i), 0x5a
	return h
}

func zlibBytes(b []byte) []byte {
	var buf bytes.Buffer
	z := zlib.NewWriter(&buf)
	z.Write(b)
	z.Close()
	return buf.Bytes()
}

// zlibPadded compresses b after n empty blocks (sync flushes): a valid
// stream far longer than zlib would write for b.
func zlibPadded(b []byte, n int) []byte {
	var buf bytes.Buffer
	z := zlib.NewWriter(&buf)
	for range n {
		z.Flush()
	}
	z.Write(b)
	z.Close()
	return buf.Bytes()
}

func entryHeader(typ plumbing.ObjectType, size int64) []byte {
	c := byte(typ)<<4 | byte(size&0x0f)
	size >>= 4
	var out []byte
	for size > 0 {
		out = append(out, c|0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	return append(out, c)
}

func ofsBytes(rel int64) []byte {
	out := []byte{byte(rel & 0x7f)}
	for rel >>= 7; rel > 0; rel >>= 7 {
		rel--
		out = append([]byte{0x80 | byte(rel&0x7f)}, out...)
	}
	return out
}

// buildPack lays the entries out as a pack and writes a version 2 index
// listing each entry's name at its offset.
func buildPack(entries []craft) (pack, idx []byte) {
	var p bytes.Buffer
	p.WriteString("PACK")
	binary.Write(&p, binary.BigEndian, uint32(2))
	binary.Write(&p, binary.BigEndian, uint32(len(entries)))
	offs := make([]int64, len(entries))
	for i, e := range entries {
		offs[i] = int64(p.Len())
		if e.raw != nil {
			p.Write(e.raw)
			continue
		}
		size := e.size
		if size < 0 {
			size = int64(len(e.data))
		}
		p.Write(entryHeader(e.typ, size))
		switch e.typ {
		case plumbing.OFSDeltaObject:
			p.Write(ofsBytes(offs[i] - offs[e.base]))
		case plumbing.REFDeltaObject:
			p.Write(e.baseName[:])
		}
		if e.stream != nil {
			p.Write(e.stream)
		} else {
			p.Write(zlibBytes(e.data))
		}
	}
	p.Write(make([]byte, 20))
	names := make([]Hash, len(entries))
	for i, e := range entries {
		names[i] = e.name
	}
	return p.Bytes(), buildIndex(names, offs, 1<<31)
}

// buildIndex writes a version 2 index; offsets at or past large go to the
// 64-bit table.
func buildIndex(names []Hash, offs []int64, large int64) []byte {
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return bytes.Compare(names[order[a]][:], names[order[b]][:]) < 0 })
	var x bytes.Buffer
	x.Write(idxMagic)
	binary.Write(&x, binary.BigEndian, uint32(2))
	for b := range 256 {
		n := 0
		for _, h := range names {
			if int(h[0]) <= b {
				n++
			}
		}
		binary.Write(&x, binary.BigEndian, uint32(n))
	}
	for _, i := range order {
		x.Write(names[i][:])
	}
	x.Write(make([]byte, 4*len(names))) // CRC-32s: unused
	var wide []int64
	for _, i := range order {
		if offs[i] >= large {
			binary.Write(&x, binary.BigEndian, uint32(0x8000_0000|len(wide)))
			wide = append(wide, offs[i])
		} else {
			binary.Write(&x, binary.BigEndian, uint32(offs[i]))
		}
	}
	for _, o := range wide {
		binary.Write(&x, binary.BigEndian, uint64(o))
	}
	x.Write(make([]byte, 40))
	return x.Bytes()
}

// memPackReader opens a pack held in memory.
func memPackReader(t testing.TB, pack, idx []byte, maxBase int64) (*packReader, error) {
	t.Helper()
	fs := memfs.New()
	for name, data := range map[string][]byte{"objects/pack/pack-t.pack": pack, "objects/pack/pack-t.idx": idx} {
		f, err := fs.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(data)
		f.Close()
	}
	p, err := openPack(fs, "objects/pack/pack-t")
	if err != nil {
		return nil, err
	}
	return newPackReader([]*packFile{p}, maxBase), nil
}

// delta encodes a delta from ops: "c<off>,<n>" copies, anything else inserts.
func delta(srcSize, dstSize int, ops ...string) []byte {
	out := binary.AppendUvarint(nil, uint64(srcSize))
	out = binary.AppendUvarint(out, uint64(dstSize))
	for _, op := range ops {
		var off, n int
		if _, err := fmt.Sscanf(op, "c%d,%d", &off, &n); err == nil {
			cmd := byte(0x80)
			var args []byte
			for i := range 4 {
				if b := byte(off >> (8 * i)); b != 0 {
					cmd |= 1 << i
					args = append(args, b)
				}
			}
			for i := range 3 {
				if b := byte(n >> (8 * i)); b != 0 {
					cmd |= 1 << (4 + i)
					args = append(args, b)
				}
			}
			out = append(append(out, cmd), args...)
			continue
		}
		out = append(append(out, byte(len(op))), op...)
	}
	return out
}

var (
	baseText = []byte("schema: olm.package\nname: etcd\n")
	// goodDelta turns baseText into "schema: olm.package\nname: etcd-operator\n".
	goodDelta = delta(len(baseText), len(baseText)+9, "c0,30", "-operator", "c30,1")
)

func TestCraftedPacks(t *testing.T) {
	blob := func(i int, data string) craft {
		return craft{name: craftName(i), typ: plumbing.BlobObject, size: -1, data: []byte(data)}
	}
	ofs := func(i, base int, d []byte) craft {
		return craft{name: craftName(i), typ: plumbing.OFSDeltaObject, size: -1, data: d, base: base}
	}
	ref := func(i int, base Hash, d []byte) craft {
		return craft{name: craftName(i), typ: plumbing.REFDeltaObject, size: -1, data: d, baseName: base}
	}
	badAdler := zlibBytes(baseText)
	badAdler[len(badAdler)-1] ^= 1
	badStream := zlibBytes(baseText)
	badStream[4] ^= 0xff

	for _, tc := range []struct {
		name    string
		entries []craft
		want    string // content, or "error: <substring>", or "fallback"
	}{
		{"blob", []craft{blob(0, string(baseText))}, string(baseText)},
		{"ofs delta", []craft{blob(1, string(baseText)), ofs(0, 0, goodDelta)}, "schema: olm.package\nname: etcd-operator\n"},
		{"ref delta", []craft{blob(1, string(baseText)), ref(0, craftName(1), goodDelta)}, "schema: olm.package\nname: etcd-operator\n"},
		{"delta of a delta", []craft{blob(2, "abcdef"), ofs(1, 0, delta(6, 3, "c3,3")), ofs(0, 1, delta(3, 4, "c0,3", "!"))}, "def!"},
		{"stream longer than zlib writes", []craft{{name: craftName(0), typ: plumbing.BlobObject, size: -1, data: baseText, stream: zlibPadded(baseText, 200)}}, string(baseText)},
		{"delta stream longer than zlib writes", []craft{blob(1, string(baseText)), {name: craftName(0), typ: plumbing.OFSDeltaObject, size: -1, data: goodDelta, base: 0, stream: zlibPadded(goodDelta, 200)}}, "schema: olm.package\nname: etcd-operator\n"},
		{"header longer than the stream", []craft{{name: craftName(0), typ: plumbing.BlobObject, size: 100, data: baseText}}, "error: unexpected EOF"},
		{"header shorter than the stream", []craft{{name: craftName(0), typ: plumbing.BlobObject, size: 5, data: baseText}}, "error: more data than the header says"},
		{"bad checksum", []craft{{name: craftName(0), typ: plumbing.BlobObject, size: -1, data: baseText, stream: badAdler}}, "error: checksum"},
		{"bad stream", []craft{{name: craftName(0), typ: plumbing.BlobObject, size: -1, data: baseText, stream: badStream}}, "error: corrupt pack"},
		{"no stream", []craft{{name: craftName(0), typ: plumbing.BlobObject, size: -1, data: baseText, stream: []byte{}}}, "error: corrupt pack"},
		{"unknown type", []craft{{name: craftName(0), typ: 5, size: -1, data: baseText}}, "error: unknown type 5"},
		{"type 0", []craft{{name: craftName(0), typ: 0, size: -1, data: baseText}}, "error: unknown type 0"},
		{"size varint never ends", []craft{{name: craftName(0), raw: bytes.Repeat([]byte{0xff}, 40)}}, "error: malformed size"},
		{"base offset before the pack", []craft{{name: craftName(0), raw: append(entryHeader(plumbing.OFSDeltaObject, 3), 0x7f)}}, "error: outside the pack"},
		{"base offset varint never ends", []craft{{name: craftName(0), raw: append(entryHeader(plumbing.OFSDeltaObject, 3), bytes.Repeat([]byte{0xff}, 20)...)}}, "error: malformed base offset"},
		{"base inside an entry", []craft{blob(1, string(baseText)), {name: craftName(0), raw: append(append(entryHeader(plumbing.OFSDeltaObject, int64(len(goodDelta))), ofsBytes(int64(len(baseText)))...), zlibBytes(goodDelta)...)}}, "error: "},
		{"base of another size", []craft{blob(1, "short"), ofs(0, 0, goodDelta)}, "error: base of 31 bytes, the base has 5"},
		{"copy past the base", []craft{blob(1, "abc"), ofs(0, 0, delta(3, 5, "c1,5"))}, "error: outside the base"},
		{"copy at a huge offset", []craft{blob(1, "abc"), ofs(0, 0, delta(3, 5, "c4294967295,5"))}, "error: outside the base"},
		{"writes past its size", []craft{blob(1, "abc"), ofs(0, 0, delta(3, 2, "c0,3"))}, "error: past the size it declared"},
		{"short of its size", []craft{blob(1, "abc"), ofs(0, 0, delta(3, 9, "c0,3"))}, "error: delta built 3 bytes, it declared 9"},
		{"reserved instruction", []craft{blob(1, "abc"), ofs(0, 0, append(delta(3, 3), 0))}, "error: reserved delta instruction"},
		{"truncated insert", []craft{blob(1, "abc"), ofs(0, 0, append(delta(3, 3), 5, 'a'))}, "error: truncated insert"},
		{"truncated copy", []craft{blob(1, "abc"), ofs(0, 0, append(delta(3, 3), 0x91))}, "error: truncated copy"},
		{"delta header cut", []craft{blob(1, "abc"), ofs(0, 0, []byte{0x83})}, "error: malformed size in delta header"},
		{"huge delta result", []craft{blob(1, "abc"), ofs(0, 0, delta(3, 1<<40, "c0,3"))}, "error: over the size limit"},
		{"huge delta base", []craft{{name: craftName(1), typ: plumbing.BlobObject, size: 1 << 40, data: baseText}, ofs(0, 0, goodDelta)}, "error: allowed for a delta or delta base"},
		{"ref delta cycle", []craft{ref(0, craftName(1), goodDelta), ref(1, craftName(0), goodDelta)}, "error: longer than 4095"},
		{"ref delta to itself", []craft{ref(0, craftName(0), goodDelta)}, "error: longer than 4095"},
		{"ref delta base elsewhere", []craft{ref(0, craftName(9), goodDelta)}, "fallback"},
		{"tree asked as a blob", []craft{{name: craftName(0), typ: plumbing.TreeObject, size: -1, data: []byte{}}}, "error: is a tree, not a blob"},
		{"delta over a tree", []craft{{name: craftName(1), typ: plumbing.TreeObject, size: -1, data: baseText}, ofs(0, 0, goodDelta)}, "error: is a tree, not a blob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pack, idx := buildPack(tc.entries)
			pr, err := memPackReader(t, pack, idx, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pr.read(craftName(0), plumbing.BlobObject, func(size int64) error {
				if size > 1<<20 {
					return fmt.Errorf("%d bytes: %w", size, ErrTooLarge)
				}
				return nil
			})
			_, _, infoErr := pr.info(craftName(0))
			switch want, isErr := strings.CutPrefix(tc.want, "error: "); {
			case tc.want == "fallback":
				if !errors.Is(err, errFallback) || !errors.Is(infoErr, errFallback) {
					t.Errorf("read: %v, info: %v; want errFallback", err, infoErr)
				}
			case isErr:
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("read = %q, %v; want an error with %q", got, err, want)
				}
				if errors.Is(err, errFallback) {
					t.Errorf("read error %v would go to go-git", err)
				}
			default:
				if err != nil || string(got) != tc.want {
					t.Errorf("read = %q, %v; want %q", got, err, tc.want)
				}
				if infoErr != nil {
					t.Errorf("info: %v", infoErr)
				}
			}
		})
	}
}

// TestCraftedDeepChain: a chain of OFS_DELTAs deeper than git ever writes is
// refused, one at the limit is read.
func TestCraftedDeepChain(t *testing.T) {
	for _, depth := range []int{maxDeltaDepth, maxDeltaDepth + 1} {
		entries := []craft{{name: craftName(depth), typ: plumbing.BlobObject, size: -1, data: []byte("x")}}
		d := delta(1, 1, "c0,1")
		stream := zlibBytes(d)
		for i := 1; i <= depth; i++ {
			entries = append(entries, craft{name: craftName(depth - i), typ: plumbing.OFSDeltaObject, size: -1, data: d, stream: stream, base: i - 1})
		}
		pack, idx := buildPack(entries)
		pr, err := memPackReader(t, pack, idx, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pr.read(craftName(0), plumbing.BlobObject, func(int64) error { return nil })
		if depth <= maxDeltaDepth && (err != nil || string(got) != "x") {
			t.Errorf("depth %d: read = %q, %v, want x", depth, got, err)
		}
		if depth > maxDeltaDepth && (err == nil || !strings.Contains(err.Error(), "longer than")) {
			t.Errorf("depth %d: read = %q, %v, want a chain-too-long error", depth, got, err)
		}
	}
}

// TestCraftedIndexes: an index that does not fit its pack keeps the pack
// away from the pack reader (go-git gets it) or makes lookups fail; no panic.
func TestCraftedIndexes(t *testing.T) {
	pack, idx := buildPack([]craft{{name: craftName(0), typ: plumbing.BlobObject, size: -1, data: baseText}})
	_, wideIdx := buildPack([]craft{{name: craftName(0), typ: plumbing.BlobObject, size: -1, data: baseText}})
	wideIdx = buildIndex([]Hash{craftName(0)}, []int64{12}, 0)
	mod := func(b []byte, f func([]byte) []byte) []byte { return f(bytes.Clone(b)) }
	for _, tc := range []struct {
		name      string
		pack, idx []byte
		openErr   string // from openPack
		readErr   string // from read
	}{
		{"64-bit offset", pack, wideIdx, "", ""},
		{"version 1 index", pack, mod(idx, func(b []byte) []byte { return b[8:] }), "left to go-git", ""},
		{"index version 3", pack, mod(idx, func(b []byte) []byte { b[7] = 3; return b }), "left to go-git", ""},
		{"pack version 4", mod(pack, func(b []byte) []byte { b[7] = 4; return b }), idx, "left to go-git", ""},
		{"not a pack", mod(pack, func(b []byte) []byte { b[0] = 'X'; return b }), idx, "does not start with PACK", ""},
		{"count mismatch", mod(pack, func(b []byte) []byte { b[11] = 2; return b }), idx, "its index 1", ""},
		{"index of another pack", mod(pack, func(b []byte) []byte { b[len(b)-1] = 1; return b }), idx, "its index was written for", ""},
		{"short index", pack, idx[:100], "too short", ""},
		{"short pack", pack[:20], idx, "is 20 bytes long", ""},
		{"index size off", pack, mod(idx, func(b []byte) []byte { return append(b, 1, 2, 3) }), "does not match", ""},
		{"fan-out decreasing", pack, mod(idx, func(b []byte) []byte { b[8+4*200+3] = 0; return b }), "fan-out decreases", ""},
		{"fan-out past the count", pack, mod(idx, func(b []byte) []byte { binary.BigEndian.PutUint32(b[8+4*255:], 1<<30); return b }), "does not match", ""},
		{"offset past the pack", pack, mod(idx, func(b []byte) []byte { binary.BigEndian.PutUint32(b[8+1024+20+4:], 1<<20); return b }), "", "past the end"},
		{"offset in the trailer", pack, mod(idx, func(b []byte) []byte { binary.BigEndian.PutUint32(b[8+1024+20+4:], uint32(len(pack)-10)); return b }), "", "outside the pack"},
		{"offset in the header", pack, mod(idx, func(b []byte) []byte { binary.BigEndian.PutUint32(b[8+1024+20+4:], 3); return b }), "", "outside the pack"},
		{"64-bit offset past the table", pack, mod(wideIdx, func(b []byte) []byte { b[8+1024+20+4+3] = 7; return b }), "", "past the table"},
		{"64-bit offset huge", pack, mod(wideIdx, func(b []byte) []byte { b[8+1024+20+4+4] = 0xff; return b }), "", "past the end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, err := memPackReader(t, tc.pack, tc.idx, 1<<20)
			if tc.openErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.openErr) {
					t.Errorf("openPack: %v, want an error with %q", err, tc.openErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("openPack: %v", err)
			}
			got, err := pr.read(craftName(0), plumbing.BlobObject, func(int64) error { return nil })
			if tc.readErr == "" && (err != nil || !bytes.Equal(got, baseText)) {
				t.Errorf("read = %q, %v", got, err)
			}
			if tc.readErr != "" && (err == nil || !strings.Contains(err.Error(), tc.readErr)) {
				t.Errorf("read = %q, %v, want an error with %q", got, err, tc.readErr)
			}
		})
	}
}

// TestCraftedPackInRepo puts damaged packs in a real repository and reads
// them through TreeFS: each read fails with a message naming the path, the
// budget is not charged, and a pack the reader leaves to go-git still fails
// cleanly there.
func TestCraftedPackInRepo(t *testing.T) {
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	huge := craft{name: craftName(1), typ: plumbing.BlobObject, size: 1 << 40, data: baseText}
	short := craft{name: craftName(2), typ: plumbing.BlobObject, size: 100, data: baseText}
	good := craft{name: craftName(3), typ: plumbing.BlobObject, size: -1, data: baseText}
	badDelta := craft{name: craftName(4), typ: plumbing.OFSDeltaObject, size: -1, data: delta(len(baseText), 5, "c100,5"), base: 2}
	orphan := craft{name: craftName(5), typ: plumbing.REFDeltaObject, size: -1, data: goodDelta, baseName: craftName(99)}
	pack, idx := buildPack([]craft{huge, short, good, badDelta, orphan})
	var listing strings.Builder
	for _, c := range []struct {
		name string
		h    Hash
	}{{"huge", huge.name}, {"short", short.name}, {"good", good.name}, {"baddelta", badDelta.name}, {"orphan", orphan.name}} {
		fmt.Fprintf(&listing, "100644 blob %s\t%s\n", c.h, c.name)
	}
	tree := mktree(t, dir, listing.String())
	commit := runGit(t, dir, "commit-tree", tree, "-m", "crafted")
	packDir := filepath.Join(dir, ".git", "objects", "pack")
	os.MkdirAll(packDir, 0o755)
	os.WriteFile(filepath.Join(packDir, "pack-crafted.pack"), pack, 0o444)
	os.WriteFile(filepath.Join(packDir, "pack-crafted.idx"), idx, 0o444)

	r := openRepo(t, dir)
	f := treeFS(t, r, commit, Limits{})
	if fi, err := f.Stat("huge"); err != nil || fi.Size() != 1<<40 {
		t.Errorf("Stat(huge) = %v, %v, want the claimed 1 TiB", fi, err)
	}
	if _, err := f.ReadFile("huge"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile(huge) = %v, want ErrTooLarge", err)
	}
	if b, err := f.ReadFile("good"); err != nil || !bytes.Equal(b, baseText) {
		t.Errorf("ReadFile(good) = %q, %v", b, err)
	}
	for _, name := range []string{"short", "baddelta"} {
		_, err := f.ReadFile(name)
		if err == nil || !errors.Is(err, errCorruptPack) || !strings.Contains(err.Error(), name) {
			t.Errorf("ReadFile(%s) = %v, want a corrupt-pack error naming the file", name, err)
		}
	}
	// Left to go-git, which finds the delta but not its base.
	if b, err := f.ReadFile("orphan"); err == nil {
		t.Errorf("ReadFile(orphan) = %q, want an error", b)
	}
	if spent := f.spent.Load(); spent != int64(len(baseText)) {
		t.Errorf("budget charged %d bytes, want only the good file's %d", spent, len(baseText))
	}
}

// FuzzPackReader reads every object of a pack whose entries are the fuzzer's
// bytes, through an index with the offsets it gives: no panic, sizes as
// announced, nothing over the limits.
func FuzzPackReader(f *testing.F) {
	seed := func(entries ...craft) {
		pack, _ := buildPack(entries)
		var offs []byte
		for i, e := range entries {
			_ = e
			p, _ := buildPack(entries[:i])
			offs = binary.BigEndian.AppendUint16(offs, uint16(len(p)-20-12))
		}
		f.Add(pack[12:len(pack)-20], offs)
	}
	blob := craft{name: craftName(0), typ: plumbing.BlobObject, size: -1, data: baseText}
	seed(blob)
	seed(blob, craft{name: craftName(1), typ: plumbing.OFSDeltaObject, size: -1, data: goodDelta, base: 0})
	seed(blob, craft{name: craftName(1), typ: plumbing.REFDeltaObject, size: -1, data: goodDelta, baseName: craftName(0)})
	seed(craft{name: craftName(0), typ: plumbing.REFDeltaObject, size: -1, data: goodDelta, baseName: craftName(0)})
	seed(blob, craft{name: craftName(1), typ: plumbing.OFSDeltaObject, size: -1, data: delta(len(baseText), 3, "c0,3"), base: 0},
		craft{name: craftName(2), typ: plumbing.OFSDeltaObject, size: -1, data: delta(3, 4, "c0,3", "!"), base: 1})
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, body, offData []byte) {
		if len(offData) > 64 {
			offData = offData[:64]
		}
		var names []Hash
		var offs []int64
		for i := 0; i+2 <= len(offData); i += 2 {
			names = append(names, craftName(i/2))
			offs = append(offs, packHeaderSize+int64(binary.BigEndian.Uint16(offData[i:])))
		}
		pack := append([]byte("PACK\x00\x00\x00\x02"), binary.BigEndian.AppendUint32(nil, uint32(len(names)))...)
		pack = append(append(pack, body...), make([]byte, 20)...)
		idx := buildIndex(names, offs, 1<<8) // some offsets through the 64-bit table
		pr, err := memPackReader(t, pack, idx, limit)
		if err != nil {
			return
		}
		for _, h := range names {
			typ, size, infoErr := pr.info(h)
			if infoErr == nil && (size < 0 || typ < plumbing.CommitObject || typ > plumbing.TagObject) {
				t.Fatalf("info(%s) = %s, %d", h, typ, size)
			}
			want := plumbing.BlobObject
			if infoErr == nil {
				want = typ
			}
			checked := int64(-1)
			got, err := pr.read(h, want, func(n int64) error {
				checked = n
				if n > limit {
					return ErrTooLarge
				}
				return nil
			})
			if err != nil {
				continue
			}
			if int64(len(got)) != checked || int64(len(got)) > limit {
				t.Fatalf("read(%s) = %d bytes, check saw %d", h, len(got), checked)
			}
			if infoErr != nil || size != checked {
				t.Fatalf("read(%s) gave %d bytes, info said %d, %v", h, len(got), size, infoErr)
			}
		}
	})
}

// FuzzApplyDelta compares applyDelta with go-git's PatchDelta: whatever
// both accept, they build alike; applyDelta never exceeds its limit.
func FuzzApplyDelta(f *testing.F) {
	f.Add(baseText, goodDelta)
	f.Add([]byte("abcdef"), delta(6, 4, "c3,3", "!"))
	f.Add([]byte("abc"), delta(3, 65536, "c0,0"))
	f.Fuzz(func(t *testing.T, base, d []byte) {
		const limit = 1 << 20
		got, err := applyDelta(base, d, limit, false)
		if err != nil {
			return
		}
		if len(got) > limit {
			t.Fatalf("applyDelta built %d bytes, over %d", len(got), limit)
		}
		want, gitErr := func() (b []byte, err error) {
			defer func() {
				if recover() != nil {
					err = errors.New("go-git panicked")
				}
			}()
			return packfile.PatchDelta(base, d)
		}()
		if gitErr == nil && !bytes.Equal(got, want) {
			t.Fatalf("applyDelta = %q, go-git built %q", got, want)
		}
	})
}

// TestCraftedLargeBase: a delta base over growStep is inflated with memory
// growing as data arrives; one whose stream ends early is an error.
func TestCraftedLargeBase(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 3*growStep/16+1)
	d := delta(len(big), 5, "c10,5")
	for _, tc := range []struct {
		name   string
		size   int64
		want   string
		errSub string
	}{
		{"whole", int64(len(big)), "abcde", ""},
		{"cut short", int64(len(big)) + growStep, "", "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pack, idx := buildPack([]craft{
				{name: craftName(1), typ: plumbing.BlobObject, size: tc.size, data: big},
				{name: craftName(0), typ: plumbing.OFSDeltaObject, size: -1, data: d, base: 0},
			})
			pr, err := memPackReader(t, pack, idx, 8*growStep)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pr.read(craftName(0), plumbing.BlobObject, func(int64) error { return nil })
			if tc.errSub == "" && (err != nil || string(got) != tc.want) {
				t.Errorf("read = %q, %v, want %q", got, err, tc.want)
			}
			if tc.errSub != "" && (err == nil || !strings.Contains(err.Error(), tc.errSub)) {
				t.Errorf("read = %q, %v, want an error with %q", got, err, tc.errSub)
			}
		})
	}
}

func TestDeltaCacheEvicts(t *testing.T) {
	// 100 bytes of data for four entries' bookkeeping: a quarter is 25 bytes.
	c := newDeltaCache(100 + 4*cacheEntryOverhead)
	p := &packFile{}
	c.put(p, 1, make([]byte, 20))
	c.put(p, 2, make([]byte, 20))
	c.put(p, 3, make([]byte, 26)) // over a quarter: not kept
	if _, ok := c.get(p, 3); ok {
		t.Errorf("an entry over a quarter of the cache was kept")
	}
	c.get(p, 1) // 1 is now the most recent
	c.put(p, 4, make([]byte, 25))
	c.put(p, 5, make([]byte, 25))
	c.put(p, 6, make([]byte, 25)) // 20+20+25+25+25 > 100: the least recent (2) goes
	if _, ok := c.get(p, 2); ok {
		t.Errorf("the least recently used entry was kept")
	}
	for _, off := range []int64{1, 4, 5, 6} {
		if _, ok := c.get(p, off); !ok {
			t.Errorf("entry %d was dropped", off)
		}
	}
	if c.used > c.max {
		t.Errorf("cache holds %d bytes, over %d", c.used, c.max)
	}
}

// TestDeltaCacheBoundsEmptyEntries: entries of no bytes still cost their
// bookkeeping, so a pack of many empty delta bases cannot grow the cache
// without bound.
func TestDeltaCacheBoundsEmptyEntries(t *testing.T) {
	c := newDeltaCache(100 * cacheEntryOverhead)
	p := &packFile{}
	for off := range int64(10_000) {
		c.put(p, off, []byte{})
	}
	if n := len(c.byKey); n > 100 {
		t.Errorf("the cache keeps %d empty entries, over the %d its size allows", n, 100)
	}
	if c.used > c.max {
		t.Errorf("cache holds %d, over %d", c.used, c.max)
	}
}
