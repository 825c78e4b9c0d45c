package catalog

import (
	_ "embed"
	"sync"
)

// defaultYAML is the catalog a fresh installation starts with. It is a data
// file rather than Go literals so that it reads like, and is checked exactly
// as, a file an operator imports.
//
//go:embed default.yaml
var defaultYAML []byte

var parseDefault = sync.OnceValues(func() (*Catalog, error) { return Parse(defaultYAML) })

// Default returns the embedded catalog. It is parsed once per process; each
// call returns a deep copy, so a caller may edit its catalog without any
// other caller seeing the change. An error means the binary was built with
// an invalid default.yaml, which the package tests prevent.
func Default() (*Catalog, error) {
	c, err := parseDefault()
	if err != nil {
		return nil, err
	}
	return c.Clone(), nil
}

// DefaultYAML returns the embedded catalog file as shipped, comments
// included, as a starting point for an operator's own catalog.
func DefaultYAML() []byte {
	return append([]byte(nil), defaultYAML...)
}
