package host

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/registry"
)

// ErrNoShell: none of the mounted executors provides the shell service.
var ErrNoShell = errors.New("host: no executor provides the shell service")

// Mounted is a set of executor plugins mounted together, each registered for
// the services it provides: exactly one of them is the shell.
type Mounted struct {
	shell *Host
	all   []*Host
}

// Mount launches every executor in execs, registers each for the services
// and the settings namespace its Describe names, and refuses the set, with
// nothing left running, when two of them provide the same service or take
// the same namespace (bash-local and pwsh-local, say) or none provides the
// shell. opts.Executor is ignored; the other options apply to each launch.
func Mount(ctx context.Context, execs []Executor, opts Options) (*Mounted, error) {
	m := &Mounted{}
	services := registry.NewServices()
	fail := func(err error) (*Mounted, error) {
		_ = m.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	for _, ex := range execs {
		o := opts
		o.Executor = ex
		h, err := launch(ctx, o, false)
		if err != nil {
			return fail(err)
		}
		m.all = append(m.all, h)
		d := h.Description()
		if err := services.Register(registry.Provider{
			Name: providerName(d, ex), Services: d.Services, SettingsNamespace: d.SettingsNamespace,
		}); err != nil {
			return fail(fmt.Errorf("host: mounting %s: %w", ex.Path, err))
		}
		if m.shell == nil && slices.Contains(d.Services, pluginapi.ServiceShell) {
			m.shell = h
		}
	}
	if m.shell == nil {
		return fail(ErrNoShell)
	}
	return m, nil
}

// providerName names a provider for a person: its own name, and where it
// came from.
func providerName(d pluginapi.Description, ex Executor) string {
	return fmt.Sprintf("%s (%s)", d.Name, ex.Path)
}

// Shell is the mounted shell executor's Host.
func (m *Mounted) Shell() *Host { return m.shell }

// Close closes every mounted executor. Safe to call twice.
func (m *Mounted) Close(ctx context.Context) error {
	var errs []error
	for _, h := range m.all {
		errs = append(errs, h.Close(ctx))
	}
	return errors.Join(errs...)
}
