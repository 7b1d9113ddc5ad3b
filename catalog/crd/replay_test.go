package crd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
)

// The replay of real upgrades (scripts/replay-crd-safety.sh): each case is a
// package directory of a catalog before and after a merged commit. For every
// bundle the commit added, each upgrade into it is judged by us, and each
// CRD pair is written out for crdify; a second pass reads crdify's reports
// and writes the table of docs/crd-replay.md.
var (
	replayDir   = flag.String("crd.replay", "", "directory of replay cases (<case>/old, <case>/new, <case>/commit)")
	replayJudge = flag.String("crd.replay-judge", "", "with -crd.replay: read crdify's reports and write the markdown table to this file")
)

// replayPair is one upgrade of a replayed commit and one CRD of it.
type replayPair struct {
	Case    string   `json:"case"`
	Commit  string   `json:"commit"`
	Package string   `json:"package"`
	From    string   `json:"from"`
	To      string   `json:"to"`
	CRD     string   `json:"crd"`
	Dir     string   `json:"dir"` // the crdify pair's directory, "" when the CRD is not in both bundles
	Keys    []string `json:"keys"`
	Rules   []string `json:"rules"`
	Sample  []string `json:"sample"` // our first message of each rule
}

func TestReplay(t *testing.T) {
	if *replayDir == "" {
		t.Skip("set -crd.replay (scripts/replay-crd-safety.sh does)")
	}
	index := filepath.Join(*replayDir, "pairs.json")
	if *replayJudge != "" {
		judgeReplay(t, index, *replayJudge)
		return
	}
	cases, err := os.ReadDir(*replayDir)
	if err != nil {
		t.Fatal(err)
	}
	var pairs []replayPair
	seen := map[string]bool{}
	for _, c := range cases {
		if !c.IsDir() {
			continue
		}
		dir := filepath.Join(*replayDir, c.Name())
		commit, _ := os.ReadFile(filepath.Join(dir, "commit"))
		old, err := catalog.LoadDir(context.Background(), filepath.Join(dir, "old"), catalog.Limits{})
		if err != nil {
			continue
		}
		new, err := catalog.LoadDir(context.Background(), filepath.Join(dir, "new"), catalog.Limits{})
		if err != nil {
			continue
		}
		for _, p := range new.Packages {
			op := old.Package(p.Name)
			if op == nil {
				continue // a new package: no predecessor
			}
			for _, b := range p.Bundles {
				if op.Bundle(b.Name) != nil {
					continue // not added by this commit
				}
				for _, e := range new.Predecessors(p.Name, b.Name) {
					key := p.Name + " " + e.From + " " + b.Name
					from := p.Bundle(e.From)
					if seen[key] || from == nil {
						continue
					}
					seen[key] = true
					pairs = append(pairs, replayUpgrade(t, dir, c.Name(), strings.TrimSpace(string(commit)), p.Name, from, b)...)
				}
			}
		}
	}
	data, err := json.MarshalIndent(pairs, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(index, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d CRD pairs of %d upgrades", len(pairs), len(seen))
}

// bundleCRDDocs returns the CRD documents among a bundle's objects by name,
// as JSON objects.
func bundleCRDDocs(b *catalog.Bundle) map[string]map[string]any {
	out := map[string]map[string]any{}
	objs, err := b.Objects()
	if err != nil {
		return out
	}
	for _, o := range objs {
		var doc map[string]any
		if json.Unmarshal(o, &doc) != nil || doc["kind"] != "CustomResourceDefinition" {
			continue
		}
		meta, _ := doc["metadata"].(map[string]any)
		if name, _ := meta["name"].(string); name != "" {
			out[name] = doc
		}
	}
	return out
}

func replayUpgrade(t *testing.T, dir, caseName, commit, pkg string, from, to *catalog.Bundle) []replayPair {
	oldDocs, newDocs := bundleCRDDocs(from), bundleCRDDocs(to)
	names := make([]string, 0, len(oldDocs))
	for n := range oldDocs {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []replayPair
	for i, name := range names {
		rp := replayPair{Case: caseName, Commit: commit, Package: pkg, From: from.Name, To: to.Name, CRD: name}
		od, nd := oldDocs[name], newDocs[name]
		oldCRDs := parseDoc(t, od)
		var newCRDs []*CRD
		if nd != nil {
			newCRDs = parseDoc(t, nd)
		}
		changes := Diff(oldCRDs, newCRDs, Options{})
		rp.Keys = keys(changes)
		rules := map[string]bool{}
		for _, c := range changes {
			if !rules[c.Rule] {
				rp.Sample = append(rp.Sample, string(c.Severity)+" "+c.Rule+": "+c.Message)
			}
			rules[c.Rule] = true
		}
		rp.Rules = sortedKeys(rules)
		if nd != nil {
			// As the preflight sees it: the old CRD from the cluster, whose
			// status lists the storage version.
			withStatus := map[string]any{}
			for k, v := range od {
				withStatus[k] = v
			}
			withStatus["status"] = map[string]any{"storedVersions": storageVersions(od)}
			rp.Dir = filepath.Join(dir, "pairs", fmt.Sprintf("%s-%s-%d", from.Name, to.Name, i))
			writeJSON(t, filepath.Join(rp.Dir, "old.json"), withStatus)
			writeJSON(t, filepath.Join(rp.Dir, "new.json"), nd)
		}
		out = append(out, rp)
	}
	return out
}

func parseDoc(t *testing.T, doc map[string]any) []*CRD {
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	crds, _, _ := ParseManifests("replay.json", data)
	return crds
}

func storageVersions(doc map[string]any) []string {
	out := []string{}
	spec, _ := doc["spec"].(map[string]any)
	vs, _ := spec["versions"].([]any)
	for _, v := range vs {
		m, _ := v.(map[string]any)
		if s, _ := m["storage"].(bool); s {
			name, _ := m["name"].(string)
			out = append(out, name)
		}
	}
	if len(vs) == 0 { // v1beta1 with spec.version
		if name, _ := spec["version"].(string); name != "" {
			out = append(out, name)
		}
	}
	return out
}

func writeJSON(t *testing.T, path string, v any) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// judgeReplay writes the replay table: per rule, how many upgrades and CRD
// pairs it flags and how many of those crdify (the preflight) refuses too.
func judgeReplay(t *testing.T, index, outFile string) {
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	var pairs []replayPair
	if err := json.Unmarshal(data, &pairs); err != nil {
		t.Fatal(err)
	}
	type tally struct {
		upgrades        map[string]bool
		pairs, refused  int
		samples         []string
		disagreeSamples []string
	}
	byRule := map[string]*tally{}
	upgrades := map[string]bool{}
	unsafeUs, unsafeThem := map[string]bool{}, map[string]bool{}
	compared, verdictAgree, keysAgree := 0, 0, 0
	var disagreements []string
	for _, p := range pairs {
		up := p.Package + " " + p.From + " → " + p.To
		upgrades[up] = true
		var theirs []string
		if p.Dir != "" {
			raw, err := os.ReadFile(filepath.Join(p.Dir, "crdify.json"))
			if err != nil {
				t.Fatalf("%s: %v (run crdify first)", p.Dir, err)
			}
			var r crdifyResults
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatalf("%s: %v", p.Dir, err)
			}
			theirs = crdifyKeys(r)
			compared++
			if (len(theirs) > 0) == (len(p.Keys) > 0) {
				verdictAgree++
			} else {
				disagreements = append(disagreements, fmt.Sprintf("%s, CRD %s: ours %v, crdify %v", up, p.CRD, p.Keys, theirs))
			}
			if strings.Join(theirs, ";") == strings.Join(p.Keys, ";") {
				keysAgree++
			}
			if len(theirs) > 0 {
				unsafeThem[up] = true
			}
		}
		if len(p.Keys) > 0 {
			unsafeUs[up] = true
		}
		for _, r := range p.Rules {
			tl := byRule[r]
			if tl == nil {
				tl = &tally{upgrades: map[string]bool{}}
				byRule[r] = tl
			}
			tl.upgrades[up] = true
			tl.pairs++
			if len(theirs) > 0 {
				tl.refused++
			}
			if len(tl.samples) < 2 {
				for _, s := range p.Sample {
					if strings.Contains(s, " "+r+": ") {
						tl.samples = append(tl.samples, fmt.Sprintf("`%s`: %s", up, s))
						break
					}
				}
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| rule | upgrades flagged | CRD pairs flagged | of those, refused by crdify too |\n|---|---|---|---|\n")
	rules := make([]string, 0, len(byRule))
	for r := range byRule {
		rules = append(rules, r)
	}
	sort.Strings(rules)
	for _, r := range rules {
		tl := byRule[r]
		fmt.Fprintf(&b, "| `%s` | %d | %d | %d |\n", r, len(tl.upgrades), tl.pairs, tl.refused)
	}
	fmt.Fprintf(&b, "\n%d upgrades, %d CRD pairs (%d present in both bundles and run through crdify). Unsafe upgrades: %d by us, %d by crdify. "+
		"Per CRD pair the verdict agrees with crdify on %d of %d, the findings (validation, version, path) on %d.\n",
		len(upgrades), len(pairs), compared, len(unsafeUs), len(unsafeThem), verdictAgree, compared, keysAgree)
	if len(disagreements) > 0 {
		b.WriteString("\nVerdicts that differ from crdify:\n\n")
		for _, d := range disagreements {
			b.WriteString("- " + d + "\n")
		}
	}
	b.WriteString("\nSample hits per rule:\n\n")
	for _, r := range rules {
		for _, s := range byRule[r].samples {
			b.WriteString("- " + strings.ReplaceAll(s, "|", `\|`) + "\n")
		}
	}
	if err := os.WriteFile(outFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
