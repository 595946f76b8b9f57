package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"
)

// ErrSettings wraps every problem with a settings file; the message names
// the file, the line and the key.
var ErrSettings = errors.New("host: settings")

// The sections of a settings file.
var settingsSections = []string{"host", "shell", "sandbox", "approval", "mcp"}

// hostKeys are the keys of the host section.
var hostKeys = []string{"executor", "pluginDir", "checksums"}

// HostSettings is the host section: which executor to mount, where plugin
// binaries live, and the SHA-256 each must have.
type HostSettings struct {
	// Executor names the executor to mount, or several (a YAML list): only
	// one of them may provide the shell.
	Executor  Names             `yaml:"executor"`
	PluginDir string            `yaml:"pluginDir"`
	Checksums map[string]string `yaml:"checksums"`
}

// Names is one name or a list of them.
type Names []string

// UnmarshalYAML takes a scalar or a sequence of scalars.
func (n *Names) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind == yaml.ScalarNode {
		*n = Names{node.Value}
		return nil
	}
	var list []string
	if err := node.Decode(&list); err != nil {
		return err
	}
	*n = list
	return nil
}

// SettingsFile is a loaded settings.yaml: the host section decoded, the
// others kept as written, to be checked against the schema of whoever takes
// them (the shell section against the mounted executor's).
type SettingsFile struct {
	Path string
	Host HostSettings
	// sections maps a section's name to its node; lines maps
	// "section.key" (and "section.key.sub..." beneath it) to the line it
	// is on; sectionLines a section's name to the line of its name.
	sections     map[string]*yaml.Node
	lines        map[string]int
	sectionLines map[string]int
}

// LoadSettingsFile reads and checks a settings file: YAML, with only the
// known sections, and a host section of known keys and types.
func LoadSettingsFile(path string) (*SettingsFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSettings, err)
	}
	f := &SettingsFile{Path: path, sections: map[string]*yaml.Node{}, lines: map[string]int{}, sectionLines: map[string]int{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlErrorLine.FindStringSubmatch(err.Error()); m != nil {
			msg = m[2]
		}
		return nil, f.errorf(syntaxErrorLine(data), "", "%s", msg)
	}
	if len(doc.Content) == 0 {
		return f, nil // empty: every default
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, f.errorf(root.Line, "", "the settings must be a mapping of sections (%s)", strings.Join(settingsSections, ", "))
	}
	// A key given twice would silently take its last value.
	if err := f.checkDuplicates(root, ""); err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		if !slices.Contains(settingsSections, key.Value) {
			return nil, f.errorf(key.Line, key.Value, "unknown section (the sections are %s)", strings.Join(settingsSections, ", "))
		}
		if val.Kind != yaml.MappingNode && !(val.Kind == yaml.ScalarNode && val.Tag == "!!null") {
			return nil, f.errorf(val.Line, key.Value, "must be a mapping")
		}
		f.sections[key.Value] = val
		f.sectionLines[key.Value] = key.Line
		f.recordLines(val, key.Value+".")
	}
	if h := f.sections["host"]; h != nil {
		for j := 0; j+1 < len(h.Content); j += 2 {
			if k := h.Content[j]; !slices.Contains(hostKeys, k.Value) {
				return nil, f.errorf(k.Line, "host."+k.Value, "unknown setting (the host settings are %s)", strings.Join(hostKeys, ", "))
			}
		}
		if err := h.Decode(&f.Host); err != nil {
			return nil, f.hostError(err)
		}
		if err := f.checkChecksums(h); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// recordLines records the line of each key beneath node, by its path.
func (f *SettingsFile) recordLines(node *yaml.Node, prefix string) {
	if node.Kind != yaml.MappingNode {
		return
	}
	for j := 0; j+1 < len(node.Content); j += 2 {
		key := node.Content[j]
		f.lines[prefix+key.Value] = key.Line
		f.recordLines(node.Content[j+1], prefix+key.Value+".")
	}
}

// checkChecksums refuses a pin that cannot apply: one that is no SHA-256
// (64 hex digits), or whose key is empty. It records each pin's line, for
// ChecksumOrigin.
func (f *SettingsFile) checkChecksums(h *yaml.Node) error {
	for j := 0; j+1 < len(h.Content); j += 2 {
		if h.Content[j].Value != "checksums" || h.Content[j+1].Kind != yaml.MappingNode {
			continue
		}
		pins := h.Content[j+1]
		for i := 0; i+1 < len(pins.Content); i += 2 {
			key, val := pins.Content[i], pins.Content[i+1]
			f.lines["host.checksums."+key.Value] = key.Line
			switch {
			case key.Value == "":
				return f.errorf(key.Line, "host.checksums", "a pin with an empty name")
			case !sha256Hex.MatchString(val.Value):
				return f.errorf(val.Line, "host.checksums."+key.Value, "%q is not a SHA-256 (64 hex digits, as sha256sum prints)", val.Value)
			}
		}
	}
	return nil
}

// sha256Hex is a SHA-256 in hex.
var sha256Hex = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// ChecksumOrigin says where the pin host.checksums[key] was set, as
// "FILE:LINE" ("" when the file sets none): for refusing one that names
// nothing the host could mount.
func (f *SettingsFile) ChecksumOrigin(key string) string {
	return f.Origin("host", "checksums."+key)
}

// yamlErrorLine splits a YAML error that names its line ("yaml: line 3:
// did not find expected key", "line 5: cannot unmarshal ...").
var yamlErrorLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// maxSyntaxScan bounds the lines syntaxErrorLine parses prefixes of.
const maxSyntaxScan = 2000

// syntaxErrorLine finds the line a YAML syntax error is on: the line after
// the longest run of whole lines from the top that parses. (The YAML
// library names the line its context began on, often one or more before
// the fault.)
func syntaxErrorLine(data []byte) int {
	lines := strings.SplitAfter(string(data), "\n")
	n := min(len(lines), maxSyntaxScan)
	lastOK := 0
	var v yaml.Node
	for k := 1; k <= n; k++ {
		if yaml.Unmarshal([]byte(strings.Join(lines[:k], "")), &v) == nil {
			lastOK = k
		}
	}
	return min(lastOK+1, max(n, 1))
}

// checkDuplicates refuses a key that a mapping beneath node (node itself
// included) holds twice, naming it by its path from the top, and both
// lines.
func (f *SettingsFile) checkDuplicates(node *yaml.Node, prefix string) error {
	switch node.Kind {
	case yaml.MappingNode:
		first := map[string]int{}
		for i := 0; i+1 < len(node.Content); i += 2 {
			key, val := node.Content[i], node.Content[i+1]
			if line, ok := first[key.Value]; ok {
				return f.errorf(key.Line, prefix+key.Value, "duplicate (first at line %d)", line)
			}
			first[key.Value] = key.Line
			if err := f.checkDuplicates(val, prefix+key.Value+"."); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for _, item := range node.Content {
			if err := f.checkDuplicates(item, prefix); err != nil {
				return err
			}
		}
	}
	return nil
}

// hostError places an error decoding the host section at its line and key.
func (f *SettingsFile) hostError(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		if m := yamlErrorLine.FindStringSubmatch(te.Errors[0]); m != nil {
			line, _ := strconv.Atoi(m[1])
			key := "host"
			for _, k := range hostKeys {
				if l, ok := f.lines["host."+k]; ok && l == line {
					key = "host." + k
				}
			}
			return f.errorf(line, key, "%s", m[2])
		}
	}
	line := 0
	if h := f.sections["host"]; h != nil {
		line = h.Line
	}
	return f.errorf(line, "host", "%v", err)
}

func (f *SettingsFile) errorf(line int, key, format string, args ...any) error {
	where := fmt.Sprintf("%s:%d", f.Path, line)
	if key != "" {
		where += ": " + key
	}
	return fmt.Errorf("%w: %s: %s", ErrSettings, where, fmt.Sprintf(format, args...))
}

// Origin says where section.key was set: "FILE:LINE", or "" when the file
// does not set it.
func (f *SettingsFile) Origin(section, key string) string {
	if line, ok := f.lines[section+"."+key]; ok {
		return fmt.Sprintf("%s:%d", f.Path, line)
	}
	return ""
}

// Section returns section as JSON, checked against schema (a JSON Schema
// document; empty means anything goes): an unknown key or a wrong type is
// refused with the key and its line. A missing section is null.
func (f *SettingsFile) Section(name, schema string) ([]byte, error) {
	node := f.sections[name]
	if node == nil || node.Kind != yaml.MappingNode {
		return nil, nil
	}
	var v any
	if err := node.Decode(&v); err != nil {
		return nil, f.errorf(node.Line, name, "%v", err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, f.errorf(node.Line, name, "%v", err)
	}
	if schema == "" {
		return raw, nil
	}
	if err := f.checkKnown(name, node, schema); err != nil {
		return nil, err
	}
	sch, err := compileSchema(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: the %s schema: %v", ErrSettings, name, err)
	}
	var inst any
	if err := json.Unmarshal(raw, &inst); err != nil {
		return nil, f.errorf(node.Line, name, "%v", err)
	}
	if err := sch.Validate(inst); err != nil {
		line, key := node.Line, name
		if m := propertyPath.FindStringSubmatch(err.Error()); m != nil {
			key = name + "." + m[1]
			if l, ok := f.lines[key]; ok {
				line = l
			}
		}
		return nil, f.errorf(line, key, "%s", validationMessage(err))
	}
	return raw, nil
}

// checkKnown refuses, with its line, a key the schema does not declare
// when the schema allows no others.
func (f *SettingsFile) checkKnown(name string, node *yaml.Node, schema string) error {
	var s struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if json.Unmarshal([]byte(schema), &s) != nil || s.AdditionalProperties == nil || *s.AdditionalProperties {
		return nil
	}
	known := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		known = append(known, k)
	}
	sort.Strings(known)
	for j := 0; j+1 < len(node.Content); j += 2 {
		if k := node.Content[j]; s.Properties[k.Value] == nil {
			return f.errorf(k.Line, name+"."+k.Value, "unknown setting (known: %s)", strings.Join(known, ", "))
		}
	}
	return nil
}

// propertyPath finds the top-level property a validation error is about.
var propertyPath = regexp.MustCompile(`validating /properties/([^/:]+)`)

// compileSchema resolves a JSON Schema document for validation.
func compileSchema(schema string) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

// validationMessage is a validation error's message without the chain of
// "validating PATH:" prefixes that lead to it.
func validationMessage(err error) string {
	msg := err.Error()
	for strings.HasPrefix(msg, "validating ") {
		i := strings.Index(msg, ": ")
		if i < 0 {
			break
		}
		msg = msg[i+2:]
	}
	return msg
}

// SandboxWritableRoots are the sandbox section's writableRoots, as written
// (nil when the file sets none): directories commands may write beneath,
// which a host counts when it checks where an executor binary lies,
// whichever executor it mounts. The rest of the section is checked against
// the executor's schema later (ShellSettings).
func (f *SettingsFile) SandboxWritableRoots() ([]string, error) {
	node := f.sections["sandbox"]
	if node == nil || node.Kind != yaml.MappingNode {
		return nil, nil
	}
	var s struct {
		WritableRoots []string `yaml:"writableRoots"`
	}
	if err := node.Decode(&s); err != nil {
		line := node.Line
		if l, ok := f.lines["sandbox.writableRoots"]; ok {
			line = l
		}
		return nil, f.errorf(line, "sandbox.writableRoots", "%v", err)
	}
	return s.WritableRoots, nil
}
