package wire

import (
	"time"

	"github.com/google/uuid"
)

// The data plane's batch store (issue 34, part 1; docs/batches.md): a
// remote data plane keeps no files or batches of its own; it reads and
// writes the control plane's with POST /api/v1/data-plane/batch-store/{op}
// ?data_plane_id=…, confined to the organizations it is enrolled for.
//
// The body is a BatchStoreRequest as one line of JSON, then, for the ops
// that carry files, their bytes: create-file its file's (File.Bytes of
// them), finish the output file's then the error file's. The answer is
// {"data": BatchStoreResult} as one line of JSON, then, for op file, the
// file's bytes (File.Bytes of them). File bodies never travel inside the
// JSON, so neither side holds them twice.

// BatchStoreOps are the ops, in the order of dataplane.BatchStore.
var BatchStoreOps = []string{"create-file", "file", "files", "delete-file", "create-batch", "batch", "batches", "counts", "cancel",
	"active", "start-line", "end-line", "requeue", "lines", "interrupt", "expire", "finish", "upstreams", "update-upstream", "upstream-lines",
	"delete-batch"}

// BatchStoreRequest is every op's arguments; each op reads its own (the
// rest are absent).
type BatchStoreRequest struct {
	// WorkspaceID: file, files, delete-file, batch, batches, cancel,
	// delete-batch.
	WorkspaceID uuid.UUID `json:"workspace_id,omitzero"`
	// ID is the file's or batch's id: file, delete-file, batch, cancel,
	// delete-batch.
	ID string `json:"id,omitempty"`
	// BatchID: counts, start-line, requeue, lines, interrupt, expire, finish,
	// upstreams, upstream-lines.
	BatchID string `json:"batch_id,omitempty"`
	// Purpose, After, Limit: files; Messages, After, BeforeID, Limit:
	// batches; AfterLine, Limit: lines.
	Purpose   string `json:"purpose,omitempty"`
	After     string `json:"after,omitempty"`
	BeforeID  string `json:"before_id,omitempty"`
	AfterLine int    `json:"after_line,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	Messages  bool   `json:"messages,omitempty"`
	// Now is the data plane's clock, written as the record's time.
	Now time.Time `json:"now"`
	// RequestID: start-line (the take's id, idempotent on it), requeue.
	RequestID string `json:"request_id,omitempty"`
	// Line: requeue.
	Line int `json:"line,omitempty"`
	// Before, Message: interrupt (the plane's own lines taken before).
	Before  time.Time `json:"before,omitzero"`
	Message string    `json:"message,omitempty"`
	// Status: finish.
	Status string `json:"status,omitempty"`
	// Seq: upstream-lines (the provider batch group); Upstream, From:
	// update-upstream (the group's new state, moved on from status From).
	Seq      int                 `json:"seq,omitempty"`
	Upstream *BatchStoreUpstream `json:"upstream,omitempty"`
	From     string              `json:"from,omitempty"`
	// File: create-file; Batch, CustomIDs: create-batch; Result:
	// end-line (its request_id names the take); Output, Error: finish.
	File      *BatchStoreFile  `json:"file,omitempty"`
	Batch     *BatchStoreBatch `json:"batch,omitempty"`
	CustomIDs []string         `json:"custom_ids,omitempty"`
	Result    *BatchStoreLine  `json:"result,omitempty"`
	Output    *BatchStoreFile  `json:"output,omitempty"`
	Error     *BatchStoreFile  `json:"error,omitempty"`
}

// BatchStoreResult is every op's answer; each op fills its own.
type BatchStoreResult struct {
	File    *BatchStoreFile   `json:"file,omitempty"`
	Files   []BatchStoreFile  `json:"files,omitempty"`
	Batch   *BatchStoreBatch  `json:"batch,omitempty"`
	Batches []BatchStoreBatch `json:"batches,omitempty"`
	Counts  *BatchStoreCounts `json:"counts,omitempty"`
	Line    *BatchStoreLine   `json:"line,omitempty"`
	Lines   []BatchStoreLine  `json:"lines,omitempty"`
	// Upstreams: upstreams.
	Upstreams []BatchStoreUpstream `json:"upstreams,omitempty"`
	// OK: start-line took a line, end-line, requeue, finish and
	// update-upstream changed it; N: interrupt's and expire's lines ended.
	OK bool `json:"ok"`
	N  int  `json:"n"`
}

// BatchStoreFile is a file's record; its bytes travel beside the JSON.
type BatchStoreFile struct {
	ID          string    `json:"id"`
	OrgID       uuid.UUID `json:"org_id"`
	WorkspaceID uuid.UUID `json:"workspace_id"`
	Purpose     string    `json:"purpose"`
	Filename    string    `json:"filename"`
	Bytes       int64     `json:"bytes" jsonschema:"minimum=0"`
	CreatedAt   time.Time `json:"created_at"`
}

// BatchStoreBatch is a batch's record.
type BatchStoreBatch struct {
	ID               string            `json:"id"`
	OrgID            uuid.UUID         `json:"org_id"`
	WorkspaceID      uuid.UUID         `json:"workspace_id"`
	InferenceKeyID   uuid.UUID         `json:"inference_key_id"`
	Endpoint         string            `json:"endpoint"`
	InputFileID      string            `json:"input_file_id"`
	CompletionWindow string            `json:"completion_window"`
	Status           string            `json:"status"`
	Metadata         map[string]string `json:"metadata,omitempty"`
	ReservedNanoUSD  int64             `json:"reserved_nano_usd"`
	// BudgetHolder names the budget holder (a data plane's lease holder)
	// that accepted the batch and holds its bound while it runs: after a
	// restart under the same holder, that process holds it again
	// (server/dataplane/batchhold.go). Empty: no budget applied.
	BudgetHolder string    `json:"budget_holder,omitempty"`
	OutputFileID string    `json:"output_file_id,omitempty"`
	ErrorFileID  string    `json:"error_file_id,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	// Upstreams are the provider batch groups of a batch being created
	// (create-batch only).
	Upstreams []BatchStoreUpstream `json:"upstreams,omitempty"`
	// LineBounds are its lines' upper-bound costs, kept with the lines
	// (create-batch only).
	LineBounds []BatchStoreLineBound `json:"line_bounds,omitempty"`
}

// BatchStoreLineBound is a line's upper-bound cost as submission counted
// it, at the model that gave the largest: what the control plane bills
// for a line a data plane took and was lost with (docs/batches.md).
type BatchStoreLineBound struct {
	Line         int    `json:"line"`
	NanoUSD      int64  `json:"nano_usd"`
	Model        string `json:"model"`
	Provider     string `json:"provider"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
}

// BatchStoreUpstream is a group of a batch's lines run as one provider
// batch: its credential and model, and how far it is.
type BatchStoreUpstream struct {
	BatchID       string                   `json:"batch_id"`
	Seq           int                      `json:"seq"`
	Kind          string                   `json:"kind"`
	CredentialID  uuid.UUID                `json:"credential_id"`
	Model         string                   `json:"model"`
	UpstreamModel string                   `json:"upstream_model"`
	Status        string                   `json:"status"`
	FileID        string                   `json:"file_id,omitempty"`
	UpstreamID    string                   `json:"upstream_id,omitempty"`
	SubmittingAt  time.Time                `json:"submitting_at,omitzero"`
	Error         string                   `json:"error,omitempty"`
	Lines         []BatchStoreUpstreamLine `json:"lines,omitempty"`
}

// BatchStoreUpstreamLine is a line of a provider batch group as created,
// with the request id fixed for it.
type BatchStoreUpstreamLine struct {
	Line      int    `json:"line"`
	RequestID string `json:"request_id"`
}

// BatchStoreLine is a line's record.
type BatchStoreLine struct {
	BatchID     string `json:"batch_id"`
	Line        int    `json:"line"`
	CustomID    string `json:"custom_id"`
	Status      string `json:"status"`
	RequestID   string `json:"request_id,omitempty"`
	StatusCode  int    `json:"status_code,omitempty"`
	Response    string `json:"response,omitempty"`
	Error       string `json:"error,omitempty"`
	CostNanoUSD int64  `json:"cost_nano_usd,omitempty"`
}

// BatchStoreCounts are a batch's lines by outcome.
type BatchStoreCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	// Expired: lines the completion window ended before they were sent.
	Expired int `json:"expired"`
}
