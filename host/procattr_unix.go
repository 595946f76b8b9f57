//go:build unix

package host

import "syscall"

// pluginProcAttr puts the plugin in a process group of its own: a signal to
// the host's group (Ctrl-C, `kill %1`, a supervisor stopping the group) then
// reaches the host alone, which aborts what runs and shuts the plugin down in
// order, instead of killing the plugin under its commands.
func pluginProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
