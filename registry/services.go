package registry

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Errors of the services registry.
var (
	// ErrDuplicateService: a second provider offered a service already
	// provided.
	ErrDuplicateService = errors.New("registry: service already provided")
	// ErrDuplicateNamespace: a second provider took a settings namespace
	// already taken.
	ErrDuplicateNamespace = errors.New("registry: settings namespace already registered")
	// ErrInvalidProvider: a provider without a name or offering nothing.
	ErrInvalidProvider = errors.New("registry: invalid provider")
)

// Provider is something that offers services to a host: an executor plugin.
type Provider struct {
	// Name identifies the provider in errors ("bash-local").
	Name string
	// Services are the services it offers ("shell").
	Services []string
	// SettingsNamespace is the settings section it takes, if any ("shell").
	SettingsNamespace string
}

// Services records which provider offers each service and takes each
// settings namespace. It is safe for concurrent use.
type Services struct {
	mu         sync.Mutex
	services   map[string]string // service → provider
	namespaces map[string]string // namespace → provider
}

// NewServices returns an empty registry.
func NewServices() *Services {
	return &Services{services: map[string]string{}, namespaces: map[string]string{}}
}

// Register records p, or refuses it whole when one of its services or its
// namespace is already another provider's: the error names the service (or
// namespace) and both providers.
func (r *Services) Register(p Provider) error {
	if p.Name == "" || len(p.Services) == 0 || slices.Contains(p.Services, "") {
		return fmt.Errorf("%w: %q must have a name and offer named services (it offers %q)", ErrInvalidProvider, p.Name, p.Services)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range p.Services {
		if other, taken := r.services[s]; taken {
			return fmt.Errorf("%w: %q is provided by %s; %s provides it too", ErrDuplicateService, s, other, p.Name)
		}
	}
	if ns := p.SettingsNamespace; ns != "" {
		if other, taken := r.namespaces[ns]; taken {
			return fmt.Errorf("%w: %q is taken by %s; %s takes it too", ErrDuplicateNamespace, ns, other, p.Name)
		}
	}
	for _, s := range p.Services {
		r.services[s] = p.Name
	}
	if p.SettingsNamespace != "" {
		r.namespaces[p.SettingsNamespace] = p.Name
	}
	return nil
}

// Provider names the provider of service, or "" when none is registered.
func (r *Services) Provider(service string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.services[service]
}
