// Package config is the CLI's configuration file: named contexts (a server,
// a management key, a default organization and workspace), kubectl-style,
// in $XDG_CONFIG_HOME/gw/config.yaml with mode 0600 (it holds keys).
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"go.yaml.in/yaml/v3"
)

// Context is one server and credential.
type Context struct {
	Server    string `yaml:"server"`
	Token     string `yaml:"token,omitempty"`
	KeyID     string `yaml:"key_id,omitempty"`
	Org       string `yaml:"org,omitempty"`
	Workspace string `yaml:"workspace,omitempty"`
	// OrgName and WorkspaceName are how gw login named them, for people
	// (gw context list); requests use Org and Workspace, which do not
	// change when a slug does.
	OrgName       string `yaml:"org_name,omitempty"`
	WorkspaceName string `yaml:"workspace_name,omitempty"`
}

// File is the whole configuration file.
type File struct {
	CurrentContext string              `yaml:"current-context,omitempty"`
	Contexts       map[string]*Context `yaml:"contexts,omitempty"`

	path string
}

// DefaultPath is $XDG_CONFIG_HOME/gw/config.yaml (~/.config/gw/config.yaml).
func DefaultPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "."
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "gw", "config.yaml")
}

// Load reads the file at path; a missing file is an empty configuration.
func Load(path string) (*File, error) {
	f := &File{Contexts: map[string]*Context{}, path: path}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if err := yaml.Unmarshal(raw, f); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if f.Contexts == nil {
		f.Contexts = map[string]*Context{}
	}
	f.path = path
	return f, nil
}

// Path is where the file lives.
func (f *File) Path() string { return f.path }

// Save writes the file atomically with mode 0600.
func (f *File) Save() error {
	raw, err := yaml.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("create config dir: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".config-*")
	if err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write config: %w", err)
	}
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return fmt.Errorf("write config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// Current returns the current context, or nil.
func (f *File) Current() *Context {
	return f.Contexts[f.CurrentContext]
}

// Names lists the contexts, sorted.
func (f *File) Names() []string {
	out := make([]string, 0, len(f.Contexts))
	for n := range f.Contexts {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Use makes name the current context.
func (f *File) Use(name string) error {
	if _, ok := f.Contexts[name]; !ok {
		return fmt.Errorf("no context named %q (have: %v)", name, f.Names())
	}
	f.CurrentContext = name
	return nil
}

// Delete removes a context; deleting the current one leaves none current.
func (f *File) Delete(name string) error {
	if _, ok := f.Contexts[name]; !ok {
		return fmt.Errorf("no context named %q", name)
	}
	delete(f.Contexts, name)
	if f.CurrentContext == name {
		f.CurrentContext = ""
	}
	return nil
}
