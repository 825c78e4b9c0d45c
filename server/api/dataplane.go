package api

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// heartbeatStale is how long after its last heartbeat a data plane is
// reported stale (a few missed beats).
const heartbeatStale = 60 * time.Second

func (s *Server) dataPlaneRoutes() []*Route {
	const tag = "Data Plane API"
	return append([]*Route{
		{Method: "GET", Path: "/api/v1/data-plane/bundles", Tag: tag, Statuses: []int{304, 404},
			Summary: "The latest signed bundle of each organization the data plane is enrolled for, secrets sealed to its key; send the ETag back in If-None-Match for a 304 when nothing changed",
			Perms:   []auth.Permission{auth.BundlesRead}, Result: wire.DataPlaneBundles{}, Handle: s.pollBundles,
			Query: []QueryParam{{Name: "data_plane_id", Description: "The enrolled data plane polling.", Required: true}}},
		{Method: "POST", Path: "/api/v1/data-plane/usage-events", Tag: tag,
			Summary: "Ingest a batch of usage events (idempotent on event id)",
			Perms:   []auth.Permission{auth.UsageIngest}, Body: wire.UsageIngest{}, Result: wire.UsageIngestResult{}, Handle: s.ingestUsage},
		{Method: "POST", Path: "/api/v1/data-plane/heartbeats", Tag: tag, Statuses: []int{404}, Summary: "Record a data plane's heartbeat",
			Perms: []auth.Permission{auth.DataPlanesHeartbeat}, Body: wire.Heartbeat{}, Result: wire.DataPlaneInstance{}, Handle: s.heartbeat},
		{Method: "GET", Path: "/api/v1/instance/data-planes", Tag: "Data Plane Instances",
			Summary: "Data planes and their state (complete set)",
			Perms:   []auth.Permission{auth.DataPlanesRead}, Result: []wire.DataPlaneInstance{}, Handle: s.listDataPlanes},
	}, s.enrollmentRoutes()...)
}

// notModified answers 304 with no body.
type notModified struct{}

var (
	heartbeatIDRule = validate.StringRule{Min: 1, Max: 100, Pattern: regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)}
	// Counts are bounded as the providers' adapters bound them, so sums
	// over years of events fit the report's int64.
	nonNegative = validate.IntRule{Min: validate.Bound(0), Max: validate.Bound(providers.MaxTokenCount)}
)

// ingestUsage decodes a batch; usage.Ingest checks and stores it. A batch
// as gw's data planes write it is decoded in one pass (decodeUsageIngest);
// any other, and every batch with a problem, is read the strict generic
// way, which words every answer.
func (s *Server) ingestUsage(r *Request) (any, error) {
	data, err := r.readBody()
	if err != nil {
		return nil, err
	}
	events, ok := decodeUsageIngest(data)
	if !ok {
		if events, err = readUsageIngest(data); err != nil {
			return nil, err
		}
	}
	reach, err := s.ingestReach(r)
	if err != nil {
		return nil, err
	}
	return usage.Ingest(r.ctx, s.store, reach, events)
}

// readUsageIngest reads a batch strictly through the generic tree, every
// problem reported at its place.
func readUsageIngest(data []byte) ([]wire.UsageEventIn, error) {
	var events []wire.UsageEventIn
	err := readBodyObject(data, func(o *validate.Object) {
		v, ok := o.Require("events")
		if !ok {
			return
		}
		validate.List(v, o.Loc().With("events"), validate.ListRule{Min: 1, Max: usage.MaxIngestBatch}, o.Errors(), func(item any, loc validate.Loc) {
			if e, ok := readUsageEvent(item, loc, o.Errors()); ok {
				events = append(events, e)
			}
		})
	})
	return events, err
}

// ingestReach is where the caller may record usage. The route takes
// instance-scope credentials only; a data plane's key is narrowed to the
// organizations it was enrolled for.
func (s *Server) ingestReach(r *Request) (usage.Reach, error) {
	everywhere := usage.Reach{Everywhere: true}
	if r.P.Key == nil {
		return everywhere, nil
	}
	orgs, enrolled, err := s.store.EnrollmentReach(r.ctx, r.P.Key.ID)
	if err != nil || !enrolled {
		return everywhere, err
	}
	return everywhere.Within(orgs), nil
}

// readUsageEvent reads one shipped event strictly: the members and their
// JSON types here, then usage.Check's rules, every problem reported.
func readUsageEvent(v any, loc validate.Loc, errs *validate.Errors) (wire.UsageEventIn, bool) {
	o := validate.ReadObject(v, loc, errs)
	if o == nil {
		return wire.UsageEventIn{}, false
	}
	before := errs.Len()
	r := eventReader{o: o, loc: loc, errs: errs}
	e := r.counted()
	r.attribution(&e)
	r.metering(&e)
	o.Close()
	reportEventRules(e, loc, errs, before)
	return e, errs.Len() == before
}

// eventReader reads one shipped event's members, each problem reported at
// its place. Optional members may be null, the same as absent.
type eventReader struct {
	o    *validate.Object
	loc  validate.Loc
	errs *validate.Errors
}

func (r eventReader) uuid(name string) uuid.UUID {
	if v, ok := r.o.Require(name); ok {
		id, _ := validate.UUID(v, r.loc.With(name), r.errs)
		return id
	}
	return uuid.Nil
}

func (r eventReader) optUUID(name string) *uuid.UUID {
	if v, ok := r.o.Raw(name); ok && v != nil {
		if id, ok := validate.UUID(v, r.loc.With(name), r.errs); ok {
			return &id
		}
	}
	return nil
}

func (r eventReader) count(name string) int64 {
	if v, ok := r.o.Require(name); ok {
		n, _ := validate.Int(v, r.loc.With(name), validate.IntRule{}, r.errs)
		return n
	}
	return 0
}

func (r eventReader) optCount(name string) int64 {
	if v, ok := r.o.Raw(name); ok && v != nil {
		n, _ := validate.Int(v, r.loc.With(name), validate.IntRule{}, r.errs)
		return n
	}
	return 0
}

func (r eventReader) str(name string) string {
	if v, ok := r.o.Require(name); ok {
		s, _ := validate.String(v, r.loc.With(name), validate.StringRule{}, r.errs)
		return s
	}
	return ""
}

func (r eventReader) optStr(name string) *string {
	if v, ok := r.o.Raw(name); ok && v != nil {
		if s, ok := validate.String(v, r.loc.With(name), validate.StringRule{}, r.errs); ok {
			return &s
		}
	}
	return nil
}

// counted reads the members every event has: who, what, how much, when.
func (r eventReader) counted() wire.UsageEventIn {
	var e wire.UsageEventIn
	e.ID, e.OrgID, e.WorkspaceID = r.uuid("id"), r.uuid("org_id"), r.uuid("workspace_id")
	e.InferenceKeyID, e.ManagementKeyID, e.OwnerID = r.optUUID("inference_key_id"), r.optUUID("management_key_id"), r.optUUID("owner_id")
	e.ProviderCredentialID = r.optUUID("provider_credential_id")
	e.Model, e.Provider = r.str("model"), r.str("provider")
	e.InputTokens, e.OutputTokens = r.count("input_tokens"), r.count("output_tokens")
	e.CacheReadTokens, e.CacheWriteTokens = r.count("cache_read_tokens"), r.count("cache_write_tokens")
	e.LatencyMS = r.count("latency_ms")
	e.CostUSD, e.Status = r.str("cost_usd"), r.str("status")
	if v, ok := r.o.Require("occurred_at"); ok {
		e.OccurredAt, _ = validate.DateTime(v, r.loc.With("occurred_at"), r.errs)
	}
	return e
}

// attribution reads the members that say which request an event is and
// how it was served; older data planes send none.
func (r eventReader) attribution(e *wire.UsageEventIn) {
	e.RequestID, e.Endpoint, e.Reason = r.optStr("request_id"), r.optStr("endpoint"), r.optStr("reason")
	if m := r.optStr("requested_model"); m != nil {
		e.RequestedModel = *m
	}
	if v, ok := r.o.Raw("attempts"); ok && v != nil {
		e.Attempts = []wire.UsageAttempt{}
		validate.List(v, r.loc.With("attempts"), validate.ListRule{Max: usage.MaxAttempts}, r.errs, func(item any, aloc validate.Loc) {
			if a, ok := readUsageAttempt(item, aloc, r.errs); ok {
				e.Attempts = append(e.Attempts, a)
			}
		})
	}
}

// metering reads how the event was counted, priced and attributed to cost
// centres; older data planes count nothing themselves and record no
// provenance or tags.
func (r eventReader) metering(e *wire.UsageEventIn) {
	if src := r.optStr("usage_source"); src != nil {
		e.UsageSource = *src
	}
	e.CacheSavingUSD = r.optStr("cache_saving_usd")
	e.ServiceTier, e.BatchID = r.optStr("service_tier"), r.optStr("batch_id")
	e.ReasoningTokens, e.CacheWrite1hTokens = r.optCount("reasoning_tokens"), r.optCount("cache_write_1h_tokens")
	if v, ok := r.o.Raw("provenance"); ok && v != nil {
		e.Provenance = readProvenance(v, r.loc.With("provenance"), r.errs)
	}
	if v, ok := r.o.Raw("tags"); ok && v != nil {
		e.Tags = readTagsAt(v, r.loc.With("tags"), r.errs)
	}
	if v, ok := r.o.Raw("guardrails"); ok && v != nil {
		e.Guardrails = readGuardrailRecords(v, r.loc.With("guardrails"), r.errs)
	}
	// A tool call's arguments, for its audit row (mcp_audit_arguments):
	// an object, re-encoded; usage.Check bounds it.
	if v, ok := r.o.Raw("tool_arguments"); ok && v != nil {
		if _, isObject := v.(map[string]any); !isObject {
			r.errs.Add(r.loc.With("tool_arguments"), "dict_type", "Input should be a valid dictionary", v, nil)
		} else if raw, err := json.Marshal(v); err == nil {
			e.ToolArguments = raw
		}
	}
	e.ToolArgumentsBytes = r.optCount("tool_arguments_bytes")
}

// reportEventRules adds usage.Check's problems with the event. A member
// already reported (missing, or of the wrong JSON type) is not reported
// again; the others' problems all are.
func reportEventRules(e wire.UsageEventIn, loc validate.Loc, errs *validate.Errors, before int) {
	reported := map[string]bool{}
	for _, is := range errs.Issues()[before:] {
		if len(is.Loc) > len(loc) {
			if name, ok := is.Loc[len(loc)].(string); ok {
				reported[name] = true
			}
		}
	}
	if bad := usage.Check(e); bad != nil {
		for _, p := range bad.Problems {
			if !reported[p.Field] {
				errs.Add(loc.With(p.Field).With(p.Sub...), p.Type, p.Msg, p.Input, nil)
			}
		}
	}
}

// readProvenance reads an event's provenance by its JSON types, strictly
// (an unknown member anywhere is refused); its rules are usage.Check's.
func readProvenance(v any, loc validate.Loc, errs *validate.Errors) *wire.UsageProvenance {
	raw, err := json.Marshal(v)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		p := new(wire.UsageProvenance)
		if err = dec.Decode(p); err == nil {
			return p
		}
	}
	errs.Add(loc, "model_attributes_type", "Input should be a provenance object: "+err.Error(), nil, nil)
	return nil
}

// readUsageAttempt reads one member of an event's attempt chain: its JSON
// types here, its rules in usage.Check.
func readUsageAttempt(v any, loc validate.Loc, errs *validate.Errors) (wire.UsageAttempt, bool) {
	o := validate.ReadObject(v, loc, errs)
	if o == nil {
		return wire.UsageAttempt{}, false
	}
	before := errs.Len()
	var a wire.UsageAttempt
	for _, m := range []struct {
		name string
		dst  *string
	}{{"model", &a.Model}, {"provider", &a.Provider}} {
		if v, ok := o.Require(m.name); ok {
			*m.dst, _ = validate.String(v, loc.With(m.name), validate.StringRule{}, errs)
		}
	}
	if v, ok := o.Require("failure"); ok && v != nil {
		if f, ok := validate.String(v, loc.With("failure"), validate.StringRule{}, errs); ok {
			a.Failure = &f
		}
	}
	if v, ok := o.Require("latency_ms"); ok {
		a.LatencyMS, _ = validate.Int(v, loc.With("latency_ms"), validate.IntRule{}, errs)
	}
	o.Close()
	return a, errs.Len() == before
}

// heartbeat records a data plane's heartbeat as the enrolled data plane
// the caller's key is (backend.RecordHeartbeat).
func (s *Server) heartbeat(r *Request) (any, error) {
	in := backend.Heartbeat{BundleVersions: map[uuid.UUID]int64{}}
	if err := r.body(func(o *validate.Object) {
		in.DataPlaneID = requiredString(o, "id", heartbeatIDRule)
		in.Version = requiredString(o, "version", validate.StringRule{Min: 1, Max: 100})
		if v, ok := o.Require("bundle_versions"); ok {
			if bo := validate.ReadObject(v, o.Loc().With("bundle_versions"), o.Errors()); bo != nil {
				keys := bo.Keys()
				for _, k := range keys {
					raw, _ := bo.Raw(k)
					kl := bo.Loc().With(k)
					if org, ok := validate.UUIDString(k, kl, o.Errors()); ok {
						if n, ok := validate.Int(raw, kl, nonNegative, o.Errors()); ok {
							in.BundleVersions[org] = n
						}
					}
				}
			}
		}
		if v, ok := o.Require("spool_depth"); ok {
			in.SpoolDepth, _ = validate.Int(v, o.Loc().With("spool_depth"), nonNegative, o.Errors())
		}
	}); err != nil {
		return nil, err
	}
	keyID, err := pollerKeyID(r)
	if err != nil {
		return nil, err
	}
	in.KeyID = keyID
	stored, e, err := backend.RecordHeartbeat(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	out := toDataPlane(stored, stored.LastSeenAt)
	out.Enrollment = e.Status
	return out, nil
}

func toDataPlane(d *store.DataPlane, now time.Time) wire.DataPlaneInstance {
	versions := map[string]int64{}
	for k, v := range d.BundleVersions {
		switch n := v.(type) {
		case int64:
			versions[k] = n
		case float64:
			versions[k] = int64(n)
		}
	}
	status := "healthy"
	if now.Sub(d.LastSeenAt) > heartbeatStale {
		status = "stale"
	}
	return wire.DataPlaneInstance{ID: d.ID, Version: d.Version, BundleVersions: versions, LatestBundleVersions: map[string]int64{},
		SpoolDepth: d.SpoolDepth, Status: status, Enrollment: "none", FirstSeenAt: d.FirstSeenAt, LastSeenAt: d.LastSeenAt}
}

func (s *Server) listDataPlanes(r *Request) (any, error) {
	ds, err := s.store.ListDataPlanes(r.ctx)
	if err != nil {
		return nil, err
	}
	bundles, err := s.store.ListBundles(r.ctx)
	if err != nil {
		return nil, err
	}
	latest := make(map[uuid.UUID]int64, len(bundles))
	for _, b := range bundles {
		latest[b.OrgID] = b.Version
	}
	enrollments, err := s.store.ListEnrollments(r.ctx)
	if err != nil {
		return nil, err
	}
	orgsOf := make(map[string][]uuid.UUID, len(enrollments))
	statusOf := make(map[string]string, len(enrollments))
	for _, e := range enrollments {
		statusOf[e.DataPlaneID] = e.Status
		if e.Status == store.EnrollmentApproved {
			orgsOf[e.DataPlaneID] = e.OrgIDs
		}
	}
	now := time.Now()
	sort.Slice(ds, func(i, j int) bool { return ds[i].ID < ds[j].ID })
	out := make([]wire.DataPlaneInstance, len(ds))
	for i := range ds {
		out[i] = toDataPlane(&ds[i], now)
		if st, ok := statusOf[ds[i].ID]; ok {
			out[i].Enrollment = st
		}
		for _, org := range orgsOf[ds[i].ID] {
			if v, ok := latest[org]; ok {
				out[i].LatestBundleVersions[org.String()] = v
			}
		}
	}
	return out, nil
}

// readGuardrailRecords reads an event's guardrail records strictly; their
// vocabulary is usage.Check's to hold.
func readGuardrailRecords(v any, loc validate.Loc, errs *validate.Errors) []wire.GuardrailRecord {
	out := []wire.GuardrailRecord{}
	validate.List(v, loc, validate.ListRule{Max: usage.MaxGuardrailRecords}, errs, func(item any, loc validate.Loc) {
		o := validate.ReadObject(item, loc, errs)
		if o == nil {
			return
		}
		var rec wire.GuardrailRecord
		str := func(name string) string {
			if v, ok := o.Require(name); ok {
				s, _ := validate.String(v, loc.With(name), validate.StringRule{Max: 200, NoControl: true}, errs)
				return s
			}
			return ""
		}
		rec.ID, rec.Name, rec.Stage, rec.Outcome = str("id"), str("name"), str("stage"), str("outcome")
		rec.Detectors = []string{}
		if v, ok := o.Raw("detectors"); ok && v != nil {
			validate.List(v, loc.With("detectors"), validate.ListRule{Max: 16}, errs, func(item any, loc validate.Loc) {
				s, _ := validate.String(item, loc, validate.StringRule{Min: 1, Max: 64, NoControl: true}, errs)
				rec.Detectors = append(rec.Detectors, s)
			})
		}
		o.Close()
		out = append(out, rec)
	})
	return out
}
