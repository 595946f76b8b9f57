// Package agentbin is what the executors that bring dsh-agent to a target
// (a container, a machine over SSH, a pod) share about the agent binary:
// where it lies beside the plugin, the checks before it is sent, its
// SHA-256 and the shell commands that install it and check it there
// (target.go), the names of architectures, and the agent's stderr in the
// plugin's log.
package agentbin

import (
	"debug/elf"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/dsh-host/dsh-host/internal/layout"
)

// DefaultPath is where `make build`, `make agents` and `make install` put
// the agent for linux/goarch, beside the running plugin binary:
// bin/plugins/dsh-executor-NAME → bin/agent/linux-GOARCH/dsh-agent, and
// PREFIX/libexec/dsh-host/plugins/… → PREFIX/libexec/dsh-host/agent/…; a
// copy of an installed plugin elsewhere falls back to its install's
// (layout.AgentPath).
func DefaultPath(goarch string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the agent: %w", err)
	}
	return layout.AgentPath(exe, goarch), nil
}

// Find is the agent to send to a target of goarch: path, or DefaultPath
// when path is "". It must be a file, and an ELF binary for goarch when it
// is one of the machines ELFArch knows; target names the target in the
// refusal ("the image", "the target").
func Find(path, goarch, target string) (string, error) {
	if path == "" {
		var err error
		if path, err = DefaultPath(goarch); err != nil {
			return "", err
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("the agent for linux/%s: %w (make agents builds it; or set shell.agent)", goarch, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("the agent %s is not a file", path)
	}
	if got := ELFArch(path); got != "" && got != goarch {
		return "", fmt.Errorf("the agent %s is built for %s, %s for %s", path, got, target, goarch)
	}
	return path, nil
}

// ELFArch is the GOARCH name of an ELF binary's machine, "" when it is
// not one this knows (or not an ELF binary).
func ELFArch(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	return map[elf.Machine]string{
		elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64", elf.EM_386: "386", elf.EM_ARM: "arm",
		elf.EM_RISCV: "riscv64", elf.EM_PPC64: "ppc64le", elf.EM_S390: "s390x",
	}[f.Machine]
}

// UnameArch is the GOARCH of the agent for a machine whose `uname -m` says
// machine, "" for one the agent is not built for.
func UnameArch(machine string) string {
	return map[string]string{"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}[strings.TrimSpace(machine)]
}

// Stderr is where the agent's stderr goes: each line to w, after the name
// of where the agent runs. Writes to one w are serialised by mu when it
// is set.
type Stderr struct {
	W     io.Writer
	Where string
	Mu    *sync.Mutex
}

func (s Stderr) Write(b []byte) (int, error) {
	if s.Mu != nil {
		s.Mu.Lock()
		defer s.Mu.Unlock()
	}
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line != "" {
			fmt.Fprintf(s.W, "%s: %s", s.Where, line)
		}
	}
	return len(b), nil
}
