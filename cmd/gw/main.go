// Command gw is the gw LLM gateway: server and client in one binary.
package main

import (
	"os"

	"github.com/gw-gateway/gw/cli"
)

func main() { os.Exit(cli.Main()) }
