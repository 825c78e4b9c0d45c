package api

import (
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// readResponseCache reads a workspace update's response_cache (issue 35):
// null turns it off; an object needs every field, each checked by name.
func readResponseCache(o *validate.Object) **store.ResponseCache {
	v, ok := o.Raw("response_cache")
	if !ok {
		return nil
	}
	var out *store.ResponseCache
	if v == nil {
		return &out
	}
	loc := o.Loc().With("response_cache")
	errs := o.Errors()
	obj := validate.ReadObject(v, loc, errs)
	if obj == nil {
		return &out
	}
	c := &store.ResponseCache{}
	if v, ok := obj.Require("enabled"); ok {
		c.Enabled, _ = validate.Bool(v, loc.With("enabled"), errs)
	}
	if v, ok := obj.Require("ttl_seconds"); ok {
		n, _ := validate.Int(v, loc.With("ttl_seconds"), validate.IntRule{Min: validate.Bound(1), Max: validate.Bound(86400)}, errs)
		c.TTLSeconds = int(n)
	}
	if v, ok := obj.Require("max_entry_bytes"); ok {
		n, _ := validate.Int(v, loc.With("max_entry_bytes"), validate.IntRule{Min: validate.Bound(1024), Max: validate.Bound(8 << 20)}, errs)
		c.MaxEntryBytes = int(n)
	}
	obj.Close()
	out = c
	return &out
}

// responseCacheOut is a workspace's response cache setting as answered.
func responseCacheOut(c *store.ResponseCache) *wire.WorkspaceResponseCache {
	if c == nil {
		return nil
	}
	return &wire.WorkspaceResponseCache{Enabled: c.Enabled, TTLSeconds: c.TTLSeconds, MaxEntryBytes: c.MaxEntryBytes}
}
