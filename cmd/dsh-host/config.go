package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/mcpserver"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// configCmd prints the effective configuration: `dsh-host config --dump`.
func configCmd(args []string) int {
	fs := flag.NewFlagSet("dsh-host config", flag.ContinueOnError)
	var mf mountFlags
	mf.register(fs, "`NAME|PATH` of the executor, as for run")
	dump := fs.Bool("dump", false, "print the effective configuration and where each value came from (required)")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q: config takes flags only", fs.Arg(0))
	}
	if !*dump {
		return usageError("config needs --dump")
	}
	ctx, cancel := context.WithTimeout(context.Background(), describeTimeout)
	defer cancel()
	setup := mf.setup()
	resolved, err := setup.Load()
	if err != nil {
		return cannot(err)
	}
	file := resolved.File
	m, err := resolved.Mount(ctx)
	if err != nil {
		return cannot(err)
	}
	defer m.Close(context.Background())
	d := m.Shell().Description()
	sandbox := string(d.SandboxMode)
	if sandbox == "" {
		sandbox = "none"
	}
	path := setup.SettingsFilePath()
	if path == "" {
		path = "(none)"
	}
	fmt.Printf("settings file: %s\nexecutor: %s %s, platform %s, sandbox %s\n\n", path, d.Name, d.Version, d.Platform, sandbox)

	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KEY\tVALUE\tFROM")
	origin := func(section, key, fallback string) string {
		if file != nil {
			if o := file.Origin(section, key); o != "" {
				return o
			}
		}
		return fallback
	}
	executors, execFrom := setup.ExecutorNames(file)
	if len(mf.executors) > 0 {
		execFrom = "--executor"
	}
	fmt.Fprintf(w, "host.executor\t%s\t%s\n", strings.Join(executors, ","), execFrom)
	fmt.Fprintf(w, "host.pluginDir\t%s\t%s\n", resolved.PluginDir.Dir, resolved.PluginDir.From)
	if file != nil {
		names := make([]string, 0, len(file.Host.Checksums))
		for n := range file.Host.Checksums {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(w, "host.checksums.%s\t%s\t%s\n", n, file.Host.Checksums[n], origin("host", "checksums", ""))
		}
	}
	sections := []struct{ name, schema, from string }{{"shell", d.SettingsSchema, d.Name + " default"}}
	if policy := host.SandboxPolicySchema(d.SettingsSchema); policy != nil {
		sections = append(sections, struct{ name, schema, from string }{"sandbox", string(policy), d.Name + " default"})
	}
	sections = append(sections, struct{ name, schema, from string }{"approval", host.ApprovalSchema, "default"},
		struct{ name, schema, from string }{"mcp", mcpserver.HTTPSchema, "default"})
	for _, sec := range sections {
		if err := dumpSection(w, file, sec.name, sec.schema, sec.from, origin); err != nil {
			return cannot(err)
		}
	}
	_ = w.Flush()
	scrubbed, err := scrubbedLine(file, d, os.Environ())
	if err != nil {
		return cannot(err)
	}
	if scrubbed != "" {
		fmt.Printf("\n%s\n", scrubbed)
	}
	return 0
}

// scrubbedLine names the variables of environ (dsh-host's own, which the
// executor inherits) that the executor keeps from its commands under the
// settings in force; names only, never values. It is "" for an executor
// without the local executors' scrub (no scrubCredentials setting): its
// rules are its own.
func scrubbedLine(file *host.SettingsFile, d pluginapi.Description, environ []string) (string, error) {
	var sch struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal([]byte(d.SettingsSchema), &sch) != nil || sch.Properties["scrubCredentials"] == nil {
		return "", nil
	}
	var s localexec.Settings
	if file != nil {
		raw, err := file.Section(pluginapi.SettingsNamespace, d.SettingsSchema)
		if err != nil {
			return "", err
		}
		if raw != nil {
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", err
			}
		}
	}
	const label = "inherited variables scrubbed: "
	if s.ScrubCredentials != nil && !*s.ScrubCredentials {
		return label + "none (" + pluginapi.SettingsNamespace + ".scrubCredentials is false)", nil
	}
	names := localexec.ScrubbedNames(s, environ)
	if len(names) == 0 {
		return label + "none", nil
	}
	return label + strings.Join(names, ", "), nil
}

// dumpSection prints each key of a section's schema: the value the file
// sets, with its line, or the schema's default, from defaultFrom.
func dumpSection(w io.Writer, file *host.SettingsFile, section, schema, defaultFrom string, origin func(section, key, fallback string) string) error {
	set := map[string]json.RawMessage{}
	if file != nil {
		raw, err := file.Section(section, schema)
		if err != nil {
			return err
		}
		if raw != nil {
			_ = json.Unmarshal(raw, &set)
		}
	}
	var sch struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	_ = json.Unmarshal([]byte(schema), &sch)
	keys := make([]string, 0, len(sch.Properties))
	for k := range sch.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if section == pluginapi.SettingsNamespace && k == pluginapi.SandboxPolicySetting {
			continue // the sandbox section
		}
		if v, ok := set[k]; ok {
			fmt.Fprintf(w, "%s.%s\t%s\t%s\n", section, k, v, origin(section, k, ""))
			continue
		}
		def := string(sch.Properties[k].Default)
		if def == "" {
			def = "-"
		}
		fmt.Fprintf(w, "%s.%s\t%s\t%s\n", section, k, def, defaultFrom)
	}
	return nil
}
