// Command render renders a Helm chart the way `helm template` does, for machines
// without a helm binary (see deploy/README.md, "Rendering without helm").
//
// Usage:
//
//	render template [RELEASE] CHART [-f VALUES.yaml]... [--set K=V]... [--set-string K=V]...
//	                [-n NAMESPACE] [--kube-version vX.Y.Z]
//	render lint CHART [-f VALUES.yaml]... [--set K=V]...
//
// What it implements of Helm 3 (only what a chart without subcharts needs):
//   - .Values: the chart's values.yaml, then each -f file, then --set/--set-string,
//     merged key by key (a null in a later layer deletes the key). Numbers from YAML
//     files are float64 and numbers from --set are int64, as in Helm.
//   - .Release (Name, Namespace, Service, IsInstall, IsUpgrade, Revision), .Chart
//     (Chart.yaml with Helm's field names: Name, Version, AppVersion, ...), .Template
//     (Name, BasePath) and .Capabilities.KubeVersion (Version, Major, Minor).
//   - Go text/template with missingkey=zero and "<no value>" printed as "", every
//     sprig function but env/expandenv, and Helm's include, tpl, required, toYaml,
//     fromYaml, toJson, fromJson and lookup (which finds nothing, as in helm template).
//   - Files under templates/ whose name starts with "_" only define templates;
//     NOTES.txt is not output; every other file is rendered and each YAML document
//     in it printed after a "# Source: CHART/templates/FILE" line. Empty ones are dropped.
//
// lint renders the chart and checks Chart.yaml and that every document is a YAML
// mapping with apiVersion, kind and a DNS-1123 metadata.name; it exits 1 on a problem.
// Output order is by file name, where Helm sorts by kind; the documents are the same.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	sprig "github.com/Masterminds/sprig/v3"
	yaml "gopkg.in/yaml.v2"
)

type options struct {
	release     string
	chartDir    string
	namespace   string
	kubeVersion string
	valueFiles  []string
	sets        []string
	setStrings  []string
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	opts, err := parseArgs(os.Args[1], os.Args[2:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(2)
	}
	docs, chartMeta, err := render(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
	switch os.Args[1] {
	case "template":
		for _, d := range docs {
			fmt.Printf("---\n# Source: %s\n%s\n", d.source, d.body)
		}
	case "lint":
		problems := lint(chartMeta, docs)
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "[ERROR]", p)
		}
		if len(problems) > 0 {
			os.Exit(1)
		}
		fmt.Printf("1 chart(s) linted, 0 chart(s) failed (%d manifests)\n", len(docs))
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: render template [RELEASE] CHART [-f FILE]... [--set K=V]... [-n NS]\n       render lint CHART [-f FILE]... [--set K=V]...")
	os.Exit(2)
}

func parseArgs(command string, args []string) (options, error) {
	if command != "template" && command != "lint" {
		usage()
	}
	opts := options{release: "release-name", namespace: "default", kubeVersion: "v1.30.0"}
	var positional []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, inline, hasInline := strings.Cut(arg, "=")
		takesValue := map[string]bool{
			"-f": true, "--values": true, "--set": true, "--set-string": true,
			"-n": true, "--namespace": true, "--kube-version": true,
		}
		if !strings.HasPrefix(arg, "-") {
			positional = append(positional, arg)
			continue
		}
		if !takesValue[name] {
			return opts, fmt.Errorf("unknown flag %s", arg)
		}
		value := inline
		if !hasInline || !strings.HasPrefix(name, "--") {
			if hasInline { // "-f=x" is not a short-flag spelling Helm accepts either
				return opts, fmt.Errorf("write %s VALUE", name)
			}
			if i+1 >= len(args) {
				return opts, fmt.Errorf("flag %s needs a value", name)
			}
			i++
			value = args[i]
		}
		switch name {
		case "-f", "--values":
			opts.valueFiles = append(opts.valueFiles, value)
		case "--set":
			opts.sets = append(opts.sets, value)
		case "--set-string":
			opts.setStrings = append(opts.setStrings, value)
		case "-n", "--namespace":
			opts.namespace = value
		case "--kube-version":
			opts.kubeVersion = value
		}
	}
	switch {
	case command == "template" && len(positional) == 2:
		opts.release, opts.chartDir = positional[0], positional[1]
	case len(positional) == 1:
		opts.chartDir = positional[0]
	default:
		return opts, fmt.Errorf("expected [RELEASE] CHART, got %q", positional)
	}
	return opts, nil
}

type document struct {
	source string
	body   string
}

// render returns the documents of every template and the chart's metadata.
func render(opts options) ([]document, map[string]interface{}, error) {
	chartMeta, err := readYAMLFile(filepath.Join(opts.chartDir, "Chart.yaml"))
	if err != nil {
		return nil, nil, err
	}
	chartName, _ := chartMeta["name"].(string)
	if chartName == "" {
		return nil, nil, errors.New("Chart.yaml: name is required")
	}
	if deps, ok := chartMeta["dependencies"]; ok && deps != nil {
		return nil, nil, errors.New("Chart.yaml: dependencies (subcharts) are not supported by this renderer")
	}
	values, err := readYAMLFile(filepath.Join(opts.chartDir, "values.yaml"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	if values == nil {
		values = map[string]interface{}{}
	}
	for _, f := range opts.valueFiles {
		layer, err := readYAMLFile(f)
		if err != nil {
			return nil, nil, err
		}
		mergeValues(values, layer)
	}
	for _, s := range opts.sets {
		if err := applySet(values, s, false); err != nil {
			return nil, nil, fmt.Errorf("--set %s: %w", s, err)
		}
	}
	for _, s := range opts.setStrings {
		if err := applySet(values, s, true); err != nil {
			return nil, nil, fmt.Errorf("--set-string %s: %w", s, err)
		}
	}

	templateDir := filepath.Join(opts.chartDir, "templates")
	var names []string
	files := map[string]string{}
	err = filepath.WalkDir(templateDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(templateDir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		name := path.Join(chartName, "templates", filepath.ToSlash(rel))
		names = append(names, name)
		files[name] = string(data)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(names)

	root := template.New("chart").Option("missingkey=zero")
	root.Funcs(funcMap(root))
	for _, name := range names {
		if _, err := root.New(name).Parse(files[name]); err != nil {
			return nil, nil, err
		}
	}

	major, minor := kubeMajorMinor(opts.kubeVersion)
	top := map[string]interface{}{
		"Values": values,
		"Release": map[string]interface{}{
			"Name": opts.release, "Namespace": opts.namespace, "Service": "Helm",
			"IsInstall": true, "IsUpgrade": false, "Revision": 1,
		},
		"Chart": helmChartFields(chartMeta),
		"Capabilities": map[string]interface{}{
			"KubeVersion": map[string]interface{}{
				"Version": opts.kubeVersion, "GitVersion": opts.kubeVersion, "Major": major, "Minor": minor,
			},
		},
	}
	var docs []document
	for _, name := range names {
		base := path.Base(name)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}
		data := map[string]interface{}{}
		for k, v := range top {
			data[k] = v
		}
		data["Template"] = map[string]interface{}{"Name": name, "BasePath": path.Join(chartName, "templates")}
		var out bytes.Buffer
		if err := root.ExecuteTemplate(&out, name, data); err != nil {
			return nil, nil, err
		}
		text := strings.ReplaceAll(out.String(), "<no value>", "")
		for _, part := range splitDocuments(text) {
			docs = append(docs, document{source: name, body: part})
		}
	}
	return docs, chartMeta, nil
}

var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// splitDocuments cuts a rendered file at its "---" lines and drops documents that are only
// whitespace or comments' absence of content.
func splitDocuments(text string) []string {
	var out []string
	for _, part := range separator.Split(text, -1) {
		trimmed := strings.TrimSpace(part)
		if trimmed == "" {
			continue
		}
		out = append(out, strings.TrimRight(strings.TrimLeft(part, "\n"), " \t\n"))
	}
	return out
}

func kubeMajorMinor(version string) (string, string) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return "1", "30"
	}
	return parts[0], parts[1]
}

// helmChartFields renames Chart.yaml's keys to the field names Helm gives .Chart.
func helmChartFields(meta map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range meta {
		switch k {
		case "apiVersion":
			out["APIVersion"] = v
		default:
			out[strings.ToUpper(k[:1])+k[1:]] = v
		}
	}
	return out
}

func funcMap(root *template.Template) template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	f["toYaml"] = toYAML
	f["fromYaml"] = func(s string) map[string]interface{} {
		m, err := parseYAML([]byte(s))
		if err != nil {
			return map[string]interface{}{"Error": err.Error()}
		}
		return m
	}
	f["toJson"] = func(v interface{}) string {
		data, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(data)
	}
	f["fromJson"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	f["required"] = func(message string, v interface{}) (interface{}, error) {
		if v == nil {
			return v, errors.New(message)
		}
		if s, ok := v.(string); ok && s == "" {
			return v, errors.New(message)
		}
		return v, nil
	}
	f["include"] = func(name string, data interface{}) (string, error) {
		var out bytes.Buffer
		if err := root.ExecuteTemplate(&out, name, data); err != nil {
			return "", err
		}
		return out.String(), nil
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		clone, err := root.Clone()
		if err != nil {
			return "", err
		}
		t, err := clone.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var out bytes.Buffer
		if err := t.Execute(&out, data); err != nil {
			return "", err
		}
		return strings.ReplaceAll(out.String(), "<no value>", ""), nil
	}
	f["lookup"] = func(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	return f
}

// toYAML prints v as Helm does: through JSON (so numbers print as integers where they are
// whole), keys sorted, without the final newline.
func toYAML(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	var generic interface{}
	if err := yaml.Unmarshal(data, &generic); err != nil {
		return ""
	}
	out, err := yaml.Marshal(generic)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(out), "\n")
}

func readYAMLFile(p string) (map[string]interface{}, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	m, err := parseYAML(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return m, nil
}

// parseYAML reads a YAML mapping into JSON types (map[string]interface{}, float64), as Helm does.
func parseYAML(data []byte) (map[string]interface{}, error) {
	var raw interface{}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		return map[string]interface{}{}, nil
	}
	converted, err := jsonCompatible(raw)
	if err != nil {
		return nil, err
	}
	encoded, err := json.Marshal(converted)
	if err != nil {
		return nil, err
	}
	out := map[string]interface{}{}
	if err := json.Unmarshal(encoded, &out); err != nil {
		return nil, errors.New("the document is not a mapping")
	}
	return out, nil
}

func jsonCompatible(v interface{}) (interface{}, error) {
	switch t := v.(type) {
	case map[interface{}]interface{}:
		out := map[string]interface{}{}
		for k, val := range t {
			key, ok := k.(string)
			if !ok {
				key = fmt.Sprint(k)
			}
			c, err := jsonCompatible(val)
			if err != nil {
				return nil, err
			}
			out[key] = c
		}
		return out, nil
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, val := range t {
			c, err := jsonCompatible(val)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	default:
		return v, nil
	}
}

// mergeValues merges src into dst: maps key by key, anything else replaced, null deletes.
func mergeValues(dst, src map[string]interface{}) {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		srcMap, srcIsMap := v.(map[string]interface{})
		dstMap, dstIsMap := dst[k].(map[string]interface{})
		if srcIsMap && dstIsMap {
			mergeValues(dstMap, srcMap)
			continue
		}
		dst[k] = v
	}
}

// applySet applies one --set argument: comma-separated KEY=VALUE pairs, dotted keys,
// "\," and "\." escapes, "{a,b}" lists; values typed like Helm's (bool, int64, null, string).
func applySet(values map[string]interface{}, arg string, asString bool) error {
	for _, pair := range splitUnescaped(arg, ',', true) {
		key, value, ok := cutUnescaped(pair, '=')
		if !ok {
			return fmt.Errorf("%q is not KEY=VALUE", pair)
		}
		path := splitUnescaped(key, '.', false)
		node := values
		for _, part := range path[:len(path)-1] {
			next, ok := node[part].(map[string]interface{})
			if !ok {
				next = map[string]interface{}{}
				node[part] = next
			}
			node = next
		}
		leaf := path[len(path)-1]
		if leaf == "" {
			return fmt.Errorf("empty key in %q", pair)
		}
		if strings.HasPrefix(value, "{") && strings.HasSuffix(value, "}") {
			var list []interface{}
			for _, item := range splitUnescaped(value[1:len(value)-1], ',', false) {
				list = append(list, typed(unescape(item), asString))
			}
			node[leaf] = list
			continue
		}
		v := typed(unescape(value), asString)
		if v == nil {
			delete(node, leaf)
			continue
		}
		node[leaf] = v
	}
	return nil
}

func typed(s string, asString bool) interface{} {
	if asString {
		return s
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && (s == "0" || !strings.HasPrefix(s, "0")) {
		return n
	}
	return s
}

// splitUnescaped splits at sep where it is not preceded by a backslash (and, when braces
// is set, not inside {...}); the escapes stay in the parts.
func splitUnescaped(s string, sep byte, braces bool) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case braces && s[i] == '{':
			depth++
		case braces && s[i] == '}':
			depth--
		case s[i] == sep && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	parts = append(parts, s[start:])
	if sep == '.' {
		for i := range parts {
			parts[i] = unescape(parts[i])
		}
	}
	return parts
}

func cutUnescaped(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

func lint(chartMeta map[string]interface{}, docs []document) []string {
	var problems []string
	if v, _ := chartMeta["apiVersion"].(string); v != "v2" {
		problems = append(problems, "Chart.yaml: apiVersion must be v2")
	}
	version, _ := chartMeta["version"].(string)
	if !regexp.MustCompile(`^\d+\.\d+\.\d+([-+].*)?$`).MatchString(version) {
		problems = append(problems, fmt.Sprintf("Chart.yaml: version %q is not SemVer 2", version))
	}
	if len(docs) == 0 {
		problems = append(problems, "the chart renders no manifest")
	}
	seen := map[string]string{}
	for _, d := range docs {
		obj, err := parseYAML([]byte(d.body))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: not valid YAML: %v", d.source, err))
			continue
		}
		kind, _ := obj["kind"].(string)
		apiVersion, _ := obj["apiVersion"].(string)
		meta, _ := obj["metadata"].(map[string]interface{})
		name, _ := meta["name"].(string)
		if kind == "" || apiVersion == "" {
			problems = append(problems, fmt.Sprintf("%s: apiVersion and kind are required", d.source))
		}
		if len(name) > 253 || !dns1123.MatchString(name) {
			problems = append(problems, fmt.Sprintf("%s: metadata.name %q is not a DNS-1123 name", d.source, name))
		}
		if kind == "Service" && len(name) > 63 {
			problems = append(problems, fmt.Sprintf("%s: Service name %q is longer than 63", d.source, name))
		}
		id := apiVersion + "/" + kind + "/" + name
		if other, dup := seen[id]; dup {
			problems = append(problems, fmt.Sprintf("%s: %s also rendered by %s", d.source, id, other))
		}
		seen[id] = d.source
	}
	return problems
}
