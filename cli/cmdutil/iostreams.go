package cmdutil

import (
	"io"
	"os"
)

// IOStreams carries a command's input and outputs, so tests can capture
// them: data goes to Out, progress and prompts to ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// ForceTerminal makes tables aligned as on a terminal (tests).
	ForceTerminal bool
	// Width is the terminal's width in columns (tests); 0 reads it from
	// Out when Out is a terminal.
	Width int
}

// SystemIO returns the process's standard streams.
func SystemIO() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}
