// Package registry knows what a host may mount: the Services registry, where
// each provider registers the services it offers and the settings namespace
// it takes (a second provider of either is refused, naming both), and the
// Catalog of executor plugin binaries found in a plugin directory, with
// their SHA-256 checksums verified before launch; and CheckBinary, which
// refuses a binary that someone other than its owner could replace (one
// beneath a directory commands may write, or in a directory others may write)
// before a host runs it unconfined.
package registry
