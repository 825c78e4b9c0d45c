package cmdutil

import "runtime/debug"

// version is set at release time with -ldflags "-X github.com/gw-gateway/gw/cli/cmdutil.version=…".
var version = ""

// Version is gw's version: the release tag, or the module version, or "dev".
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
