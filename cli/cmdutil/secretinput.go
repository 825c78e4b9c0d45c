package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// SecretInput says where a secret (a provider API key, a password) comes
// from. There is deliberately no flag that takes the secret itself: a
// value on the command line lands in shell history and in every `ps`
// listing on the machine.
type SecretInput struct {
	// File is read whole; a trailing newline is dropped.
	File string
	// Stdin reads the secret from standard input.
	Stdin bool
}

// AddSecretInputFlags adds --<noun>-file and --<noun>-stdin.
func AddSecretInputFlags(cmd *cobra.Command, in *SecretInput, noun, what string) {
	cmd.Flags().StringVar(&in.File, noun+"-file", "", "read the "+what+" from this file")
	cmd.Flags().BoolVar(&in.Stdin, noun+"-stdin", false, "read the "+what+" from standard input")
}

// Given reports whether the secret is to be read from a file or stdin
// rather than prompted for.
func (in SecretInput) Given() bool { return in.File != "" || in.Stdin }

// Read returns the secret from the file, stdin, or else a prompt without
// echo on the terminal. noun names the flags in the error given when there
// is no terminal to prompt on.
func (in SecretInput) Read(ios *IOStreams, noun, prompt string) (string, error) {
	var raw []byte
	var err error
	switch {
	case in.File != "" && in.Stdin:
		return "", UsageError{fmt.Errorf("--%s-file and --%s-stdin cannot be used together", noun, noun)}
	case in.File != "":
		raw, err = os.ReadFile(in.File)
		if err != nil {
			return "", fmt.Errorf("read --%s-file: %w", noun, err)
		}
	case in.Stdin:
		raw, err = io.ReadAll(ios.In)
		if err != nil {
			return "", fmt.Errorf("read %s from standard input: %w", noun, err)
		}
	default:
		file, ok := ios.In.(*os.File)
		if !ok || !ios.CanPrompt() {
			return "", UsageError{fmt.Errorf("no terminal to prompt for the %s on: pass --%s-file FILE or --%s-stdin", noun, noun, noun)}
		}
		fmt.Fprint(ios.ErrOut, prompt)
		raw, err = term.ReadPassword(int(file.Fd()))
		fmt.Fprintln(ios.ErrOut)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", noun, err)
		}
	}
	// Files and pipes usually end in a newline that is no part of the
	// secret; spaces inside it are kept.
	s := strings.TrimRight(string(raw), "\r\n")
	if s == "" {
		return "", UsageError{errors.New("the " + noun + " is empty")}
	}
	return s, nil
}
