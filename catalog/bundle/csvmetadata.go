package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MigrateLevels are the values of opm render's --migrate-level that Render knows: "none" keeps one
// olm.bundle.object per manifest, "bundle-object-to-csv-metadata" replaces them by one olm.csv.metadata.
var MigrateLevels = []string{"none", "bundle-object-to-csv-metadata"}

// Migrate applies opm's migrations up to level to a rendered blob of bundle b, as `opm render
// --migrate-level LEVEL` does. Level "bundle-object-to-csv-metadata" drops every olm.bundle.object and
// appends one olm.csv.metadata made of the CSV's metadata (the fields opm's property.CSVMetadata keeps);
// a blob that already holds olm.csv.metadata is left alone, as opm leaves it.
func Migrate(r *Rendered, b *Bundle, level string) error {
	switch level {
	case "", "none":
		return nil
	case "bundle-object-to-csv-metadata":
	default:
		return fmt.Errorf("unknown migrate level %q (known: none, bundle-object-to-csv-metadata)", level)
	}
	if r == nil || b == nil || b.CSV == nil || r.Image == "" {
		return nil
	}
	for _, p := range r.Properties {
		if p.Type == "olm.csv.metadata" {
			return nil
		}
	}
	value, err := csvMetadata(appendCanonical(nil, &b.CSV.Value))
	if err != nil {
		return fmt.Errorf("%s: olm.csv.metadata: %w", b.CSV.File, err)
	}
	kept := r.Properties[:0]
	for _, p := range r.Properties {
		if p.Type != "olm.bundle.object" {
			kept = append(kept, p)
		}
	}
	// The dropped objects (base64 of every manifest) must not stay reachable through the array's tail.
	clear(r.Properties[len(kept):])
	r.Properties = append(kept, Property{Type: "olm.csv.metadata", Value: value})
	return nil
}

// The shapes below mirror the JSON of operator-framework/api's v1alpha1 types that opm's
// olm.csv.metadata holds: decoding the CSV into them and encoding again keeps exactly what opm keeps
// (unknown fields dropped, omitempty where the API has it, structs always present).
type csvMetaValue struct {
	Annotations               map[string]string `json:"annotations,omitempty"`
	APIServiceDefinitions     apiServiceDefs    `json:"apiServiceDefinitions,omitempty"`
	CustomResourceDefinitions crdDefs           `json:"crdDescriptions,omitempty"`
	Description               string            `json:"description,omitempty"`
	DisplayName               string            `json:"displayName,omitempty"`
	InstallModes              []installMode     `json:"installModes,omitempty"`
	Keywords                  []string          `json:"keywords,omitempty"`
	Labels                    map[string]string `json:"labels,omitempty"`
	Links                     []appLink         `json:"links,omitempty"`
	Maintainers               []maintainer      `json:"maintainers,omitempty"`
	Maturity                  string            `json:"maturity,omitempty"`
	MinKubeVersion            string            `json:"minKubeVersion,omitempty"`
	NativeAPIs                []nativeGVK       `json:"nativeAPIs,omitempty"`
	Provider                  appLink           `json:"provider,omitempty"`
}

type descriptor struct {
	Path         string          `json:"path"`
	DisplayName  string          `json:"displayName,omitempty"`
	Description  string          `json:"description,omitempty"`
	XDescriptors []string        `json:"x-descriptors,omitempty"`
	Value        json.RawMessage `json:"value,omitempty"`
}

type apiResourceRef struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

type crdDescription struct {
	Name              string           `json:"name"`
	Version           string           `json:"version"`
	Kind              string           `json:"kind"`
	DisplayName       string           `json:"displayName,omitempty"`
	Description       string           `json:"description,omitempty"`
	Resources         []apiResourceRef `json:"resources,omitempty"`
	StatusDescriptors []descriptor     `json:"statusDescriptors,omitempty"`
	SpecDescriptors   []descriptor     `json:"specDescriptors,omitempty"`
	ActionDescriptor  []descriptor     `json:"actionDescriptors,omitempty"`
}

type apiServiceDescription struct {
	Name              string           `json:"name"`
	Group             string           `json:"group"`
	Version           string           `json:"version"`
	Kind              string           `json:"kind"`
	DeploymentName    string           `json:"deploymentName,omitempty"`
	ContainerPort     int32            `json:"containerPort,omitempty"`
	DisplayName       string           `json:"displayName,omitempty"`
	Description       string           `json:"description,omitempty"`
	Resources         []apiResourceRef `json:"resources,omitempty"`
	StatusDescriptors []descriptor     `json:"statusDescriptors,omitempty"`
	SpecDescriptors   []descriptor     `json:"specDescriptors,omitempty"`
	ActionDescriptor  []descriptor     `json:"actionDescriptors,omitempty"`
}

type crdDefs struct {
	Owned    []crdDescription `json:"owned,omitempty"`
	Required []crdDescription `json:"required,omitempty"`
}

type apiServiceDefs struct {
	Owned    []apiServiceDescription `json:"owned,omitempty"`
	Required []apiServiceDescription `json:"required,omitempty"`
}

type installMode struct {
	Type      string `json:"type"`
	Supported bool   `json:"supported"`
}

type appLink struct {
	Name string `json:"name,omitempty"`
	URL  string `json:"url,omitempty"`
}

type maintainer struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
}

type nativeGVK struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// csvMetadata decodes the CSV's JSON as opm decodes it into a v1alpha1.ClusterServiceVersion and
// encodes the olm.csv.metadata value as opm's property.Build does (no HTML escaping, compact).
func csvMetadata(csvJSON []byte) (json.RawMessage, error) {
	var csv struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
			Labels      map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Maturity                  string         `json:"maturity"`
			CustomResourceDefinitions crdDefs        `json:"customresourcedefinitions"`
			APIServiceDefinitions     apiServiceDefs `json:"apiservicedefinitions"`
			MinKubeVersion            string         `json:"minKubeVersion"`
			DisplayName               string         `json:"displayName"`
			Description               string         `json:"description"`
			Keywords                  []string       `json:"keywords"`
			Maintainers               []maintainer   `json:"maintainers"`
			Provider                  appLink        `json:"provider"`
			Links                     []appLink      `json:"links"`
			InstallModes              []installMode  `json:"installModes"`
			NativeAPIs                []nativeGVK    `json:"nativeAPIs"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(csvJSON, &csv); err != nil {
		return nil, err
	}
	v := csvMetaValue{
		Annotations:               csv.Metadata.Annotations,
		APIServiceDefinitions:     csv.Spec.APIServiceDefinitions,
		CustomResourceDefinitions: csv.Spec.CustomResourceDefinitions,
		Description:               csv.Spec.Description,
		DisplayName:               csv.Spec.DisplayName,
		InstallModes:              csv.Spec.InstallModes,
		Keywords:                  csv.Spec.Keywords,
		Labels:                    csv.Metadata.Labels,
		Links:                     csv.Spec.Links,
		Maintainers:               csv.Spec.Maintainers,
		Maturity:                  csv.Spec.Maturity,
		MinKubeVersion:            csv.Spec.MinKubeVersion,
		NativeAPIs:                csv.Spec.NativeAPIs,
		Provider:                  csv.Spec.Provider,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, buf.Bytes()); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
