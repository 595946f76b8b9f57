package bashlocal_test

import (
	"context"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
	bashlocal "github.com/dsh-host/dsh-host/plugins/bash-local"
)

// plainExecutor is bash-local without live output (no LiveRunner), as a
// third party's executor may be: it keeps the ShellExecutor methods, its
// settings and its spill files.
type plainExecutor struct{ pluginapi.ShellExecutor }

func (p plainExecutor) ReadSpill(ctx context.Context, path string, offset int64, max int) (pluginapi.SpillChunk, error) {
	return p.ShellExecutor.(pluginapi.SpillReader).ReadSpill(ctx, path, offset, max)
}

func (p plainExecutor) Configure(ctx context.Context, settings []byte) error {
	return p.ShellExecutor.(pluginapi.Configurable).Configure(ctx, settings)
}

// An executor that is not a LiveRunner passes the suite too: a caller who
// asks for output as it comes gets the collected text at the end (the
// server adapter sends it), so `dsh-host run` shows its output.
func TestConformanceWithoutLiveOutput(t *testing.T) {
	pluginapitest.Run(t, func(t *testing.T) pluginapi.ShellExecutor { return plainExecutor{bashlocal.New()} })
}
