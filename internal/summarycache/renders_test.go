package summarycache

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestRendersKeepFindAndBound(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenRenders(dir, "build-a", 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.GetRender("k1"); ok {
		t.Fatal("an empty store found a render")
	}
	r.PutRender("k1", []byte("one"))
	if got, ok := r.GetRender("k1"); !ok || string(got) != "one" {
		t.Fatalf("got %q, %v", got, ok)
	}
	// Another build never finds it.
	other, _ := OpenRenders(dir, "build-b", 10_000)
	if _, ok := other.GetRender("k1"); ok {
		t.Error("a render of another build was found")
	}
	// Concurrent writers of one key: a reader sees one whole value or none.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { r.PutRender("k2", bytes.Repeat([]byte{byte('a' + i)}, 1000)) })
	}
	wg.Wait()
	got, ok := r.GetRender("k2")
	if !ok || len(got) != 1000 || !bytes.Equal(got, bytes.Repeat(got[:1], 1000)) {
		t.Errorf("after concurrent writes: %d bytes, whole: %v", len(got), ok)
	}
	// Over the bound, the least recently used go first.
	r.PutRender("old", bytes.Repeat([]byte("o"), 3000))
	past := time.Now().Add(-time.Hour)
	_ = os.Chtimes(r.path("old"), past, past)
	for i := range 4 {
		r.PutRender(fmt.Sprint("new", i), bytes.Repeat([]byte("n"), 2000))
	}
	if _, ok := r.GetRender("old"); ok {
		t.Error("the least recently used render survived the bound")
	}
	if n := r.count(); n > 10_000 {
		t.Errorf("%d bytes kept over a bound of 10000", n)
	}
	if _, ok := r.GetRender("new3"); !ok {
		t.Error("the newest render was evicted")
	}
	// No temporary file is left behind.
	tmps, _ := filepath.Glob(filepath.Join(dir, RendersDir, "*", ".render-*"))
	if len(tmps) > 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
	// Too large to keep: dropped, not an error.
	r.PutRender("huge", make([]byte, maxRenderEntry+1))
	if _, ok := r.GetRender("huge"); ok {
		t.Error("a render over the entry bound was kept")
	}
}
