package client

import (
	"context"
	"net/url"
)

// FocusExportCSV reads an organization's FOCUS cost export for the UTC
// days [startDate, endDate] (YYYY-MM-DD, inclusive) in the given FOCUS
// version (1.3 or 1.4), as CSV with the column names as the header.
func (c *Client) FocusExportCSV(ctx context.Context, org, startDate, endDate, version string) ([]byte, error) {
	path := OrgScope(org).prefix() + "/reports/focus"
	q := url.Values{"start_date": {startDate}, "end_date": {endDate}, "version": {version}, "format": {"csv"}}
	resp, err := c.r.R().SetContext(ctx).SetQueryParamsFromValues(q).Execute("GET", path)
	if err != nil {
		return nil, c.transportError("GET", path, err)
	}
	if resp.IsError() {
		return nil, decodeError(resp)
	}
	return resp.Body(), nil
}
