package cli

import "github.com/gw-gateway/gw/cli/cmdutil"

// Version is the build's version (cmdutil's), which the root, completion
// and the tests read.
var Version = cmdutil.Version
