package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// cliError drops the package prefixes, and never a piece of a path that
// ends like one.
func TestCLIErrorKeepsPaths(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: executor /opt/dsh-host: no such file", errUsage), "executor /opt/dsh-host: no such file"},
		{fmt.Errorf("registry: /srv/registry: /srv/my-pluginapi: permission denied"), "/srv/registry: /srv/my-pluginapi: permission denied"},
		{fmt.Errorf("%w: chdir /home/u/usage: no such file or directory", pluginapi.ErrUnusableWorkdir), "unusable working directory: chdir /home/u/usage: no such file or directory"},
		{errors.New("host: settings: /etc/dsh/host: settings.yaml:3: shell.x: unknown key"), "/etc/dsh/host: settings.yaml:3: shell.x: unknown key"},
	} {
		if got := cliError(c.err); got != c.want {
			t.Errorf("cliError(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
