// Command record-bundle-render records what opm renders of each bundle directory of a tree, for the
// differential test of catalog/bundle.Render: each directory is built into its bundle image
// (catalog/image.BundleImage), pushed to an in-process registry on loopback, and rendered with
// `opm render --use-http`; the olm.bundle blob is written to OUT/<package>/<version>.json with the image
// replaced by "<image>" and each olm.bundle.object's data by the sha256 of its base64 (the manifests
// themselves are in the bundle directories; the goldens stay small).
//
//	go run ./scripts/record-bundle-render -opm $CATALOGBOT_TOOLS/bin/opm -bundles ../shared/testdata/bundles -o testdata/bundle-render/opm-v1.60.0
//
// opm reads ~/.config/containers/policy.json; the program writes an accept-anything policy to a temporary
// HOME for its runs, so nothing of yours is changed.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/internal/opmrun"
)

func main() {
	opm := flag.String("opm", "", "the opm binary (default $OPM, else $CATALOGBOT_TOOLS/bin/opm)")
	root := flag.String("bundles", "../shared/testdata/bundles", "tree of <package>/<version>/ bundle directories")
	out := flag.String("o", "testdata/bundle-render/opm-v1.60.0", "where the goldens go")
	migrate := flag.String("migrate-level", "", "opm render's --migrate-level (e.g. bundle-object-to-csv-metadata); empty: none")
	flag.Parse()
	opmrun.NeedDir("record-bundle-render", *root, "the community bundles of the shared test data, which live beside the repository; give another tree with -bundles")
	*opm = opmrun.NeedTool("record-bundle-render", *opm, "OPM", "opm")
	if err := run(*opm, *root, *out, *migrate); err != nil {
		log.Fatal(err)
	}
}

func run(opm, root, out, migrate string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	env, err := opmrun.Start("record-bundle-render-")
	if err != nil {
		return err
	}
	defer env.Close()
	host, home := env.Host, env.Home
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	sort.Strings(anns)
	n := 0
	for _, a := range anns {
		dir := filepath.Dir(filepath.Dir(a))
		pkg, ver := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
		b, _, err := bundle.Load(ctx, os.DirFS(dir), bundle.Limits{})
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		img, err := image.BundleImage(ctx, os.DirFS(dir), b.Annotations, image.Limits{})
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		ref := fmt.Sprintf("%s/bundles/%s:%s", host, pkg, strings.ReplaceAll(ver, "+", "_"))
		r, err := name.ParseReference(ref, name.Insecure)
		if err != nil {
			return err
		}
		if err := remote.Write(r, img, remote.WithContext(ctx)); err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
		args := []string{"render", "--use-http", ref, "-o", "json"}
		if migrate != "" {
			args = append(args, "--migrate-level", migrate)
		}
		cmd := exec.CommandContext(ctx, opm, args...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		cmd.Stderr = os.Stderr
		raw, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("opm render %s: %w", ref, err)
		}
		var blob map[string]any
		if err := json.Unmarshal(raw, &blob); err != nil {
			return fmt.Errorf("opm render %s: %w", ref, err)
		}
		if err := hashCSVMetadata(raw, blob); err != nil {
			return fmt.Errorf("opm render %s: %w", ref, err)
		}
		normalize(blob, ref)
		data, _ := json.MarshalIndent(blob, "", "  ")
		dst := filepath.Join(out, pkg, ver+".json")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, append(data, '\n'), 0o644); err != nil {
			return err
		}
		n++
	}
	fmt.Printf("record-bundle-render: %d bundles rendered by %s into %s\n", n, opm, out)
	return nil
}

// normalize replaces the image by "<image>" and each olm.bundle.object's data by its sha256.
func normalize(blob map[string]any, ref string) {
	if blob["image"] == ref {
		blob["image"] = "<image>"
	}
	if ris, ok := blob["relatedImages"].([]any); ok {
		for _, ri := range ris {
			if m, ok := ri.(map[string]any); ok && m["image"] == ref {
				m["image"] = "<image>"
			}
		}
	}
	props, _ := blob["properties"].([]any)
	for _, p := range props {
		m, _ := p.(map[string]any)
		if m["type"] != "olm.bundle.object" {
			continue
		}
		v, _ := m["value"].(map[string]any)
		if d, ok := v["data"].(string); ok {
			sum := sha256.Sum256([]byte(d))
			v["data"] = "sha256:" + hex.EncodeToString(sum[:])
		}
	}
}

// hashCSVMetadata replaces the value of an olm.csv.metadata property by the sha256 of its compact JSON
// as opm wrote it (key order and escapes kept), so the goldens stay small and the comparison is byte
// for byte.
func hashCSVMetadata(raw []byte, blob map[string]any) error {
	var ordered struct {
		Properties []struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &ordered); err != nil {
		return err
	}
	props, _ := blob["properties"].([]any)
	for i, p := range ordered.Properties {
		if p.Type != "olm.csv.metadata" || i >= len(props) {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, p.Value); err != nil {
			return err
		}
		sum := sha256.Sum256(buf.Bytes())
		props[i].(map[string]any)["value"] = "sha256:" + hex.EncodeToString(sum[:])
	}
	return nil
}
