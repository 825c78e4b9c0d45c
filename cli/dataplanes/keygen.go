package dataplanes

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/server/secrets"
)

// KeygenOptions configure gw data-planes keygen.
type KeygenOptions struct {
	IO *cmdutil.IOStreams
	// Out is the file to write the key to; empty prints it.
	Out string
}

// NewCmdKeygen builds `gw data-planes keygen`: a data plane's key
// pair made before the data plane starts, so that its private key can live
// outside its data dir (a secret store, GW_DATA_PLANE_KEY, --key-file).
func NewCmdKeygen(f *cmdutil.Factory, runF func(context.Context, *KeygenOptions) error) *cobra.Command {
	opts := &KeygenOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "keygen",
		Short: "Make a data plane's key pair, to keep its private key outside its data dir",
		Long: `Make a data plane's key pair. The private key (hex) goes to stdout, or to
the file named by --out (mode 0600; an existing file is not overwritten);
its fingerprint goes to stderr, to compare when enrolling the data plane.

Give the key to the data plane in GW_DATA_PLANE_KEY (from a secret store),
or keep the file outside the data dir and pass it with --key-file: a copy of
the data dir then holds no key that opens the provider secrets cached in it.
Works offline; talks to no server.`,
		Example: `  gw data-planes keygen --out /etc/gw/data-plane.key
  gw data-planes keygen    # prints the key: GW_DATA_PLANE_KEY=$(...) for gw serve --role data-plane`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return keygenRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Out, "out", "", "write the private key to this file (mode 0600) instead of stdout")
	return cmd
}

func keygenRun(opts *KeygenOptions) error {
	var key *secrets.DataPlaneKey
	if opts.Out != "" {
		if _, err := os.Stat(opts.Out); err == nil {
			return fmt.Errorf("%s exists; not overwritten (a data plane enrolled with that key would lose its enrollment)", opts.Out)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		k, _, err := secrets.LoadDataPlaneKey(opts.Out)
		if err != nil {
			return fmt.Errorf("write %s: %w", opts.Out, err)
		}
		key = k
	} else {
		k, err := secrets.GenerateDataPlaneKey()
		if err != nil {
			return err
		}
		text, err := k.Encode()
		if err != nil {
			return err
		}
		fmt.Fprintln(opts.IO.Out, text)
		key = k
	}
	fmt.Fprintln(opts.IO.ErrOut, "fingerprint "+key.Public().Fingerprint())
	return nil
}
