package api

import (
	"bytes"
	"encoding/csv"
	"net/http"
	"time"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// focusRoutes: the FOCUS cost export (issue 34, docs/focus.md).
func (s *Server) focusRoutes() []*Route {
	return []*Route{
		{Method: "GET", Path: "/api/v1/organizations/{org_id}/reports/focus", Tag: "Reports",
			Summary: "FOCUS cost export: one charge row per UTC day, workspace, model, price class and tag set, in FOCUS 1.3 or 1.4 columns; format=csv answers text/csv with the column names as the header",
			Perms:   []auth.Permission{auth.UsageRead}, Result: []wire.FocusRow{}, CSV: true, Handle: s.focusExport,
			Query: []QueryParam{
				{Name: "start_date", Description: "First UTC day, YYYY-MM-DD.", Format: "date", Required: true},
				{Name: "end_date", Description: "Last UTC day (inclusive), YYYY-MM-DD.", Format: "date", Required: true},
				{Name: "version", Description: "FOCUS version of the columns: 1.3 (default) or 1.4.", Enum: wire.FocusVersions},
				{Name: "format", Description: "json (default: {data: [rows]}) or csv.", Enum: wire.FocusFormats},
			}},
	}
}

func (s *Server) focusExport(r *Request) (any, error) {
	q := r.R.URL.Query()
	var errs validate.Errors
	loc := func(name string) validate.Loc { return validate.Loc{"query", name} }
	version, format := "1.3", "json"
	if q.Has("version") {
		version, _ = validate.Literal(q.Get("version"), loc("version"), wire.FocusVersions, &errs)
	}
	if q.Has("format") {
		format, _ = validate.Literal(q.Get("format"), loc("format"), wire.FocusFormats, &errs)
	}
	for _, name := range []string{"start_date", "end_date"} {
		if !q.Has(name) {
			errs.Add(loc(name), "missing", "Field required", nil, nil)
		}
	}
	if errs.Len() > 0 {
		return nil, errs.Err()
	}
	w, err := usage.WindowFor("custom", time.UTC, time.Now(), usage.Custom{StartDate: q.Get("start_date"), EndDate: q.Get("end_date")})
	if err != nil {
		return nil, validate.Single(loc("start_date"), "value_error", "Value error, "+err.Error(), q.Get("start_date"), nil)
	}
	header, rows, err := usage.Focus(r.ctx, s.store, usage.FocusQuery{OrgID: r.Org.ID, OrgName: r.Org.Name, Window: w, Version: version})
	if err != nil {
		return nil, err
	}
	if format == "json" {
		return usage.FocusJSON(version, header, rows)
	}
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	_ = cw.Write(header)
	rec := make([]string, len(header))
	for _, row := range rows {
		for i, v := range row {
			rec[i] = ""
			if v != nil {
				rec[i] = *v
			}
		}
		_ = cw.Write(rec)
	}
	cw.Flush()
	r.W.Header().Set("Content-Type", "text/csv; charset=utf-8")
	r.W.Header().Set("Content-Disposition", `attachment; filename="focus-`+version+`-`+q.Get("start_date")+`-`+q.Get("end_date")+`.csv"`)
	r.W.WriteHeader(http.StatusOK)
	_, _ = r.W.Write(b.Bytes())
	return answered{}, nil
}
