package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/catalog/template/authoring"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/cli"
)

// maxTemplateFile bounds a template read by the CLI.
const maxTemplateFile = 16 << 20

// templateCommand groups the commands on catalog templates.
func templateCommand(e env) cli.Command {
	return cli.Command{
		Use:   "template",
		Short: "commands on catalog templates (olm.template.basic, olm.semver)",
		Commands: []cli.Command{
			templateRenderCommand(),
			templateCheckCommand(e),
			templateAddBundleCommand(),
			templateConvertCommand(),
		},
	}
}

func templateRenderCommand() cli.Command {
	var (
		output, migrateLevel, opm string
		bundleImage               string
		catalogs, bundles         []string
		offline                   bool
		rf                        registryFlags
	)
	return cli.Command{
		Use:   "render [basic|semver] FILE",
		Short: "render a template into a file-based catalog, as opm alpha render-template prints it",
		Long: `Renders a basic (olm.template.basic) or semver (olm.semver) template into the catalog opm alpha
render-template prints, byte for byte, on stdout. FILE "-" reads standard input. The template's type
comes from its schema; opm's form, with the type first (render basic FILE, render semver FILE), is
accepted too, and the type must then match the schema.

Each bundle image the template names is resolved without pulling when possible: from the olm.bundle
blobs of the catalogs given with --catalog (digest-pinned references: a digest names the image's
content), then from the bundle directories under --bundles, then from the --catalog blobs whose image is
the template's reference by tag, verbatim (with a template.tag-reference warning: the tag may have moved), and last pulled through the registry client
(--offline: never). With --bundle-image (the bundle root's image pattern, as bundles[].image of the
policy) a directory is named only by that pattern's reference for its package and version, or by that
repository with the digest of the directory's build, as the templates check has it; without it a
reference by digest in any repository names the directory whose build has that digest.
Findings (a template that does not render) go to stderr as file:line:col: rule: message.
Exit 0: rendered; 1: the template does not render; 2: could not run.`,
		Example: `  catalog-check template render operators/foo/catalog-templates/basic.yaml --output yaml > catalogs/v4.16/foo/catalog.yaml
  catalog-check template render semver.yaml --migrate-level bundle-object-to-csv-metadata --catalog catalogs/v4.18
  catalog-check template render basic basic.yaml -o yaml      # opm alpha render-template's form
  catalog-check template render basic.yaml --offline --catalog catalogs --bundles operators/foo
  catalog-check template render basic.yaml --offline --bundles operators/foo --bundle-image 'quay.io/acme/{package}-bundle:v{version}'`,
		Args: templateRenderArgs,
		Complete: map[string]cli.Completion{
			"output":        {Values: []string{"json", "yaml"}},
			"migrate-level": {Values: migrateLevels},
			"opm":           {Values: []string{"v1.60.0", "v1.61.0", "v1.65.0", "v1.69.0"}},
		},
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVarP(&output, "output", "o", "json", "output format: json or yaml (opm's default is json)")
			fs.StringVar(&migrateLevel, "migrate-level", "", "opm's --migrate-level: none or bundle-object-to-csv-metadata")
			fs.StringVar(&opm, "opm", "", "render as this opm release does (olm.semver differs: v1.60 and older link each channel alone; v1.61+ link per archetype and stream; v1.65+ add the package's icon and description); default the newest known")
			fs.StringArrayVar(&catalogs, "catalog", nil, "a catalog directory or file whose olm.bundle blobs resolve the images they name: by digest, and by tag verbatim with a template.tag-reference warning (repeatable)")
			fs.StringArrayVar(&bundles, "bundles", nil, "a bundle directory, a package folder of <version>/ directories, or a tree of <package>/<version>/ (repeatable)")
			fs.StringVar(&bundleImage, "bundle-image", "", "the image pattern of the --bundles directories, with {package} and {version} (quay.io/acme/{package}-bundle:v{version}): only its references, by tag or in its repository by digest, name a directory")
			fs.BoolVar(&offline, "offline", false, "never pull: images not resolved from --catalog or --bundles make the template not render")
			rf.addFlags(fs)
		},
		Run: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			kind := ""
			if len(args) == 2 {
				kind, args = args[0], args[1:]
			}
			return runTemplateRender(ctx, kind, args[0], output, migrateLevel, opm, bundleImage, catalogs, bundles, offline, &rf, os.Stdin, stdout, stderr)
		},
	}
}

// templateRenderArgs accepts FILE, or opm's TYPE FILE with TYPE basic or semver.
func templateRenderArgs(_ *cobra.Command, args []string) error {
	switch {
	case len(args) == 1 && (args[0] == "basic" || args[0] == "semver"):
		if _, err := os.Stat(args[0]); err != nil {
			return fmt.Errorf("%s is a template type and there is no file of that name: give the template after it (%s FILE), or the FILE alone", args[0], args[0])
		}
		return nil
	case len(args) == 1:
		return nil
	case len(args) == 2 && (args[0] == "basic" || args[0] == "semver"):
		return nil
	case len(args) == 2:
		return fmt.Errorf("%q is not a template type: give FILE, or basic FILE or semver FILE as opm alpha render-template takes them", args[0])
	}
	return fmt.Errorf("want FILE, or basic|semver FILE; got %d arguments", len(args))
}

// migrateLevels are the values of --migrate-level, as opm takes them.
var migrateLevels = []string{"none", "bundle-object-to-csv-metadata"}

func runTemplateRender(ctx context.Context, kind, file, output, migrateLevel, opm, bundleImage string, catalogs, bundleDirs []string, offline bool, rf *registryFlags, stdin io.Reader, stdout, stderr io.Writer) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "catalog-check template render: "+format+"\n", args...)
		return code
	}
	if output != "json" && output != "yaml" {
		return fail(exitCannotRun, "unknown --output %q (want json or yaml)", output)
	}
	if migrateLevel == "" {
		migrateLevel = "none"
	}
	if err := bundle.Migrate(nil, nil, migrateLevel); err != nil {
		return fail(exitCannotRun, "--migrate-level: %v", err)
	}
	beh, err := template.BehaviourOf(opm)
	if err != nil {
		return fail(exitCannotRun, "--opm: %v", err)
	}
	if bundleImage != "" && (!strings.Contains(bundleImage, "{package}") || !strings.Contains(bundleImage, "{version}") ||
		template.Repository(strings.NewReplacer("{package}", "p", "{version}", "1.0.0").Replace(bundleImage)) == "") {
		return fail(exitCannotRun, "--bundle-image %q: write an image reference with {package} and {version}, e.g. quay.io/acme/{package}-bundle:v{version}", bundleImage)
	}
	var src []byte
	name := file
	if file == "-" {
		name = "stdin"
		src, err = io.ReadAll(io.LimitReader(stdin, maxTemplateFile+1))
	} else {
		src, err = readBoundedFile(file, maxTemplateFile)
	}
	if err != nil {
		return fail(exitCannotRun, "%v", err)
	}
	if len(src) > maxTemplateFile {
		return fail(exitCannotRun, "%s is larger than %d bytes", name, maxTemplateFile)
	}
	tmpl, findings := template.Parse(name, src, catalog.Limits{})
	printFindings(stderr, findings)
	if tmpl == nil {
		return exitFail
	}
	if want := map[string]string{"basic": template.SchemaBasic, "semver": template.SchemaSemver}[kind]; want != "" && tmpl.Schema != want {
		return fail(exitCannotRun, "%s is an %s template, not %s: give its type as %s, or leave the type out", name, tmpl.Schema, kind,
			map[string]string{template.SchemaBasic: "basic", template.SchemaSemver: "semver"}[tmpl.Schema])
	}
	var chain template.Chain
	var byTag template.Resolver
	if len(catalogs) > 0 {
		cr, _ := template.NewCatalogResolver(migrateLevel)
		byTag = cr.ByTag()
		for _, c := range catalogs {
			info, err := os.Stat(c)
			if err != nil {
				return fail(exitCannotRun, "--catalog: %v", err)
			}
			if info.IsDir() {
				err = cr.AddFS(ctx, os.DirFS(c), catalog.Limits{})
			} else {
				var data []byte
				data, err = readBoundedFile(c, catalog.DefaultLimits().MaxFileSize)
				if err == nil {
					docs, _ := catalog.ParseFile(c, data, catalog.Limits{})
					cr.Add(docs)
				}
			}
			if err != nil {
				return fail(exitCannotRun, "--catalog %s: %v", c, err)
			}
		}
		chain = append(chain, cr)
	}
	for _, b := range bundleDirs {
		dirs, err := findBundleDirs(b)
		if err != nil {
			return fail(exitCannotRun, "--bundles %s: %v", b, err)
		}
		dr := template.NewDirResolver(os.DirFS(b), dirs, bundleImage, migrateLevel)
		if bundleImage == "" {
			dr = dr.AnyRepository()
		}
		chain = append(chain, dr)
	}
	if byTag != nil {
		chain = append(chain, byTag)
	}
	if !offline {
		client, err := rf.client()
		if err != nil {
			return fail(exitCannotRun, "%v", err)
		}
		defer client.Close()
		chain = append(chain, template.FetchResolver(checks.RegistryBundles{Client: client}.BundleFS, migrateLevel))
	}
	out, rfs := template.Render(ctx, tmpl, template.Options{Resolver: chain, Behaviour: beh})
	printFindings(stderr, rfs)
	if out == nil {
		return exitFail
	}
	if output == "yaml" {
		err = out.WriteYAML(stdout)
	} else {
		err = out.WriteJSON(stdout)
	}
	if err != nil {
		return fail(exitCannotRun, "%v", err)
	}
	return exitPass
}

func printFindings(w io.Writer, fs []catalog.Finding) {
	for _, f := range fs {
		writeFinding(w, f, true)
	}
}

// findBundleDirs lists the bundle directories (holding manifests/ and metadata/ folders, as opm recognises
// one) at dir, one level and two levels below it, relative to dir. Links are never followed: a linked folder
// is neither a bundle directory nor searched.
func findBundleDirs(dir string) ([]string, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	fsys := os.DirFS(dir)
	var out []string
	var visit func(p string, depth int) error
	visit = func(p string, depth int) error {
		entries, err := fs.ReadDir(fsys, p)
		if err != nil {
			return err
		}
		folders := map[string]bool{}
		for _, e := range entries {
			if e.IsDir() { // a link is not a folder here: its type is the link's
				folders[e.Name()] = true
			}
		}
		if folders["manifests"] && folders["metadata"] {
			out = append(out, p)
			return nil
		}
		if depth == 2 {
			return nil
		}
		for _, e := range entries {
			if e.IsDir() {
				if err := visit(path.Join(p, e.Name()), depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := visit(".", 0); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no bundle directory (manifests/ and metadata/) at %s or below", filepath.Clean(dir))
	}
	sort.Strings(out)
	return out, nil
}

func templateCheckCommand(e env) cli.Command {
	var o checkOptions
	return cli.Command{
		Use:   "check",
		Short: "check a pull request's templates against their committed catalogs (the templates check of `check`)",
		Long: `Runs the templates check of a pull request alone: for every package the change touches (its templates,
bundle directories or rendered catalogs), the head's templates are rendered as opm does and compared
with the head's committed catalogs; every difference is reported on its line with the command that
fixes it. Which templates render into which catalogs comes from the base branch's .catalogbot.yaml
(templates:, and bundles: roots with templatesFromCIYaml reading ci.yaml's fbc.catalog_mapping).
Bundle images are resolved from the base's catalogs and the bundle directories; with --pull, missing
ones are pulled through the registry client.`,
		Example: `  catalog-check template check --repo . --base origin/main --head HEAD --author alice
  catalog-check template check --base main --author alice --output json --pull`,
		Args:     cli.NoArgs,
		Complete: map[string]cli.Completion{"output": {Values: []string{"text", "json", "github"}}},
		Flags: func(fs *pflag.FlagSet) {
			o.addFlags(fs)
			fs.StringVarP(&o.output, "output", "o", "text", "output format: text, json or github (workflow commands and a step summary)")
			fs.BoolVar(&o.noHints, "no-hints", false, "text output: leave out the hint under each finding")
			fs.BoolVar(&o.pullTemplates, "pull", false, "pull bundle images that neither a catalog of the base nor a bundle directory resolves")
			o.registry.addFlags(fs)
		},
		Run: func(ctx context.Context, _ []string, stdout, stderr io.Writer) int {
			o.only = checks.Templates{}.Name()
			return runCheck(ctx, o, stdout, stderr, e.getenv)
		},
	}
}

func templateAddBundleCommand() cli.Command {
	var image string
	var write bool
	return cli.Command{
		Use:   "add-bundle TEMPLATE BUNDLE_DIR --image REF",
		Short: "add a bundle to a template: its image, and its entries in its channels with replaces, skips and skipRange",
		Long: `Adds the bundle directory BUNDLE_DIR, pushed as REF (pin it by digest), to the template TEMPLATE as a catalog
update does: in a basic template an olm.bundle entry and an entry in each of the annotations' channels (with
the CSV's replaces, skips and olm.skipRange; a missing channel is created); in a semver template the image in
each archetype the channels name (stable when none). The new entries are inserted as lines of their own,
spelled like their neighbours: the rest of the file (comments, indentation, folded scalars) stays as it was.
Prints the new template, or writes the file back with --write; then render the catalogs with
'catalog-check template render'.
Exit 0: added; 1: the template names the image already, or cannot take it; 2: could not run.`,
		Example: `  catalog-check template add-bundle operators/etcd/catalog-templates/basic.yaml operators/etcd/0.9.5 \
      --image quay.io/acme/etcd-bundle@sha256:0123... --write`,
		Args: cli.ExactArgs(2),
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&image, "image", "", "the bundle's image reference (required; by digest, so the catalog names content)")
			fs.BoolVarP(&write, "write", "w", false, "rewrite TEMPLATE instead of printing the result")
		},
		Run: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			fail := func(code int, format string, a ...any) int {
				fmt.Fprintf(stderr, "catalog-check template add-bundle: "+format+"\n", a...)
				return code
			}
			if image == "" {
				return fail(exitCannotRun, "--image is required")
			}
			src, err := readBoundedFile(args[0], maxTemplateFile)
			if err != nil {
				return fail(exitCannotRun, "%v", err)
			}
			b, found, err := bundle.Load(ctx, os.DirFS(args[1]), bundle.Limits{})
			if err != nil {
				return fail(exitCannotRun, "%s: %v", args[1], err)
			}
			if f := bundle.Unreadable(found); f != nil {
				return fail(exitFail, "%s: %s: %s", args[1], f.Position, f.Message)
			}
			add, err := authoring.AdditionOf(b, image)
			if err != nil {
				return fail(exitFail, "%s: %v", args[1], err)
			}
			out, err := authoring.AddBundle(src, add)
			if err != nil {
				return fail(exitFail, "%s: %v", args[0], err)
			}
			if !write {
				_, _ = stdout.Write(out)
				return exitPass
			}
			info, err := os.Stat(args[0])
			if err != nil {
				return fail(exitCannotRun, "%v", err)
			}
			if err := os.WriteFile(args[0], out, info.Mode().Perm()); err != nil {
				return fail(exitCannotRun, "%v", err)
			}
			fmt.Fprintf(stderr, "catalog-check template add-bundle: added %s (%s) to %s\n", add.Name, image, args[0])
			return exitPass
		},
	}
}

func templateConvertCommand() cli.Command {
	var output string
	return cli.Command{
		Use:   "convert [basic] [FILE | -]",
		Short: "turn a package's file-based catalog into a basic template, as opm alpha convert-template basic does",
		Long: `Prints the basic template (olm.template.basic) of a file-based catalog file, byte for byte as
opm alpha convert-template basic prints it: every blob becomes an entry (keys sorted, as opm re-encodes
them), and each olm.bundle blob is reduced to its schema and image, which a basic template names the
bundle by. FILE "-", or none, reads standard input; the word basic, opm's template type, may come first.
Render the template again with catalog-check template render (it pulls each bundle image, or reads it from
--catalog with the same catalog). Exit 0: converted; 1: the catalog cannot be read as opm reads it; 2:
could not run.`,
		Example: `  catalog-check template convert catalogs/v4.16/etcd/catalog.yaml -o yaml > operators/etcd/catalog-templates/basic.yaml
  catalog-check template convert basic catalog.json              # opm alpha convert-template's form
  catalog-check template convert basic.yaml | catalog-check template render - --catalog catalogs/v4.16 --offline`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 && args[0] == "basic" {
				args = args[1:]
			}
			if len(args) > 1 {
				return fmt.Errorf("want at most one FILE (or - for standard input); got %d", len(args))
			}
			return nil
		},
		Complete: map[string]cli.Completion{"output": {Values: []string{"json", "yaml"}}},
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVarP(&output, "output", "o", "json", "output format: json or yaml (opm's default is json)")
		},
		Run: func(_ context.Context, args []string, stdout, stderr io.Writer) int {
			if len(args) > 0 && args[0] == "basic" {
				args = args[1:]
			}
			return runTemplateConvert(args, output, os.Stdin, stdout, stderr)
		},
	}
}

func runTemplateConvert(args []string, output string, stdin io.Reader, stdout, stderr io.Writer) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "catalog-check template convert: "+format+"\n", a...)
		return code
	}
	if output != "json" && output != "yaml" {
		return fail(exitCannotRun, "unknown --output %q (want json or yaml)", output)
	}
	max := catalog.DefaultLimits().MaxFileSize
	var data []byte
	var err error
	name := "stdin"
	if len(args) == 0 || args[0] == "-" {
		data, err = io.ReadAll(io.LimitReader(stdin, max+1))
		if err == nil && int64(len(data)) > max {
			err = fmt.Errorf("standard input is larger than %d bytes", max)
		}
	} else {
		name = args[0]
		if st, serr := os.Stat(name); serr == nil && st.IsDir() {
			return fail(exitCannotRun, "%s is a directory; give one catalog file (e.g. %s)", name, filepath.Join(name, "catalog.yaml"))
		}
		data, err = readBoundedFile(name, max)
	}
	if err != nil {
		return fail(exitCannotRun, "%v", err)
	}
	out, err := authoring.Convert(data, output)
	if err != nil {
		return fail(exitFail, "%s: %v", name, err)
	}
	if len(out) <= 1 || bytes.HasPrefix(out, []byte("---\nnull\n")) {
		// opm prints this too (a document of comments only, or a lone "---", decodes to no blob).
		fmt.Fprintf(stderr, "catalog-check template convert: warning: %s has a YAML document that holds nothing (only comments, or a lone ---); opm prints no template for it either\n", name)
	}
	if _, err := stdout.Write(out); err != nil {
		return fail(exitCannotRun, "%v", err)
	}
	return exitPass
}
