package cmdutil

import "github.com/gw-gateway/gw/client"

// WorkspaceClient is a logged-in client with the effective organization
// and workspace, for the commands that act in one workspace (policies,
// budgets): either missing is the error.
func WorkspaceClient(get func() (*client.Client, Settings, error)) (*client.Client, string, string, error) {
	c, s, err := get()
	if err != nil {
		return nil, "", "", err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return nil, "", "", err
	}
	return c, org, ws, nil
}
