package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/registry"
)

// checkPinsApply refuses a pin in host.checksums that names nothing here:
// a path key with no file there, or a name key that is neither a plugin
// in dir nor the name of an executor mounted by its path
// (dsh-executor-NAME). A typo in a pin would otherwise pin nothing, and
// say nothing.
func checkPinsApply(file *host.SettingsFile, mounted []host.Executor, dir string) error {
	if file == nil || len(file.Host.Checksums) == 0 {
		return nil
	}
	keys := make([]string, 0, len(file.Host.Checksums))
	for k := range file.Host.Checksums {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var inDir map[string]bool
	for _, k := range keys {
		if strings.ContainsRune(k, os.PathSeparator) {
			if fi, err := os.Stat(k); err != nil || fi.IsDir() {
				return fmt.Errorf("%w: %s: host.checksums.%s: names no plugin binary (no such file)", host.ErrSettings, file.ChecksumOrigin(k), k)
			}
			continue
		}
		if mountedByPath(k, mounted) {
			continue
		}
		if inDir == nil {
			inDir = map[string]bool{}
			if catalog, err := registry.Discover(dir); err == nil {
				for _, e := range catalog.Entries() {
					inDir[e.Name] = true
				}
			}
		}
		if !inDir[k] {
			return fmt.Errorf("%w: %s: host.checksums.%s: names nothing: no plugin %s in %s, and no executor mounted here is a path to %s%s (key a pin of a binary elsewhere by its path)",
				host.ErrSettings, file.ChecksumOrigin(k), k, k, dir, registry.ExecutorPrefix, k)
		}
	}
	return nil
}

// mountedByPath says whether an executor mounted by its path is the plugin
// named name (its file dsh-executor-NAME).
func mountedByPath(name string, mounted []host.Executor) bool {
	for _, ex := range mounted {
		if !ex.Builtin && ex.Path != "" && filepath.Base(ex.Path) == registry.ExecutorPrefix+name {
			return true
		}
	}
	return false
}
