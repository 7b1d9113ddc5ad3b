package deploy

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/catalogbot/catalogbot/app"
)

// object is the part of a rendered Kubernetes object the tests look at.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
	Spec json.RawMessage   `json:"spec"`
	// raw is the whole object, for checks that search it.
	raw []byte
}

type deploymentSpec struct {
	Replicas *int `json:"replicas"`
	Strategy struct {
		Type string `json:"type"`
	} `json:"strategy"`
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	Template struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec podSpec `json:"spec"`
	} `json:"template"`
}

type podSpec struct {
	ServiceAccountName           string `json:"serviceAccountName"`
	AutomountServiceAccountToken *bool  `json:"automountServiceAccountToken"`
	SecurityContext              struct {
		RunAsNonRoot   *bool  `json:"runAsNonRoot"`
		RunAsUser      *int64 `json:"runAsUser"`
		SeccompProfile struct {
			Type string `json:"type"`
		} `json:"seccompProfile"`
	} `json:"securityContext"`
	Affinity *struct {
		PodAntiAffinity *struct {
			Preferred []json.RawMessage `json:"preferredDuringSchedulingIgnoredDuringExecution"`
		} `json:"podAntiAffinity"`
	} `json:"affinity"`
	Containers []container `json:"containers"`
	Volumes    []volume    `json:"volumes"`
}

type container struct {
	Name  string   `json:"name"`
	Image string   `json:"image"`
	Args  []string `json:"args"`
	Env   []struct {
		Name      string `json:"name"`
		Value     string `json:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `json:"name"`
				Key  string `json:"key"`
			} `json:"secretKeyRef"`
		} `json:"valueFrom"`
	} `json:"env"`
	Ports []struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
	} `json:"ports"`
	LivenessProbe  *probe `json:"livenessProbe"`
	ReadinessProbe *probe `json:"readinessProbe"`
	StartupProbe   *probe `json:"startupProbe"`
	Resources      struct {
		Requests map[string]string `json:"requests"`
		Limits   map[string]string `json:"limits"`
	} `json:"resources"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `json:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `json:"drop"`
		} `json:"capabilities"`
	} `json:"securityContext"`
	VolumeMounts []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
		ReadOnly  bool   `json:"readOnly"`
	} `json:"volumeMounts"`
}

type probe struct {
	HTTPGet struct {
		Path string `json:"path"`
		Port any    `json:"port"`
	} `json:"httpGet"`
}

type volume struct {
	Name      string          `json:"name"`
	EmptyDir  json.RawMessage `json:"emptyDir"`
	ConfigMap *struct {
		Name string `json:"name"`
	} `json:"configMap"`
	Secret *struct {
		SecretName string `json:"secretName"`
	} `json:"secret"`
	PersistentVolumeClaim *struct {
		ClaimName string `json:"claimName"`
	} `json:"persistentVolumeClaim"`
}

// deployFS copies the kustomize trees into an in-memory file system, so the
// render reads exactly the files in the repository and nothing else.
func deployFS(t *testing.T) filesys.FileSystem {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	for _, dir := range []string{"base", "overlays"} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return mem.WriteFile(path.Join("/deploy", filepath.ToSlash(p)), b)
		})
		if err != nil {
			t.Fatalf("copying %s: %v", dir, err)
		}
	}
	return mem
}

// render runs kustomize (the version kubectl 1.32 embeds) on one directory.
func render(t *testing.T, dir string) ([]object, []byte) {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy // the order kubectl kustomize prints
	k := krusty.MakeKustomizer(opts)
	m, err := k.Run(deployFS(t), path.Join("/deploy", dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	all, err := m.AsYaml()
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var objs []object
	for _, r := range m.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		var o object
		if err := yaml.Unmarshal(b, &o); err != nil {
			t.Fatalf("%s: rendered object does not parse: %v", dir, err)
		}
		o.raw = b
		objs = append(objs, o)
	}
	return objs, all
}

// find returns the objects of a kind with a name; a generated ConfigMap
// matches by its name before the content hash.
func find(objs []object, kind, name string) []object {
	var out []object
	for _, o := range objs {
		n := o.Metadata.Name
		if kind == "ConfigMap" && strings.HasPrefix(n, name+"-") {
			n = name
		}
		if o.Kind == kind && (name == "" || n == name) {
			out = append(out, o)
		}
	}
	return out
}

func one(t *testing.T, objs []object, kind, name string) object {
	t.Helper()
	got := find(objs, kind, name)
	if len(got) != 1 {
		t.Fatalf("found %d %s named %s*, want 1", len(got), kind, name)
	}
	return got[0]
}

func deployment(t *testing.T, objs []object) deploymentSpec {
	t.Helper()
	var d deploymentSpec
	if err := json.Unmarshal(one(t, objs, "Deployment", "catalogbot").Spec, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Template.Spec.Containers) != 1 {
		t.Fatalf("got %d containers, want 1", len(d.Template.Spec.Containers))
	}
	return d
}

func TestKustomizationsUseNoDeprecatedFields(t *testing.T) {
	for _, dir := range []string{"base", "overlays/single", "overlays/ha"} {
		b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var k types.Kustomization
		if err := k.Unmarshal(b); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if w := k.CheckDeprecatedFields(); w != nil && len(*w) > 0 {
			t.Errorf("%s uses deprecated kustomize fields (kubectl would warn): %v", dir, *w)
		}
		if errs := k.EnforceFields(); len(errs) > 0 {
			t.Errorf("%s: %v", dir, errs)
		}
	}
}

func TestOverlaysRender(t *testing.T) {
	common := []string{"ConfigMap/catalogbot-config", "Deployment/catalogbot", "NetworkPolicy/catalogbot", "Service/catalogbot", "Service/catalogbot-metrics", "ServiceAccount/catalogbot"}
	tests := []struct {
		dir          string
		extra        []string
		replicas     int
		strategy     string
		dataVolume   string // "pvc" or "emptyDir"
		databaseURL  bool
		antiAffinity bool
	}{
		{dir: "overlays/single", extra: []string{"PersistentVolumeClaim/catalogbot-data"}, replicas: 1, strategy: "Recreate", dataVolume: "pvc"},
		{dir: "overlays/ha", extra: []string{"PodDisruptionBudget/catalogbot"}, replicas: 3, strategy: "RollingUpdate", dataVolume: "emptyDir", databaseURL: true, antiAffinity: true},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			objs, _ := render(t, tc.dir)

			var got []string
			for _, o := range objs {
				name := o.Metadata.Name
				if o.Kind == "ConfigMap" {
					name = strings.TrimRight(strings.TrimSuffix(name, name[strings.LastIndex(name, "-"):]), "-")
				}
				got = append(got, o.Kind+"/"+name)
				if o.Kind == "Secret" {
					t.Errorf("a Secret is rendered (%s): credentials are never committed", o.Metadata.Name)
				}
			}
			want := append(append([]string(nil), common...), tc.extra...)
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("rendered objects:\n got %v\nwant %v", got, want)
			}

			d := deployment(t, objs)
			if d.Replicas == nil || *d.Replicas != tc.replicas {
				t.Errorf("replicas = %v, want %d", d.Replicas, tc.replicas)
			}
			if d.Strategy.Type != tc.strategy {
				t.Errorf("strategy = %q, want %q", d.Strategy.Type, tc.strategy)
			}
			for k, v := range d.Selector.MatchLabels {
				if d.Template.Metadata.Labels[k] != v {
					t.Errorf("selector %s=%s does not match the pod labels %v", k, v, d.Template.Metadata.Labels)
				}
			}
			c := d.Template.Spec.Containers[0]
			checkProbes(t, c)
			checkSecurity(t, d.Template.Spec, c)
			checkVolumes(t, objs, d.Template.Spec, c, tc.dataVolume)

			env := envSources(c)
			for _, name := range []string{app.EnvAppID, app.EnvWebhookSecrets} {
				if got, want := env[name], "secret catalogbot-github-app"; !strings.HasPrefix(got, want) {
					t.Errorf("env %s comes from %q, want %s", name, got, want)
				}
			}
			if got, want := env[app.EnvPrivateKeyFile], "value /etc/catalogbot/github/private-key.pem"; got != want {
				t.Errorf("env %s = %q, want %q", app.EnvPrivateKeyFile, got, want)
			}
			gotDB, hasDB := env[app.EnvDatabaseURL]
			if hasDB != tc.databaseURL {
				t.Errorf("env %s set = %v, want %v", app.EnvDatabaseURL, hasDB, tc.databaseURL)
			}
			if hasDB && gotDB != "secret catalogbot-database/url" {
				t.Errorf("env %s comes from %q, want the Secret catalogbot-database key url", app.EnvDatabaseURL, gotDB)
			}

			hasAnti := d.Template.Spec.Affinity != nil && d.Template.Spec.Affinity.PodAntiAffinity != nil &&
				len(d.Template.Spec.Affinity.PodAntiAffinity.Preferred) > 0
			if hasAnti != tc.antiAffinity {
				t.Errorf("pod anti-affinity = %v, want %v", hasAnti, tc.antiAffinity)
			}

			pdbs := find(objs, "PodDisruptionBudget", "")
			if tc.dir == "overlays/ha" {
				var pdb struct {
					MinAvailable int `json:"minAvailable"`
					Selector     struct {
						MatchLabels map[string]string `json:"matchLabels"`
					} `json:"selector"`
				}
				if err := json.Unmarshal(pdbs[0].Spec, &pdb); err != nil {
					t.Fatal(err)
				}
				if pdb.MinAvailable != 1 {
					t.Errorf("PDB minAvailable = %d, want 1", pdb.MinAvailable)
				}
				checkSelects(t, "PodDisruptionBudget", pdb.Selector.MatchLabels, d.Template.Metadata.Labels)
			}

			checkServices(t, objs, d, c)
		})
	}
}

func envSources(c container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			out[e.Name] = "secret " + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		default:
			out[e.Name] = "value " + e.Value
		}
	}
	return out
}

func checkProbes(t *testing.T, c container) {
	t.Helper()
	for _, p := range []struct {
		name string
		p    *probe
		path string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}, {"startup", c.StartupProbe, "/healthz"}} {
		if p.p == nil {
			t.Errorf("no %s probe", p.name)
			continue
		}
		if p.p.HTTPGet.Path != p.path || p.p.HTTPGet.Port != "http" {
			t.Errorf("%s probe = GET %s on port %v, want GET %s on port http", p.name, p.p.HTTPGet.Path, p.p.HTTPGet.Port, p.path)
		}
	}
	for _, r := range []string{"cpu", "memory"} {
		if c.Resources.Requests[r] == "" || c.Resources.Limits[r] == "" {
			t.Errorf("resources for %s: requests %q, limits %q; want both", r, c.Resources.Requests[r], c.Resources.Limits[r])
		}
	}
}

func checkSecurity(t *testing.T, pod podSpec, c container) {
	t.Helper()
	sc := pod.SecurityContext
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("pod securityContext runAsNonRoot=%v runAsUser=%v, want true and a non-zero user", sc.RunAsNonRoot, sc.RunAsUser)
	}
	if sc.SeccompProfile.Type != "RuntimeDefault" {
		t.Errorf("seccompProfile = %q, want RuntimeDefault", sc.SeccompProfile.Type)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken = %v, want false (catalogbot never calls the Kubernetes API)", pod.AutomountServiceAccountToken)
	}
	csc := c.SecurityContext
	if csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
		t.Errorf("readOnlyRootFilesystem = %v, want true", csc.ReadOnlyRootFilesystem)
	}
	if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		t.Errorf("allowPrivilegeEscalation = %v, want false", csc.AllowPrivilegeEscalation)
	}
	if len(csc.Capabilities.Drop) != 1 || csc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("capabilities.drop = %v, want [ALL]", csc.Capabilities.Drop)
	}
}

// checkVolumes checks every mount has its volume, the config map is the
// generated one, and the directories the config file names for data and the
// git cache are writable mounts (the root file system is read-only).
func checkVolumes(t *testing.T, objs []object, pod podSpec, c container, dataKind string) {
	t.Helper()
	vols := map[string]volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	writable := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if _, ok := vols[m.Name]; !ok {
			t.Errorf("mount %s at %s has no volume", m.Name, m.MountPath)
		}
		if !m.ReadOnly {
			writable[m.MountPath] = true
		}
	}
	cm := one(t, objs, "ConfigMap", "catalogbot-config")
	if v := vols["config"]; v.ConfigMap == nil || v.ConfigMap.Name != cm.Metadata.Name {
		t.Errorf("config volume does not name the generated ConfigMap %s", cm.Metadata.Name)
	}
	data := vols["data"]
	switch dataKind {
	case "pvc":
		if data.PersistentVolumeClaim == nil || data.EmptyDir != nil {
			t.Errorf("data volume: pvc=%v emptyDir=%s, want only the PersistentVolumeClaim", data.PersistentVolumeClaim, data.EmptyDir)
		} else {
			one(t, objs, "PersistentVolumeClaim", data.PersistentVolumeClaim.ClaimName)
		}
	case "emptyDir":
		if data.EmptyDir == nil || data.PersistentVolumeClaim != nil {
			t.Errorf("data volume: want an emptyDir only, got %+v", data)
		}
	}
	if vols["git-cache"].EmptyDir == nil {
		t.Errorf("git-cache volume is not an emptyDir")
	}

	var fc struct {
		DataDir     string `json:"data_dir"`
		GitCacheDir string `json:"git_cache_dir"`
		Listen      string `json:"listen"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &fc); err != nil {
		t.Fatalf("config.yaml in the ConfigMap: %v", err)
	}
	for _, dir := range []string{fc.DataDir, fc.GitCacheDir, "/tmp"} {
		ok := false
		for mp := range writable {
			if dir == mp || strings.HasPrefix(dir, mp+"/") {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s is not on a writable volume; the root file system is read-only", dir)
		}
	}
	if len(c.Args) != 3 || c.Args[0] != "serve" || c.Args[1] != "--config" {
		t.Fatalf("args = %q, want serve --config FILE", c.Args)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		if m.Name == "config" && path.Join(m.MountPath, "config.yaml") == c.Args[2] {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("--config %s is not the config.yaml of the config volume", c.Args[2])
	}
	port := 0
	for _, p := range c.Ports {
		if p.Name == "http" {
			port = p.ContainerPort
		}
	}
	if _, p, _ := strings.Cut(fc.Listen, ":"); p == "" || p != itoa(port) {
		t.Errorf("config listen %q does not match the container port http=%d", fc.Listen, port)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func checkSelects(t *testing.T, what string, sel, labels map[string]string) {
	t.Helper()
	if len(sel) == 0 {
		t.Errorf("%s has an empty selector", what)
	}
	for k, v := range sel {
		if labels[k] != v {
			t.Errorf("%s selects %s=%s, which the pods do not carry (%v)", what, k, v, labels)
		}
	}
}

func checkServices(t *testing.T, objs []object, d deploymentSpec, c container) {
	t.Helper()
	type svc struct {
		Selector map[string]string `json:"selector"`
		Ports    []struct {
			Name       string `json:"name"`
			TargetPort any    `json:"targetPort"`
		} `json:"ports"`
	}
	for _, tc := range []struct{ name, port string }{{"catalogbot", "webhook"}, {"catalogbot-metrics", "metrics"}} {
		o := one(t, objs, "Service", tc.name)
		var s svc
		if err := json.Unmarshal(o.Spec, &s); err != nil {
			t.Fatal(err)
		}
		checkSelects(t, "Service "+tc.name, s.Selector, d.Template.Metadata.Labels)
		if len(s.Ports) != 1 || s.Ports[0].Name != tc.port || s.Ports[0].TargetPort != "http" {
			t.Errorf("Service %s ports = %+v, want one port named %s targeting http", tc.name, s.Ports, tc.port)
		}
	}
}

// TestConfigMapLoadsWithTheServerConfigLoader reads the deployed config file
// with the server's own loader, the credentials given as the Deployment gives them.
func TestConfigMapLoadsWithTheServerConfigLoader(t *testing.T) {
	objs, _ := render(t, "overlays/single")
	cm := one(t, objs, "ConfigMap", "catalogbot-config")
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cm.Data["config.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	keyPath := writeTestKey(t, dir)
	env := map[string]string{app.EnvAppID: "12345", app.EnvWebhookSecrets: "s3cret", app.EnvPrivateKeyFile: keyPath}
	cfg, err := app.LoadConfig(cfgPath, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("LoadConfig(deployed config) = %v", err)
	}
	if got, want := cfg.DataDir, "/var/lib/catalogbot"; got != want {
		t.Errorf("DataDir = %q, want %q", got, want)
	}
	if got, want := cfg.GitCacheDir, "/var/cache/catalogbot/git"; got != want {
		t.Errorf("GitCacheDir = %q, want %q", got, want)
	}
	if !cfg.DatabaseURL.Empty() {
		t.Errorf("the config file sets a database URL; it belongs in a Secret")
	}
}

func writeTestKey(t *testing.T, dir string) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "key.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKubectlKustomize renders with the kubectl on PATH when there is one
// (CI has none: TestOverlaysRender covers it with kustomize's Go API): no
// warning, and the same objects as the Go API renders.
func TestKubectlKustomize(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed; TestOverlaysRender renders with kustomize's Go API")
	}
	for _, dir := range []string{"overlays/single", "overlays/ha"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, kubectl, "kustomize", dir)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Errorf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
			continue
		}
		if stderr.Len() > 0 {
			t.Errorf("kubectl kustomize %s warned:\n%s", dir, stderr.String())
		}
		_, want := render(t, dir)
		if !bytes.Equal(stdout.Bytes(), want) {
			t.Errorf("kubectl kustomize %s differs from kustomize %s's Go API output", dir, "v5.5.0")
		}
	}
}

// TestSetupGuideImageOverride renders each overlay under a kustomization written as docs/setup.md's
// `kustomize edit set image NAME=REF` writes it, and checks the Deployment runs exactly REF, pinned by digest.
// Before, the base had already renamed the image, so the guide's override matched nothing and the rendered
// Deployment kept ghcr.io/catalogbot/catalogbot:latest.
func TestSetupGuideImageOverride(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join("..", "docs", "setup.md"))
	if err != nil {
		t.Fatal(err)
	}
	var name, ref string
	for _, line := range strings.Split(string(guide), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "kustomize edit set image "); ok {
			name, ref, _ = strings.Cut(strings.Fields(rest)[0], "=")
		}
	}
	if name == "" || !strings.Contains(ref, "@sha256:") {
		t.Fatalf("docs/setup.md has no `kustomize edit set image NAME=REF@sha256:<digest>` line (found %q=%q)", name, ref)
	}
	ref = strings.Replace(ref, "<digest>", strings.Repeat("ab", 32), 1)
	repo, digest, _ := strings.Cut(ref, "@")
	for _, overlay := range []string{"single", "ha"} {
		t.Run(overlay, func(t *testing.T) {
			fsys := deployFS(t)
			// What `kustomize create --resources ../deploy/overlays/X`, `kustomize edit set image` and
			// `kustomize edit set namespace` write.
			k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../deploy/overlays/" + overlay +
				"\nimages:\n- name: " + name + "\n  newName: " + repo + "\n  digest: " + digest + "\nnamespace: catalogbot\n"
			if err := fsys.WriteFile("/my-catalogbot/kustomization.yaml", []byte(k)); err != nil {
				t.Fatal(err)
			}
			opts := krusty.MakeDefaultOptions()
			m, err := krusty.MakeKustomizer(opts).Run(fsys, "/my-catalogbot")
			if err != nil {
				t.Fatalf("kustomize build: %v", err)
			}
			var images []string
			for _, r := range m.Resources() {
				if r.GetKind() != "Deployment" {
					continue
				}
				b, _ := r.AsYAML()
				var o object
				if err := yaml.Unmarshal(b, &o); err != nil {
					t.Fatal(err)
				}
				var d deploymentSpec
				if err := json.Unmarshal(o.Spec, &d); err != nil {
					t.Fatal(err)
				}
				for _, c := range d.Template.Spec.Containers {
					images = append(images, c.Image)
				}
			}
			if len(images) != 1 || images[0] != ref {
				t.Errorf("the Deployment runs %q, want the guide's image %q", images, ref)
			}
		})
	}
	// Without an override nothing pulls an unpinned tag.
	for _, overlay := range []string{"overlays/single", "overlays/ha"} {
		objs, _ := render(t, overlay)
		if img := deployment(t, objs).Template.Spec.Containers[0].Image; strings.Contains(img, ":latest") || (strings.Contains(img, "/") && !strings.Contains(img, "@sha256:")) {
			t.Errorf("%s renders image %q: a default must be a digest, or the placeholder that never pulls", overlay, img)
		}
	}
}

// TestNetworkPolicy: the policy selects the catalogbot pods, lets in the port the container serves on, and
// lets out DNS, HTTPS (GitHub, registries) and PostgreSQL.
func TestNetworkPolicy(t *testing.T) {
	for _, overlay := range []string{"overlays/single", "overlays/ha"} {
		objs, _ := render(t, overlay)
		var np struct {
			PodSelector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"podSelector"`
			PolicyTypes []string `json:"policyTypes"`
			Ingress     []struct {
				Ports []struct {
					Port any `json:"port"`
				} `json:"ports"`
			} `json:"ingress"`
			Egress []struct {
				Ports []struct {
					Port     any    `json:"port"`
					Protocol string `json:"protocol"`
				} `json:"ports"`
			} `json:"egress"`
		}
		if err := json.Unmarshal(one(t, objs, "NetworkPolicy", "catalogbot").Spec, &np); err != nil {
			t.Fatal(err)
		}
		d := deployment(t, objs)
		for k, v := range np.PodSelector.MatchLabels {
			if d.Template.Metadata.Labels[k] != v {
				t.Errorf("%s: the NetworkPolicy selects %s=%s, which the pods do not carry", overlay, k, v)
			}
		}
		ports := map[string]bool{}
		for _, p := range d.Template.Spec.Containers[0].Ports {
			ports[p.Name] = true
		}
		for _, in := range np.Ingress {
			for _, p := range in.Ports {
				if name, ok := p.Port.(string); ok && !ports[name] {
					t.Errorf("%s: ingress names port %q, which the container does not have", overlay, name)
				}
			}
		}
		out := map[string]bool{}
		for _, e := range np.Egress {
			for _, p := range e.Ports {
				out[fmt.Sprint(p.Port)+"/"+p.Protocol] = true
			}
		}
		for _, want := range []string{"53/UDP", "443/TCP", "5432/TCP"} {
			if !out[want] {
				t.Errorf("%s: egress lacks %s", overlay, want)
			}
		}
	}
}
