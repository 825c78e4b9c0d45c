package api

import (
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/validate"
)

// A catalog edit that moves credentials following a provider's catalog URL
// to a new one needs ?confirm_base_url_change=true and
// provider-credentials.manage (backend.WriteCatalog).

const confirmBaseURLParam = backend.ConfirmBaseURLParam

var confirmBaseURLQuery = QueryParam{Name: confirmBaseURLParam,
	Description: "true to change the base URL of a provider that credentials without a base_url of their own follow " +
		"(their secrets then go to the new URL); needs provider-credentials.manage as well as catalog.manage",
	Enum: []string{"true", "false"}}

// confirmedMoves reads ?confirm_base_url_change: true confirms moving
// credentials that follow a provider's catalog URL (backend.WriteCatalog
// holds the rule); a value other than true or false is a 422 even when
// nothing would move.
func confirmedMoves(r *Request) (bool, error) {
	raw, ok := r.R.URL.Query()[confirmBaseURLParam]
	if !ok {
		return false, nil
	}
	var errs validate.Errors
	v, good := validate.Literal(raw[0], validate.Loc{"query", confirmBaseURLParam}, []string{"true", "false"}, &errs)
	if !good {
		return false, errs.Err()
	}
	return v == "true", nil
}
