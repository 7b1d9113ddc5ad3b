package template

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// Mapping says which catalogs one template renders into.
type Mapping struct {
	// Template is the template file, relative to the repository root.
	Template string
	// Schema is the template's type as the mapping declares it (olm.template.basic or olm.semver); ""
	// when the mapping does not say and the file's own schema decides.
	Schema string
	// Catalogs are the catalog files the template renders into, relative to the repository root.
	Catalogs []string
	// MigrateLevel is opm's --migrate-level for each catalog ("" or "none": olm.bundle.object).
	MigrateLevel map[string]string
}

// CIMappings reads the fbc.catalog_mapping of a community-layout ci.yaml (operators/<package>/ci.yaml):
// each template_name is a file of <package dir>/catalog-templates/, each catalog name a directory of
// catalogs/ holding <package>/catalog.yaml. The community renders catalogs of OpenShift 4.17 and later
// with --migrate-level bundle-object-to-csv-metadata and older ones without; so does this mapping.
// A ci.yaml without fbc or with fbc.enabled false has no mappings.
func CIMappings(pkgDir, pkg string, data []byte) ([]Mapping, error) {
	var ci struct {
		FBC *struct {
			Enabled        *bool `json:"enabled"`
			CatalogMapping []struct {
				TemplateName string   `json:"template_name"`
				Type         string   `json:"type"`
				CatalogNames []string `json:"catalog_names"`
			} `json:"catalog_mapping"`
		} `json:"fbc"`
	}
	if err := yaml.Unmarshal(data, &ci); err != nil {
		return nil, fmt.Errorf("ci.yaml: %w", err)
	}
	if ci.FBC == nil || (ci.FBC.Enabled != nil && !*ci.FBC.Enabled) {
		return nil, nil
	}
	var out []Mapping
	for i, m := range ci.FBC.CatalogMapping {
		if m.TemplateName == "" || strings.Contains(m.TemplateName, "..") || strings.HasPrefix(m.TemplateName, "/") {
			return nil, fmt.Errorf("ci.yaml: fbc.catalog_mapping[%d].template_name %q is not a file name of catalog-templates/", i, m.TemplateName)
		}
		switch m.Type {
		case "", SchemaBasic, SchemaSemver:
		default:
			return nil, fmt.Errorf("ci.yaml: fbc.catalog_mapping[%d].type %q is neither %s nor %s", i, m.Type, SchemaBasic, SchemaSemver)
		}
		mp := Mapping{Template: pkgDir + "/catalog-templates/" + m.TemplateName, Schema: m.Type, MigrateLevel: map[string]string{}}
		for _, c := range m.CatalogNames {
			if c == "" || strings.ContainsAny(c, "/\\") || c == "." || c == ".." {
				return nil, fmt.Errorf("ci.yaml: fbc.catalog_mapping[%d]: catalog name %q is not a directory name of catalogs/", i, c)
			}
			file := "catalogs/" + c + "/" + pkg + "/catalog.yaml"
			mp.Catalogs = append(mp.Catalogs, file)
			mp.MigrateLevel[file] = CommunityMigrateLevel(c)
		}
		out = append(out, mp)
	}
	return out, nil
}

// CommunityMigrateLevel is the migrate level the community renders an OpenShift catalog version with:
// bundle-object-to-csv-metadata from v4.17 on.
func CommunityMigrateLevel(catalogName string) string {
	var major, minor int
	if _, err := fmt.Sscanf(catalogName, "v%d.%d", &major, &minor); err == nil && (major > 4 || (major == 4 && minor >= 17)) {
		return "bundle-object-to-csv-metadata"
	}
	return "none"
}
