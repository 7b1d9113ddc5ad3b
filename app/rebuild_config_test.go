package app

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoadConfigRebuild(t *testing.T) {
	dir := t.TempDir()
	key := writeTestKey(t, dir)
	file := filepath.Join(dir, "catalogbot.yaml")
	digest := "quay.io/operator-framework/opm@sha256:" + strings.Repeat("ab", 32)
	if err := os.WriteFile(file, []byte("app_id: 3\nprivate_key_file: "+key+"\nrebuild:\n  base_image: "+digest+
		"\n  push_auth_file: /etc/push.json\n  allowed_images: [quay.io/acme/]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(file, envMap(map[string]string{EnvWebhookSecrets: "s"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.RebuildBaseImage != digest || c.RebuildPushAuthFile != "/etc/push.json" || !reflect.DeepEqual(c.RebuildAllowedImages, []string{"quay.io/acme/"}) {
		t.Errorf("rebuild settings = %q %q %v", c.RebuildBaseImage, c.RebuildPushAuthFile, c.RebuildAllowedImages)
	}

	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("app_id: 3\nprivate_key_file: "+key+"\nrebuild:\n  base_image: quay.io/operator-framework/opm:latest\n  allowed_images: [\"quay.io/acme@x\"]\n"), 0o600)
	_, err = LoadConfig(bad, envMap(map[string]string{EnvWebhookSecrets: "s"}))
	for _, want := range []string{"rebuild.base_image", "pin it by digest", "rebuild.allowed_images"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadConfig(tag base, bad prefix) = %v, want an error mentioning %q", err, want)
		}
	}
}

// Registry credentials without a list of allowed targets would push
// wherever a repository's policy says: refused at start-up.
func TestLoadConfigRebuildCredentialsNeedAllowedImages(t *testing.T) {
	dir := t.TempDir()
	key := writeTestKey(t, dir)
	file := filepath.Join(dir, "catalogbot.yaml")
	os.WriteFile(file, []byte("app_id: 3\nprivate_key_file: "+key+"\nrebuild:\n  push_auth_file: /etc/push.json\n"), 0o600)
	_, err := LoadConfig(file, envMap(map[string]string{EnvWebhookSecrets: "s"}))
	if err == nil || !strings.Contains(err.Error(), "rebuild.allowed_images is empty") {
		t.Errorf("LoadConfig(push credentials, no allowed images) = %v, want a refusal naming rebuild.allowed_images", err)
	}
}

func TestLoadDatabaseConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "catalogbot.yaml")
	// No App credentials, a webhook secrets file that does not exist here:
	// the database settings are all that is read.
	os.WriteFile(file, []byte("data_dir: "+dir+"\nwebhook_secrets_file: /nowhere\ndatabase_schema: cb\n"), 0o600)
	c, err := LoadDatabaseConfig(file, envMap(map[string]string{EnvDatabaseURL: "postgres://u:pw@db/x"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != dir || c.DatabaseSchema != "cb" || string(c.DatabaseURL.Reveal()) != "postgres://u:pw@db/x" {
		t.Errorf("database config = %+v", c)
	}
	os.WriteFile(file, []byte("database_schema: \"a-b\"\n"), 0o600)
	if _, err := LoadDatabaseConfig(file, envMap(nil)); err == nil || !strings.Contains(err.Error(), "database_schema") {
		t.Errorf("bad schema: err = %v", err)
	}
	if _, err := LoadConfig(file, envMap(nil)); err == nil {
		t.Error("LoadConfig accepted a configuration without App credentials")
	}
}
