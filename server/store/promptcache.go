package store

import (
	"database/sql/driver"
	"encoding/json"
)

// PromptCache is a workspace's prompt-cache setting (issue 35), stored as
// JSON text.
type PromptCache struct {
	Inject          bool  `json:"inject"`
	MinPrefixTokens int64 `json:"min_prefix_tokens"`
}

// Value implements driver.Valuer.
func (c *PromptCache) Value() (driver.Value, error) {
	if c == nil {
		return nil, nil
	}
	b, err := json.Marshal(*c)
	return string(b), err
}

// Scan implements sql.Scanner.
func (c *PromptCache) Scan(src any) error { return scanJSON(src, "PromptCache", c) }
