package main

import (
	"strings"

	"github.com/dsh-host/dsh-host/internal/nameguard"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// guardedLauncher starts commands from the guard's thread, so that they
// and everything they start run under its filter.
type guardedLauncher struct{ g *nameguard.Guard }

func (l guardedLauncher) Start(launch localexec.Launch) (s localexec.Started, err error) {
	l.g.Do(func() { s, err = localexec.ForkLauncher{}.Start(launch) })
	return s, err
}

// roots is a repeatable flag of absolute paths.
type roots []string

func (r *roots) String() string { return strings.Join(*r, ",") }

func (r *roots) Set(v string) error {
	*r = append(*r, v)
	return nil
}
