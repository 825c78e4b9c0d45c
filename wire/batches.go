package wire

import (
	"time"

	"github.com/google/uuid"
)

// Batch is a workspace's batch (issue 34) as the management API and gw
// batches show it: what it was submitted with, how far its lines got and
// what was reserved for it. The lines and their answers stay on the data
// plane's files endpoints.
type Batch struct {
	ID          string    `json:"id"`
	OrgID       uuid.UUID `json:"org_id"`
	WorkspaceID uuid.UUID `json:"workspace_id"`
	// InferenceKeyID is the key that submitted the batch (its lines are
	// sent as that key); null once the key is deleted.
	InferenceKeyID *uuid.UUID  `json:"inference_key_id" jsonschema:"nullable"`
	Status         string      `json:"status" jsonschema:"enum=validating,enum=in_progress,enum=finalizing,enum=completed,enum=failed,enum=cancelling,enum=cancelled,enum=expired"`
	Endpoint       string      `json:"endpoint"`
	InputFileID    string      `json:"input_file_id"`
	OutputFileID   *string     `json:"output_file_id" jsonschema:"nullable"`
	ErrorFileID    *string     `json:"error_file_id" jsonschema:"nullable"`
	RequestCounts  BatchCounts `json:"request_counts"`
	// ReservedUSD is the batch's upper-bound cost at its batch prices,
	// checked against the budgets at submission: a decimal string in USD.
	ReservedUSD string    `json:"reserved_usd"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// CompletedAt is when the batch ended (completed, failed or
	// cancelled); null while it runs.
	CompletedAt *time.Time `json:"completed_at" jsonschema:"nullable"`
}

// BatchCounts are a batch's lines by outcome; the rest are pending or
// running.
type BatchCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	// Expired: lines the batch's completion window ended before they
	// were sent (never sent, $0).
	Expired int `json:"expired"`
}
