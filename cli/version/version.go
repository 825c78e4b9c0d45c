// Package version is `gw version`.
package version

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
)

// Info is what `gw version -o json|yaml` prints.
type Info struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

// Options configure `gw version`.
type Options struct {
	IO     *cmdutil.IOStreams
	Output cmdutil.Output
}

// NewCmd builds `gw version`, which prints the version and never
// touches a database.
func NewCmd(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print gw's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}

func versionRun(opts *Options) error {
	v := Info{Version: cmdutil.Version(), Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if opts.Output.Format == cmdutil.OutputTable {
		// One line for people and bug reports, on a terminal or not.
		_, err := fmt.Fprintf(opts.IO.Out, "gw %s (%s, %s/%s)\n", v.Version, v.Go, v.OS, v.Arch)
		return err
	}
	return opts.Output.Print(opts.IO, v, nil)
}
