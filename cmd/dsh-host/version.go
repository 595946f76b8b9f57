package main

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/dsh-host/dsh-host/internal/layout"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/builtins"
)

// commit is the commit `make` built from (-ldflags -X main.commit=...),
// for builds whose build info has no vcs.revision.
var commit string

// versionCmd prints what this dsh-host is: `dsh-host version`.
func versionCmd(args []string, w io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(w, "usage: dsh-host version\n\n"+helps["version"].about+"\n")
		return 0
	}
	if len(args) != 0 {
		return usageError("version takes no arguments, not %q", args)
	}
	module, rev := "(unknown)", cmp.Or(commit, "(unknown)")
	if bi, ok := debug.ReadBuildInfo(); ok {
		module = bi.Main.Path + " " + bi.Main.Version
		var vcsRev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				vcsRev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if vcsRev != "" {
			rev = vcsRev
			if modified == "true" {
				rev += "+modified"
			}
		}
	}
	fmt.Fprintf(w, "dsh-host\n")
	fmt.Fprintf(w, "  module:    %s\n", module)
	fmt.Fprintf(w, "  commit:    %s\n", rev)
	fmt.Fprintf(w, "  go:        %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "  contract:  shellexec/v1, go-plugin protocol %d\n", pluginapi.ProtocolVersion)
	fmt.Fprintf(w, "  built-in:  %s\n", strings.Join(builtins.Names(), ", "))
	if layout.LibexecDir != "" {
		fmt.Fprintf(w, "  installed: %s\n", layout.LibexecDir)
	}
	return 0
}
