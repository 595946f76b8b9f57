//go:build linux

package confine

import (
	"github.com/dsh-host/dsh-host/pluginapi"
)

// guarded reports whether p's commands run under the guard against new
// repositories (runinit_guard_linux.c, with internal/nameguard's filter):
// in workspace-write, where they may write beneath roots that tools
// outside use later, unless the settings took .git off the protected
// list.
func guarded(p Policy) bool {
	return p.Mode == pluginapi.SandboxWorkspaceWrite && len(p.WritableRoots) > 0 && !p.NewRepositories
}
