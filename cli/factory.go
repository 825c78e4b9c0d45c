package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
)

// Factory hands commands their dependencies. Tests build one with fake
// streams; configuration comes from flags and the GW_ environment.
type Factory struct {
	IO *IOStreams
}

// newViper is the one configuration reader of a command: flags bound, GW_
// environment variables (dashes as underscores) behind them, defaults last.
func newViper(cmd *cobra.Command) (*viper.Viper, error) {
	v := viper.New()
	v.SetEnvPrefix("GW")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if err := v.BindPFlags(cmd.Flags()); err != nil {
		return nil, err
	}
	return v, nil
}
