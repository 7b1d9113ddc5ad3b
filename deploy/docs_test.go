package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app"
)

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// firstYAMLBlock returns the first ```yaml fenced block of a markdown text.
func firstYAMLBlock(t *testing.T, md string) string {
	t.Helper()
	_, rest, ok := strings.Cut(md, "```yaml\n")
	if !ok {
		t.Fatal("no ```yaml block")
	}
	block, _, ok := strings.Cut(rest, "\n```")
	if !ok {
		t.Fatal("unterminated ```yaml block")
	}
	return block + "\n"
}

// TestConfigurationExampleLoads loads the documented example with the
// server's loader, the credential files it names placed in a temporary directory.
func TestConfigurationExampleLoads(t *testing.T) {
	example := firstYAMLBlock(t, readDoc(t, "configuration.md"))
	dir := t.TempDir()
	keyPath := writeTestKey(t, dir)
	secretsPath := filepath.Join(dir, "webhook-secrets")
	if err := os.WriteFile(secretsPath, []byte("old-secret\nnew-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	example = strings.ReplaceAll(example, "/etc/catalogbot/github/private-key.pem", keyPath)
	example = strings.ReplaceAll(example, "/etc/catalogbot/github/webhook-secrets", secretsPath)
	cfgPath := filepath.Join(dir, "catalogbot.yaml")
	if err := os.WriteFile(cfgPath, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := app.LoadConfig(cfgPath, func(string) string { return "" })
	if err != nil {
		t.Fatalf("LoadConfig(documented example) = %v", err)
	}
	if got, want := cfg.AppID, int64(123456); got != want {
		t.Errorf("AppID = %d, want %d", got, want)
	}
	if got, want := len(cfg.WebhookSecrets), 2; got != want {
		t.Errorf("got %d webhook secrets, want %d", got, want)
	}
	if got, want := cfg.RescueAfter, 7*time.Minute; got != want {
		t.Errorf("RescueAfter = %s, want %s", got, want)
	}
	if got, want := cfg.RegistryInternalHosts, []string{"registry.internal.example.com"}; !reflect.DeepEqual(got, want) {
		t.Errorf("RegistryInternalHosts = %v, want %v", got, want)
	}

	// The defaults the page states are the loader's.
	env := map[string]string{app.EnvAppID: "1", app.EnvWebhookSecrets: "s", app.EnvPrivateKeyFile: keyPath}
	def, err := app.LoadConfig("", func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("LoadConfig(environment only) = %v", err)
	}
	for _, d := range []struct {
		key  string
		got  any
		want any
	}{
		{"data_dir", def.DataDir, "data"}, {"git_cache_dir", def.GitCacheDir, filepath.Join("data", "git")},
		{"listen", def.Listen, ":8080"}, {"workers", def.Workers, 4},
		{"job_timeout", def.JobTimeout, 5 * time.Minute}, {"rescue_stuck_jobs_after", def.RescueAfter, 7 * time.Minute},
		{"check_timeout", def.CheckTimeout, 2 * time.Minute}, {"fetch_timeout", def.FetchTimeout, 2 * time.Minute},
		{"resync_interval", def.ResyncInterval, 15 * time.Minute}, {"redeliver_interval", def.RedeliverInterval, 10 * time.Minute},
		{"redeliver_window", def.RedeliverWindow, 24 * time.Hour}, {"shutdown_timeout", def.ShutdownTimeout, 30 * time.Second},
	} {
		if d.got != d.want {
			t.Errorf("default %s = %v, but docs/configuration.md says %v", d.key, d.got, d.want)
		}
	}
}

// TestConfigurationDocumentsEveryKey reads the loader's source for the file's
// keys (the json tags of fileConfig) and the environment variables (the Env
// constants), and wants each on the page.
func TestConfigurationDocumentsEveryKey(t *testing.T) {
	doc := readDoc(t, "configuration.md")
	keys, envs := configSourceNames(t)
	if len(keys) < 10 || len(envs) < 5 {
		t.Fatalf("found %d keys and %d variables in app/config.go; has the loader moved?", len(keys), len(envs))
	}
	for _, k := range keys {
		if !strings.Contains(doc, "| `"+k+"` |") {
			t.Errorf("key %s has no row in docs/configuration.md", k)
		}
	}
	for _, e := range envs {
		if !strings.Contains(doc, "| `"+e+"` |") {
			t.Errorf("environment variable %s has no row in docs/configuration.md", e)
		}
	}
}

func configSourceNames(t *testing.T) (keys, envs []string) {
	t.Helper()
	src := filepath.Join("..", "app", "config.go")
	f, err := parser.ParseFile(token.NewFileSet(), src, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var fields func(prefix string, st *ast.StructType)
	fields = func(prefix string, st *ast.StructType) {
		for _, fld := range st.Fields.List {
			if fld.Tag == nil {
				continue
			}
			tag, _ := strconv.Unquote(fld.Tag.Value)
			name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if inner, ok := fld.Type.(*ast.StructType); ok {
				fields(prefix+name+".", inner)
				continue
			}
			keys = append(keys, prefix+name)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.TypeSpec:
			if st, ok := n.Type.(*ast.StructType); ok && n.Name.Name == "fileConfig" {
				fields("", st)
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if strings.HasPrefix(id.Name, "Env") && i < len(n.Values) {
					if lit, ok := n.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						envs = append(envs, v)
					}
				}
			}
		}
		return true
	})
	return keys, envs
}

// TestSetupGuideMatchesTheDeployment wants the Secrets and keys the rendered
// Deployments read to be the ones the setup guide tells people to create,
// and every relative link of the operator docs to lead to a file.
func TestSetupGuideMatchesTheDeployment(t *testing.T) {
	setup := readDoc(t, "setup.md")
	for _, overlay := range []string{"overlays/single", "overlays/ha"} {
		objs, _ := render(t, overlay)
		d := deployment(t, objs)
		for _, e := range d.Template.Spec.Containers[0].Env {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				continue
			}
			ref := e.ValueFrom.SecretKeyRef
			if !strings.Contains(setup, "create secret generic "+ref.Name) {
				t.Errorf("%s reads Secret %s, which docs/setup.md does not create", overlay, ref.Name)
			}
			if !strings.Contains(setup, ref.Key+"=") {
				t.Errorf("%s reads key %s of Secret %s, which docs/setup.md does not set", overlay, ref.Key, ref.Name)
			}
		}
		for _, v := range d.Template.Spec.Volumes {
			if v.Secret != nil && !strings.Contains(setup, "create secret generic "+v.Secret.SecretName) {
				t.Errorf("%s mounts Secret %s, which docs/setup.md does not create", overlay, v.Secret.SecretName)
			}
		}
	}
	if !strings.Contains(setup, "--from-file=private-key.pem=") {
		t.Errorf("docs/setup.md does not put private-key.pem in the Secret the Deployment mounts")
	}

	link := regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
	for _, doc := range []string{"setup.md", "configuration.md"} {
		for _, m := range link.FindAllStringSubmatch(readDoc(t, doc), -1) {
			target := filepath.Join("..", "docs", filepath.FromSlash(m[1]))
			if _, err := os.Stat(target); err != nil {
				t.Errorf("docs/%s links to %s, which does not exist", doc, m[1])
			}
		}
	}
}
