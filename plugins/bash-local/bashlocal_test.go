package bashlocal_test

import (
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
	bashlocal "github.com/dsh-host/dsh-host/plugins/bash-local"
)

func TestConformance(t *testing.T) {
	pluginapitest.Run(t, func(t *testing.T) pluginapi.ShellExecutor { return bashlocal.New() })
}
