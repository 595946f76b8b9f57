package registry

import (
	"errors"
	"strings"
	"testing"
)

func TestServicesRefuseASecondProviderNamingBoth(t *testing.T) {
	r := NewServices()
	if err := r.Register(Provider{Name: "bash-local", Services: []string{"shell"}, SettingsNamespace: "shell"}); err != nil {
		t.Fatal(err)
	}
	err := r.Register(Provider{Name: "pwsh-local", Services: []string{"shell"}, SettingsNamespace: "shell"})
	if !errors.Is(err, ErrDuplicateService) {
		t.Fatalf("second shell provider: %v, want ErrDuplicateService", err)
	}
	for _, want := range []string{`"shell"`, "bash-local", "pwsh-local"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if got := r.Provider("shell"); got != "bash-local" {
		t.Errorf("shell is provided by %q after the refusal, want bash-local", got)
	}
}

func TestServicesRefuseATakenNamespace(t *testing.T) {
	r := NewServices()
	if err := r.Register(Provider{Name: "bash-local", Services: []string{"shell"}, SettingsNamespace: "shell"}); err != nil {
		t.Fatal(err)
	}
	err := r.Register(Provider{Name: "odd", Services: []string{"other"}, SettingsNamespace: "shell"})
	if !errors.Is(err, ErrDuplicateNamespace) || !strings.Contains(err.Error(), "bash-local") || !strings.Contains(err.Error(), "odd") {
		t.Fatalf("taken namespace: %v, want ErrDuplicateNamespace naming both", err)
	}
	if got := r.Provider("other"); got != "" {
		t.Errorf("a refused provider's service was registered (by %q)", got)
	}
}

func TestServicesRefuseAnInvalidProvider(t *testing.T) {
	r := NewServices()
	for _, p := range []Provider{{Services: []string{"shell"}}, {Name: "x"}, {Name: "x", Services: []string{""}}} {
		if err := r.Register(p); !errors.Is(err, ErrInvalidProvider) {
			t.Errorf("Register(%+v): %v, want ErrInvalidProvider", p, err)
		}
	}
}
