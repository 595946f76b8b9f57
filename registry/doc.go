// Package registry knows what a host may mount: the Services registry, where
// each provider registers the services it offers and the settings namespace
// it takes (a second provider of either is refused, naming both), and the
// Catalog of executor plugin binaries found in a plugin directory, with
// their SHA-256 checksums verified before launch.
package registry
