package main

import (
	"encoding/hex"
	"errors"

	"github.com/dsh-host/dsh-host/registry"
)

// hexBytes decodes a hex checksum.
func hexBytes(s string) ([]byte, error) { return hex.DecodeString(s) }

// isNotInCatalog reports whether err says the catalog has no such executor.
func isNotInCatalog(err error) bool { return errors.Is(err, registry.ErrNotInCatalog) }
