package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/app"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/cli"
	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/catalogbot/catalogbot/internal/pkgtemplate"
	"github.com/catalogbot/catalogbot/policy"
	"github.com/catalogbot/catalogbot/registry"
)

// The demo's simulated GitHub installation.
const (
	demoAppID  = 1001
	demoInstID = 2002
	demoSecret = "demo-webhook-secret"
)

// runDemo shows the App at work without registering anything: the real
// server (SQLite queue, git cache, checks, reporter) runs against a local
// GitHub simulator, a local git server (git http-backend) and a local
// registry; a sample pull request is opened and the check runs GitHub would
// show are printed.
func demoCommand() cli.Command {
	var (
		verbose bool
		timeout time.Duration
	)
	return cli.Command{
		Use:   "demo",
		Short: "show the App at work on a sample pull request, against a local GitHub simulator",
		Long: `Runs the App against a local GitHub simulator, git server and registry, opens a sample
pull request on a sample catalog and prints the check runs and annotations GitHub would show.
Then it follows the bundle pull request past its merge: the bundle image is pushed, the catalog update
pull request is opened, checked and merged, and the catalog image that serves the bundle is pushed.
Needs the git binary (for git http-backend).`,
		Example: `  catalogbot demo
  catalogbot demo -v     # also each check run's markdown summary; the server's logs on stderr`,
		Args: cli.NoArgs,
		Flags: func(fs *pflag.FlagSet) {
			fs.BoolVarP(&verbose, "verbose", "v", false, "also print each check run's markdown summary and the server's logs")
			fs.DurationVar(&timeout, "timeout", 2*time.Minute, "give up after this long")
		},
		Run: func(ctx context.Context, _ []string, stdout, stderr io.Writer) int {
			return runDemo(ctx, verbose, timeout, stdout, stderr)
		},
	}
}

func runDemo(ctx context.Context, verbose bool, timeout time.Duration, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := demo(ctx, stdout, stderr, verbose); err != nil {
		fmt.Fprintf(stderr, "catalogbot demo: %v\n", err)
		return exitCannotRun
	}
	return exitOK
}

func demo(ctx context.Context, stdout, stderr io.Writer, verbose bool) error {
	dir, err := os.MkdirTemp("", "catalogbot-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// A registry with the bundle image the sample pull request references.
	reg := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	regHost := strings.TrimPrefix(reg.URL, "http://")
	bundleImage, err := pushRandom(ctx, regHost+"/acme/etcd-bundle:v1.1.0")
	if err != nil {
		return fmt.Errorf("local registry: %w", err)
	}
	oldImage, err := pushRandom(ctx, regHost+"/acme/etcd-bundle:v1.0.0")
	if err != nil {
		return fmt.Errorf("local registry: %w", err)
	}
	operandImage, err := pushRandom(ctx, regHost+"/acme/redis:7.2")
	if err != nil {
		return fmt.Errorf("local registry: %w", err)
	}
	// The base the catalog image is built on (opm's image, in a real deployment).
	baseImage, err := pushRandom(ctx, regHost+"/acme/opm:base")
	if err != nil {
		return fmt.Errorf("local registry: %w", err)
	}

	// A git server holding the catalog repository and the pull request's ref.
	gitSrv, gitRoot, err := startGitServer(dir)
	if err != nil {
		return err
	}
	defer gitSrv.Close()
	base, head, bundleHead, err := seedDemoRepo(ctx, dir, gitRoot, regHost, oldImage, bundleImage, operandImage)
	if err != nil {
		return err
	}

	// The GitHub simulator, knowing the App's public key.
	key, keyPEM, err := githubfake.GenerateAppKey()
	if err != nil {
		return err
	}
	fake := githubfake.New(githubfake.Options{AppID: demoAppID, PublicKey: &key.PublicKey})
	api := httptest.NewServer(fake)
	defer api.Close()
	fake.AddInstallation(demoInstID, "acme")
	if err := fake.AddRepo(githubfake.Repo{Owner: "acme", Name: "catalog", Installation: demoInstID, DefaultSHA: base,
		GitDir: filepath.Join(gitRoot, "acme", "catalog.git")}); err != nil {
		return err
	}
	if _, err := fake.AddPullRequest("acme", "catalog", githubfake.PR{Number: 1, Title: "etcd 1.1.0", Author: "bob", HeadRef: "etcd-1.1.0", HeadSHA: head, BaseRef: "main"}); err != nil {
		return err
	}
	if _, err := fake.AddPullRequest("acme", "catalog", githubfake.PR{Number: 2, Title: "redis 1.1.0", Author: "carol", HeadRef: "redis-1.1.0", HeadSHA: bundleHead, BaseRef: "main"}); err != nil {
		return err
	}

	// The real server, configured as `catalogbot serve` is: through the environment.
	keyFile := filepath.Join(dir, "app-key.pem")
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return err
	}
	env := map[string]string{
		app.EnvAppID: fmt.Sprint(demoAppID), app.EnvPrivateKeyFile: keyFile, app.EnvWebhookSecrets: demoSecret,
		app.EnvDataDir: filepath.Join(dir, "data"), app.EnvGitCacheDir: filepath.Join(dir, "git-cache"),
		app.EnvGitHubAPIURL: githubfake.APIURL(api.URL), app.EnvListen: "127.0.0.1:0", app.EnvWorkers: "2",
	}
	cfg, err := app.LoadConfig("", func(k string) string { return env[k] })
	if err != nil {
		return err
	}
	cfg.RebuildBaseImage = baseImage
	cfg.RegistryInternalHosts, cfg.RegistryInsecureHosts = []string{regHost}, []string{regHost}
	logOut := io.Discard
	if verbose {
		logOut = stderr
	}
	logger := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelInfo}))
	regClient, err := registry.New(registry.WithAllowedHosts(regHost), registry.WithInsecureHosts(regHost))
	if err != nil {
		return err
	}
	defer regClient.Close()
	srvCtx, stopSrv := context.WithCancel(ctx)
	defer stopSrv()
	srv, err := app.NewServer(srvCtx, cfg, logger, app.WithRebuild(), app.WithChecks(
		checks.Default(checks.Deps{Bundles: regClient, Images: regClient})...))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(srvCtx, ln) }()
	defer func() { stopSrv(); <-done }()
	fake.SetWebhook("http://"+ln.Addr().String()+"/webhook", demoSecret)

	out := &demoPrinter{w: stdout, verbose: verbose}
	fmt.Fprintf(stdout, "catalogbot demo: acme/catalog, pull request #1 by @bob adds etcd 1.1.0 (head %s)\n", head[:7])
	fmt.Fprintln(stdout, "  intended outcome: two checks fail, on purpose — the new CRD drops a field 1.0.0 has (crd-safety) and a related image")
	fmt.Fprintln(stdout, "  was never pushed (images) — so catalogbot must not merge it")
	fmt.Fprintln(stdout, "  GitHub simulator:", api.URL, "· git server:", gitSrv.URL, "· registry:", regHost, "· webhook:", ln.Addr())
	payload := map[string]any{
		"action": "opened", "number": 1, "installation": map[string]any{"id": demoInstID},
		"repository": map[string]any{"full_name": "acme/catalog", "name": "catalog", "owner": map[string]any{"login": "acme"},
			"clone_url": gitSrv.URL + "/acme/catalog.git", "default_branch": "main"},
		"pull_request": map[string]any{"number": 1, "state": "open", "draft": false,
			"head": map[string]any{"sha": head, "ref": "etcd-1.1.0"}, "base": map[string]any{"ref": "main", "sha": base},
			"user": map[string]any{"login": "bob"}},
		"sender": map[string]any{"login": "bob"},
	}
	d, err := fake.Deliver(ctx, "pull_request", payload)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  webhook pull_request.opened delivered: %d %s\n\n", d.StatusCode, d.Status)

	runs, err := waitCompleted(ctx, fake, head, 5)
	if err != nil {
		return err
	}
	out.runs(runs)
	if err := out.outcome(fake, 1, runs, "bob"); err != nil {
		return err
	}

	// The second pull request adds a bundle directory, as most pull requests to the community catalogs do.
	fmt.Fprintf(stdout, "\npull request #2 by @carol (a reviewer in operators/redis/ci.yaml) adds the bundle directory operators/redis/1.1.0 (head %s)\n", bundleHead[:7])
	fmt.Fprintln(stdout, "  intended outcome: every check passes and catalogbot merges it (carol owns redis through ci.yaml)")
	pr := payload["pull_request"].(map[string]any)
	payload["number"] = 2
	pr["number"], pr["user"] = 2, map[string]any{"login": "carol"}
	pr["head"] = map[string]any{"sha": bundleHead, "ref": "redis-1.1.0"}
	payload["sender"] = map[string]any{"login": "carol"}
	if d, err = fake.Deliver(ctx, "pull_request", payload); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  webhook pull_request.opened delivered: %d %s\n\n", d.StatusCode, d.Status)
	runs, err = waitCompleted(ctx, fake, bundleHead, 5)
	if err != nil {
		return err
	}
	out.runs(runs)
	return demoBundleToCatalog(ctx, out, fake, gitSrv.URL, gitRoot, bundleHead, base)
}

// demoBundleToCatalog follows the merged bundle pull request to the catalog image that serves it: the App
// merges #2 (carol owns redis), GitHub moves main; the App pushes the bundle's image, opens the catalog update
// pull request, checks and merges it, and rebuilds the catalog image.
func demoBundleToCatalog(ctx context.Context, out *demoPrinter, fake *githubfake.Fake, gitURL, gitRoot, bundleHead, base string) error {
	stdout := out.w
	if err := waitMerged(ctx, fake, 2); err != nil {
		return err
	}
	start := time.Now()
	bare := filepath.Join(gitRoot, "acme", "catalog.git")
	// GitHub's merge (a fast-forward here) moves main, and announces it with a push event.
	merge := func(from, to string) error {
		if _, err := git(ctx, bare, "update-ref", "refs/heads/main", to); err != nil {
			return err
		}
		if err := fake.SetBranch("acme", "catalog", "main", to); err != nil {
			return err
		}
		payload := map[string]any{"ref": "refs/heads/main", "before": from, "after": to, "installation": map[string]any{"id": demoInstID},
			"repository": map[string]any{"full_name": "acme/catalog", "name": "catalog", "owner": map[string]any{"login": "acme"},
				"clone_url": gitURL + "/acme/catalog.git", "default_branch": "main"},
			"pusher": map[string]any{"name": "catalogbot"}, "sender": map[string]any{"login": fake.BotLogin()}}
		_, err := fake.Deliver(ctx, "push", payload)
		return err
	}
	fmt.Fprintf(stdout, "\noutcome of #2, as intended: catalogbot merged it (its checks passed and carol owns redis); main moves to %s\n\n", bundleHead[:7])
	if err := merge(base, bundleHead); err != nil {
		return err
	}
	bundleRun, err := waitRun(ctx, fake, bundleHead, jobs.BundleImageCheckRunName)
	if err != nil {
		return err
	}
	out.commitRuns([]githubfake.CheckRun{bundleRun})
	var update githubfake.PR
	for n := 3; n < 10 && update.Number == 0; n++ {
		if p, ok := fake.PullRequest("acme", "catalog", n); ok && strings.HasPrefix(p.HeadRef, "catalogbot/catalog-update/") {
			update = p
		}
	}
	if update.Number == 0 {
		return fmt.Errorf("no catalog update pull request was opened:\n%s", bundleRun.Summary)
	}
	fmt.Fprintf(stdout, "\npull request #%d %q by @%s from %s (head %s)\n", update.Number, update.Title, update.Author, update.HeadRef, update.HeadSHA[:7])
	fmt.Fprintln(stdout, "  intended outcome: catalogbot opened it itself (the merged bundle, added to redis's template and rendered); it passes and merges without an owner")
	payload := map[string]any{
		"action": "opened", "number": update.Number, "installation": map[string]any{"id": demoInstID},
		"repository": map[string]any{"full_name": "acme/catalog", "name": "catalog", "owner": map[string]any{"login": "acme"},
			"clone_url": gitURL + "/acme/catalog.git", "default_branch": "main"},
		"pull_request": map[string]any{"number": update.Number, "state": "open", "draft": false,
			"head": map[string]any{"sha": update.HeadSHA, "ref": update.HeadRef}, "base": map[string]any{"ref": "main", "sha": bundleHead},
			"user": map[string]any{"login": update.Author}},
		"sender": map[string]any{"login": update.Author},
	}
	if _, err := fake.Deliver(ctx, "pull_request", payload); err != nil {
		return err
	}
	runs, err := waitCompleted(ctx, fake, update.HeadSHA, 5)
	if err != nil {
		return err
	}
	out.runs(runs)
	if err := waitMerged(ctx, fake, update.Number); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\noutcome of #%d, as intended: catalogbot merged it (derived from the merged bundle); main moves to %s\n\n", update.Number, update.HeadSHA[:7])
	if err := merge(bundleHead, update.HeadSHA); err != nil {
		return err
	}
	imageRun, err := waitRun(ctx, fake, update.HeadSHA, jobs.RebuildCheckRunName)
	if err != nil {
		return err
	}
	out.commitRuns([]githubfake.CheckRun{imageRun})
	fmt.Fprintf(stdout, "\nfrom the merge of the bundle pull request to the catalog image that serves it: %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

func waitMerged(ctx context.Context, fake *githubfake.Fake, number int) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if p, ok := fake.PullRequest("acme", "catalog", number); ok && p.Merged {
			return nil
		}
		select {
		case <-ctx.Done():
			p, _ := fake.PullRequest("acme", "catalog", number)
			return fmt.Errorf("pull request #%d was not merged (%+v): %w", number, p, ctx.Err())
		case <-tick.C:
		}
	}
}

func waitRun(ctx context.Context, fake *githubfake.Fake, sha, name string) (githubfake.CheckRun, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, r := range fake.CheckRuns("acme", "catalog", sha) {
			if r.Name == name && r.Status == "completed" {
				return r, nil
			}
		}
		select {
		case <-ctx.Done():
			return githubfake.CheckRun{}, fmt.Errorf("no completed %s run on %s: %w", name, sha[:7], ctx.Err())
		case <-tick.C:
		}
	}
}

func pushRandom(ctx context.Context, ref string) (string, error) {
	img, err := random.Image(256, 1)
	if err != nil {
		return "", err
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return "", err
	}
	if err := remote.Write(r, img, remote.WithContext(ctx)); err != nil {
		return "", err
	}
	dg, err := img.Digest()
	if err != nil {
		return "", err
	}
	return r.Context().String() + "@" + dg.String(), nil
}

// startGitServer serves the bare repositories under dir/git over smart HTTP
// with git http-backend.
func startGitServer(dir string) (*httptest.Server, string, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return nil, "", fmt.Errorf("the demo needs the git binary: %w", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		return nil, "", fmt.Errorf("git http-backend not found: %w", err)
	}
	root := filepath.Join(dir, "git")
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	return httptest.NewServer(h), root, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=demo", "GIT_AUTHOR_EMAIL=demo@example.com", "GIT_COMMITTER_NAME=demo",
		"GIT_COMMITTER_EMAIL=demo@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// seedDemoRepo commits the sample catalog to main and the pull request to
// refs/pull/1/head of acme/catalog.git, and returns both commits.
func seedDemoRepo(ctx context.Context, dir, gitRoot, regHost, oldImage, newImage, operandImage string) (base, head, bundleHead string, err error) {
	bare := filepath.Join(gitRoot, "acme", "catalog.git")
	work := filepath.Join(dir, "work")
	for _, d := range []string{bare, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", "", "", err
		}
	}
	if _, err := git(ctx, bare, "init", "-q", "--bare"); err != nil {
		return "", "", "", err
	}
	write := func(rel, body string) error {
		p := filepath.Join(work, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(body), 0o644)
	}
	steps := []func() error{
		func() error { _, err := git(ctx, work, "init", "-q", "-b", "main"); return err },
		func() error {
			return write(".catalogbot.yaml", fmt.Sprintf(`version: 1
catalogs:
  - path: catalogs/v4.16
    image: %s/acme/catalog:v4.16
maintainers: [alice]
bundles:
  - path: operators
    ownersFromCIYaml: true
    image: %s/acme/{package}-bundle:v{version}
templates:
  - path: operators/redis/catalog-templates/basic.yaml
    catalogs: [catalogs/v4.16/redis/catalog.yaml]
packages:
  etcd: { owners: [bob] }
images: { allowedRegistries: [%q], requireDigest: true }
automerge: { enabled: true }
`, regHost, regHost, regHost+"/acme/"))
		},
		func() error { return write("operators/redis/ci.yaml", "reviewers: [carol]\n") },
		func() error { return writeDemoBundle(write, "1.0.0", operandImage) },
		func() error { return writeDemoTemplate(ctx, work, write, regHost) },
		func() error {
			return write("catalogs/v4.16/etcd/catalog.yaml", demoPackage("1.0.0")+demoBundle("1.0.0", oldImage, "", "size", "version"))
		},
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return "", "", "", err
		}
	}
	commit := func(msg, ref string) (string, error) {
		if _, err := git(ctx, work, "add", "-A"); err != nil {
			return "", err
		}
		if _, err := git(ctx, work, "commit", "-q", "-m", msg); err != nil {
			return "", err
		}
		if _, err := git(ctx, work, "push", "-q", bare, "HEAD:"+ref); err != nil {
			return "", err
		}
		return git(ctx, work, "rev-parse", "HEAD")
	}
	if base, err = commit("etcd 1.0.0, redis 1.0.0", "refs/heads/main"); err != nil {
		return "", "", "", err
	}
	// The pull request: etcd 1.1.0 drops the "version" field of its CRD and
	// names a related image that was never pushed.
	missing := regHost + "/acme/etcd-operator@sha256:" + strings.Repeat("0", 64)
	if err := write("catalogs/v4.16/etcd/catalog.yaml", demoPackage("1.0.0", "1.1.0")+
		demoBundle("1.0.0", oldImage, "", "size", "version")+demoBundle("1.1.0", newImage, missing, "size")); err != nil {
		return "", "", "", err
	}
	if head, err = commit("etcd 1.1.0", "refs/pull/1/head"); err != nil {
		return "", "", "", err
	}
	// The second pull request, on main: carol, a reviewer in operators/redis/ci.yaml, adds the bundle
	// directory operators/redis/1.1.0.
	if _, err := git(ctx, work, "checkout", "-q", "-b", "redis-1.1.0", base); err != nil {
		return "", "", "", err
	}
	if err := writeDemoBundle(write, "1.1.0", operandImage); err != nil {
		return "", "", "", err
	}
	bundleHead, err = commit("redis 1.1.0", "refs/pull/2/head")
	return base, head, bundleHead, err
}

// writeDemoBundle writes the bundle directory operators/redis/<version>: a CSV (replacing the previous
// version) whose operand image is operandImage, and a CRD.
func writeDemoBundle(write func(rel, body string) error, version, operandImage string) error {
	dir := "operators/redis/" + version + "/"
	replaces := ""
	if version != "1.0.0" {
		replaces = "  replaces: redis-operator.v1.0.0\n"
	}
	files := map[string]string{
		dir + "metadata/annotations.yaml": "annotations:\n" +
			"  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n" +
			"  operators.operatorframework.io.bundle.manifests.v1: manifests/\n" +
			"  operators.operatorframework.io.bundle.metadata.v1: metadata/\n" +
			"  operators.operatorframework.io.bundle.package.v1: redis\n" +
			"  operators.operatorframework.io.bundle.channels.v1: stable\n",
		dir + "manifests/redis-operator.clusterserviceversion.yaml": "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\n" +
			"metadata:\n  name: redis-operator.v" + version + "\nspec:\n  version: " + version + "\n" + replaces +
			"  minKubeVersion: 1.25.0\n  installModes: [{type: AllNamespaces, supported: true}]\n" +
			"  customresourcedefinitions:\n    owned:\n      - name: redises.cache.example.com\n        version: v1\n        kind: Redis\n" +
			"  relatedImages:\n    - name: redis\n      image: " + operandImage + "\n",
		dir + "manifests/redises.cache.example.com.crd.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n" +
			"metadata:\n  name: redises.cache.example.com\nspec:\n  group: cache.example.com\n" +
			"  names: {kind: Redis, listKind: RedisList, plural: redises, singular: redis}\n  scope: Namespaced\n" +
			"  versions:\n    - name: v1\n      served: true\n      storage: true\n" +
			"      schema:\n        openAPIV3Schema:\n          type: object\n          properties:\n            spec: {type: object, properties: {replicas: {type: integer}}}\n",
	}
	for name, body := range files {
		if err := write(name, body); err != nil {
			return err
		}
	}
	return nil
}

func demoPackage(versions ...string) string {
	var b strings.Builder
	b.WriteString("---\nschema: olm.package\nname: etcd\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n")
	for i, v := range versions {
		fmt.Fprintf(&b, "  - name: etcd.v%s\n", v)
		if i > 0 {
			fmt.Fprintf(&b, "    replaces: etcd.v%s\n", versions[i-1])
		}
	}
	return b.String()
}

func demoBundle(version, image, related string, fields ...string) string {
	var props strings.Builder
	for _, f := range fields {
		fmt.Fprintf(&props, "                %s: {type: string}\n", f)
	}
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: etcdclusters.etcd.example.com}
spec:
  group: etcd.example.com
  names: {kind: EtcdCluster, plural: etcdclusters}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
` + props.String()
	rel := ""
	if related != "" {
		rel = fmt.Sprintf("relatedImages:\n  - name: operator\n    image: %s\n", related)
	}
	return fmt.Sprintf(`---
schema: olm.bundle
package: etcd
name: etcd.v%[1]s
image: %[2]s
properties:
  - type: olm.package
    value: {packageName: etcd, version: %[1]s}
  - type: olm.bundle.object
    value: {data: %[3]s}
%[4]s`, version, image, base64.StdEncoding.EncodeToString([]byte(crd)), rel)
}

func waitCompleted(ctx context.Context, fake *githubfake.Fake, sha string, want int) ([]githubfake.CheckRun, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		runs := fake.CheckRuns("acme", "catalog", sha)
		done := 0
		for _, r := range runs {
			if r.Status == "completed" {
				done++
			}
		}
		if done >= want {
			return runs, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d check runs completed before the time ran out", done, want)
		case <-tick.C:
		}
	}
}

// demoPrinter prints check runs as GitHub would show them; with verbose, their markdown summaries too, the
// comment commands' table (the same at the end of every pull request run) only the first time.
type demoPrinter struct {
	w           io.Writer
	verbose     bool
	footerShown bool
}

// commandsFooterStart begins the comment commands' table that closes every pull request run's summary.
const commandsFooterStart = "\n\n---\n<details><summary>Comment commands"

func (p *demoPrinter) summary(s string) {
	if !p.verbose {
		return
	}
	if i := strings.Index(s, commandsFooterStart); i >= 0 {
		if p.footerShown {
			s = s[:i] + "\n\n(the comment commands, as under the first run above)"
		}
		p.footerShown = true
	}
	fmt.Fprintf(p.w, "\n%s\n\n", s)
}

// commitRuns shows the runs on a default branch commit.
func (p *demoPrinter) commitRuns(runs []githubfake.CheckRun) {
	for _, r := range runs {
		fmt.Fprintf(p.w, "%-24s %-8s %s (on the commit)\n", r.Name, r.Conclusion, r.Title)
		p.summary(r.Summary)
	}
}

func (p *demoPrinter) runs(runs []githubfake.CheckRun) {
	sort.Slice(runs, func(i, j int) bool { return runs[i].Name < runs[j].Name })
	for _, r := range runs {
		fmt.Fprintf(p.w, "%-24s %-8s %s\n", r.Name, r.Conclusion, r.Title)
		for _, a := range r.Annotations {
			fmt.Fprintf(p.w, "    %s:%d  %s  %s\n", a.Path, a.StartLine, a.Level, firstLine(a.Message))
		}
		p.summary(r.Summary)
	}
	if !p.verbose {
		fmt.Fprintln(p.w, "\nThese are the check runs GitHub would show on the pull request; -v prints their summaries.")
	}
}

// outcome says what became of a pull request whose checks failed on purpose: not merged, because of which
// runs, and what the author does next. A merge would be a bug of the demo's App, so it is an error.
func (p *demoPrinter) outcome(fake *githubfake.Fake, number int, runs []githubfake.CheckRun, author string) error {
	pr, ok := fake.PullRequest("acme", "catalog", number)
	if !ok {
		return fmt.Errorf("pull request #%d is gone", number)
	}
	var failed []string
	for _, r := range runs {
		if r.Conclusion == "failure" || r.Conclusion == "action_required" {
			failed = append(failed, r.Name)
		}
	}
	if pr.Merged {
		return fmt.Errorf("pull request #%d was merged although %s failed", number, strings.Join(failed, " and "))
	}
	fmt.Fprintf(p.w, "\noutcome of #%d, as intended: not merged — %s failed, and catalogbot merges only a pull request whose checks all pass; "+
		"it stays open until @%s pushes a fix, which is checked again\n", number, strings.Join(failed, " and "), author)
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// writeDemoTemplate writes redis's basic template, naming the image of operators/redis/1.0.0 by its digest,
// and the catalog it renders to.
func writeDemoTemplate(ctx context.Context, work string, write func(rel, body string) error, regHost string) error {
	digest, err := template.BundleImageDigest(ctx, os.DirFS(filepath.Join(work, "operators", "redis", "1.0.0")))
	if err != nil {
		return err
	}
	const tmplPath = "operators/redis/catalog-templates/basic.yaml"
	tmpl := "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: redis\n    defaultChannel: stable\n" +
		"  - schema: olm.channel\n    package: redis\n    name: stable\n    entries:\n      - name: redis-operator.v1.0.0\n" +
		"  - schema: olm.bundle\n    image: " + regHost + "/acme/redis-bundle@" + digest + "\n"
	if err := write(tmplPath, tmpl); err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(work, policy.FileName))
	if err != nil {
		return err
	}
	pol, err := policy.Parse(policy.FileName, raw)
	if err != nil {
		return err
	}
	pts, err := pkgtemplate.List(os.DirFS(work), pol, "redis")
	if err != nil || len(pts) != 1 {
		return fmt.Errorf("the demo's redis template: %v", err)
	}
	out, findings := pkgtemplate.Render(ctx, os.DirFS(work), pol, pts[0], "redis", []byte(tmpl), catalog.Limits{})
	if out == nil {
		return fmt.Errorf("rendering the demo's redis template: %v", findings)
	}
	for p, data := range out {
		if err := write(p, string(data)); err != nil {
			return err
		}
	}
	return nil
}
