package api

import (
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// readPromptCache reads a workspace update's prompt_cache (issue 35, part
// 4): null turns it off; an object needs every field, each checked by
// name.
func readPromptCache(o *validate.Object) **store.PromptCache {
	v, ok := o.Raw("prompt_cache")
	if !ok {
		return nil
	}
	var out *store.PromptCache
	if v == nil {
		return &out
	}
	loc := o.Loc().With("prompt_cache")
	errs := o.Errors()
	obj := validate.ReadObject(v, loc, errs)
	if obj == nil {
		return &out
	}
	c := &store.PromptCache{}
	if v, ok := obj.Require("inject"); ok {
		c.Inject, _ = validate.Bool(v, loc.With("inject"), errs)
	}
	if v, ok := obj.Require("min_prefix_tokens"); ok {
		c.MinPrefixTokens, _ = validate.Int(v, loc.With("min_prefix_tokens"),
			validate.IntRule{Min: validate.Bound(1024), Max: validate.Bound(1_000_000)}, errs)
	}
	obj.Close()
	out = c
	return &out
}

// promptCacheOut is a workspace's prompt-cache setting as answered.
func promptCacheOut(c *store.PromptCache) *wire.WorkspacePromptCache {
	if c == nil {
		return nil
	}
	return &wire.WorkspacePromptCache{Inject: c.Inject, MinPrefixTokens: c.MinPrefixTokens}
}
