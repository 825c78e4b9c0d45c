package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at release time with -ldflags "-X github.com/gw-gateway/gw/cli.version=…".
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

// NewCmdVersion prints the version; it never touches a database.
func NewCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print gw's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(f.IO.Out, "gw %s (%s, %s/%s)\n", Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
