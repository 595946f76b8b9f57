//go:build !unix

package host

import "syscall"

// pluginProcAttr leaves the plugin's process attributes as they are.
func pluginProcAttr() *syscall.SysProcAttr { return nil }
