package localexec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// Settings are the executor's section of the settings (the "shell"
// namespace): the defaults and caps Resolve applies, termination, spilling,
// and the credential scrub. Zero fields keep DefaultSettings.
type Settings struct {
	// DefaultTimeoutMs is the timeout of a request without one;
	// MaxTimeoutMs caps every request's.
	DefaultTimeoutMs int64 `json:"defaultTimeoutMs,omitempty"`
	MaxTimeoutMs     int64 `json:"maxTimeoutMs,omitempty"`
	// DefaultOutputBytes and MaxOutputBytes bound the output collected per
	// stream, by default and at most.
	DefaultOutputBytes int64 `json:"defaultOutputBytes,omitempty"`
	MaxOutputBytes     int64 `json:"maxOutputBytes,omitempty"`
	// KillGraceMs is the time between SIGTERM and SIGKILL.
	KillGraceMs int64 `json:"killGraceMs,omitempty"`
	// SpillCapBytes caps each spill file; past it the stream is counted but
	// no longer kept.
	SpillCapBytes int64 `json:"spillCapBytes,omitempty"`
	// SpillDir is where spill files go; empty means a private directory of
	// the executor's own under the system's temporary directory, removed on
	// Close. A directory given here belongs to the caller.
	SpillDir string `json:"spillDir,omitempty"`
	// BackgroundBufferBytes bounds the unread output a background process
	// keeps in memory per stream; past it reads are lossy.
	BackgroundBufferBytes int64 `json:"backgroundBufferBytes,omitempty"`
	// ScrubCredentials removes inherited variables whose name matches
	// CredentialPatterns, or whose value looks like a credential (a token
	// with a known prefix, a URL with a password: credentialValue), except
	// those in CredentialAllowlist (default true).
	ScrubCredentials    *bool    `json:"scrubCredentials,omitempty"`
	CredentialPatterns  []string `json:"credentialPatterns,omitempty"`
	CredentialAllowlist []string `json:"credentialAllowlist,omitempty"`
}

// MaxKillGraceMs caps the grace between SIGTERM and SIGKILL: a process that
// ignores SIGTERM must not hold a run, or Close, for long.
const MaxKillGraceMs = 60_000

// DefaultSettings are the design's: 120 s by default, 600 s at most, 30,000
// bytes collected per stream (1 MiB at most), 2 s between SIGTERM and
// SIGKILL, spill files of up to 1 GiB, credentials scrubbed.
var DefaultSettings = Settings{
	DefaultTimeoutMs:      120_000,
	MaxTimeoutMs:          600_000,
	DefaultOutputBytes:    30_000,
	MaxOutputBytes:        1 << 20,
	KillGraceMs:           2_000,
	SpillCapBytes:         1 << 30,
	BackgroundBufferBytes: 1 << 20,
	CredentialPatterns:    CredentialPatterns,
}

// SettingsSchemaProperties is the JSON Schema "properties" of Settings, for
// an executor's SettingsSchema.
const SettingsSchemaProperties = `{
    "defaultTimeoutMs": {"type": "integer", "minimum": 1, "default": 120000, "description": "timeout of a command that asks for none"},
    "maxTimeoutMs": {"type": "integer", "minimum": 1, "default": 600000, "description": "longest timeout a command may ask for"},
    "defaultOutputBytes": {"type": "integer", "minimum": 1, "default": 30000, "description": "output collected per stream by default"},
    "maxOutputBytes": {"type": "integer", "minimum": 1, "maximum": 1048576, "default": 1048576, "description": "most output a command may ask to collect per stream"},
    "killGraceMs": {"type": "integer", "minimum": 1, "maximum": 60000, "default": 2000, "description": "time between SIGTERM and SIGKILL"},
    "spillCapBytes": {"type": "integer", "minimum": 1, "default": 1073741824, "description": "largest spill file per stream"},
    "spillDir": {"type": "string", "description": "directory for spill files (default: a private temporary one)"},
    "backgroundBufferBytes": {"type": "integer", "minimum": 1, "default": 1048576, "description": "unread output a background process keeps per stream"},
    "scrubCredentials": {"type": "boolean", "default": true, "description": "remove credential-like inherited variables"},
    "credentialPatterns": {"type": "array", "items": {"type": "string"}, "description": "names to scrub; * at either end"},
    "credentialAllowlist": {"type": "array", "items": {"type": "string"}, "description": "names never scrubbed"}
  }`

// withDefaults fills zero fields from DefaultSettings.
func (s Settings) withDefaults() Settings {
	d := DefaultSettings
	pick := func(v, def int64) int64 {
		if v > 0 {
			return v
		}
		return def
	}
	out := s
	out.DefaultTimeoutMs = pick(s.DefaultTimeoutMs, d.DefaultTimeoutMs)
	out.MaxTimeoutMs = pick(s.MaxTimeoutMs, d.MaxTimeoutMs)
	out.DefaultOutputBytes = pick(s.DefaultOutputBytes, d.DefaultOutputBytes)
	out.MaxOutputBytes = pick(s.MaxOutputBytes, d.MaxOutputBytes)
	out.KillGraceMs = pick(s.KillGraceMs, d.KillGraceMs)
	out.SpillCapBytes = pick(s.SpillCapBytes, d.SpillCapBytes)
	out.BackgroundBufferBytes = pick(s.BackgroundBufferBytes, d.BackgroundBufferBytes)
	if out.CredentialPatterns == nil {
		out.CredentialPatterns = d.CredentialPatterns
	}
	return out
}

// scrubs reports whether the inherited environment is scrubbed.
func (s Settings) scrubs() bool { return s.ScrubCredentials == nil || *s.ScrubCredentials }

// check rejects settings that contradict themselves.
func (s Settings) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", pluginapi.ErrInvalidSettings, fmt.Sprintf(format, args...))
	}
	switch {
	case s.DefaultTimeoutMs > s.MaxTimeoutMs:
		return bad("defaultTimeoutMs %d exceeds maxTimeoutMs %d", s.DefaultTimeoutMs, s.MaxTimeoutMs)
	case s.DefaultOutputBytes > s.MaxOutputBytes:
		return bad("defaultOutputBytes %d exceeds maxOutputBytes %d", s.DefaultOutputBytes, s.MaxOutputBytes)
	case s.KillGraceMs > MaxKillGraceMs:
		return bad("killGraceMs %d exceeds %d", s.KillGraceMs, MaxKillGraceMs)
	case s.MaxOutputBytes > DefaultSettings.MaxOutputBytes:
		return bad("maxOutputBytes %d exceeds %d, the most a result carries", s.MaxOutputBytes, DefaultSettings.MaxOutputBytes)
	}
	if s.SpillDir != "" {
		fi, err := os.Stat(s.SpillDir)
		if err != nil || !fi.IsDir() {
			return bad("spillDir %s is not a directory", s.SpillDir)
		}
	}
	return nil
}

// Configure applies the executor's settings section, given as JSON. Unknown
// keys and wrong types are refused, naming the key; fields not given keep
// their defaults.
func (e *Executor) Configure(ctx context.Context, raw []byte) error {
	var s Settings
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return fmt.Errorf("%w: %s: %v", pluginapi.ErrInvalidSettings, e.cfg.Name, err)
		}
	}
	merged := mergeSettings(e.cfg.Defaults, s).withDefaults()
	if err := merged.check(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.current = merged
	return nil
}

// mergeSettings lays the fields set in over on base.
func mergeSettings(base, over Settings) Settings {
	out := base
	set := func(dst *int64, v int64) {
		if v != 0 {
			*dst = v
		}
	}
	set(&out.DefaultTimeoutMs, over.DefaultTimeoutMs)
	set(&out.MaxTimeoutMs, over.MaxTimeoutMs)
	set(&out.DefaultOutputBytes, over.DefaultOutputBytes)
	set(&out.MaxOutputBytes, over.MaxOutputBytes)
	set(&out.KillGraceMs, over.KillGraceMs)
	set(&out.SpillCapBytes, over.SpillCapBytes)
	set(&out.BackgroundBufferBytes, over.BackgroundBufferBytes)
	if over.SpillDir != "" {
		out.SpillDir = over.SpillDir
	}
	if over.ScrubCredentials != nil {
		out.ScrubCredentials = over.ScrubCredentials
	}
	if over.CredentialPatterns != nil {
		out.CredentialPatterns = over.CredentialPatterns
	}
	if over.CredentialAllowlist != nil {
		out.CredentialAllowlist = over.CredentialAllowlist
	}
	return out
}

// settings are the settings in force.
func (e *Executor) settings() Settings {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.current
}

// Settings are the settings in force, defaults filled in.
func (e *Executor) Settings() Settings { return e.settings() }

// SettingsSchemaFor is the JSON Schema of an executor's settings section,
// titled title: the settings every local executor shares, and extra, the
// JSON of its own properties (`"name": {...}, ...`; "" for none).
func SettingsSchemaFor(title, extra string) string {
	props := strings.TrimSpace(SettingsSchemaProperties)
	if extra != "" {
		props = strings.TrimSuffix(props, "}") + ",\n    " + extra + "\n  }"
	}
	quoted, _ := json.Marshal(title)
	return `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": ` + string(quoted) + `,
  "type": "object",
  "additionalProperties": false,
  "properties": ` + props + `
}`
}

// SplitSettings takes keys out of a settings section (JSON; empty or null
// for none): an executor with settings of its own reads them, and hands
// the rest to Executor.Configure.
func SplitSettings(raw []byte, keys ...string) (own map[string]json.RawMessage, rest []byte, err error) {
	all := map[string]json.RawMessage{}
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if err := json.Unmarshal(trimmed, &all); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", pluginapi.ErrInvalidSettings, err)
		}
	}
	own = map[string]json.RawMessage{}
	for _, k := range keys {
		if v, ok := all[k]; ok {
			own[k] = v
			delete(all, k)
		}
	}
	rest, err = json.Marshal(all)
	return own, rest, err
}
