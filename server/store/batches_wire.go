package store

import (
	"encoding/json"

	"github.com/gw-gateway/gw/wire"
)

// A batch's rows as the one shape the data plane and the sync route read
// them in (wire/batchstore.go), made here once for both the in-process
// adapter (server/batchstore) and the route (server/api/batchstore.go).

// Wire is the batch as the data plane reads it.
func (b *Batch) Wire() wire.BatchStoreBatch {
	out := wire.BatchStoreBatch{ID: b.ID, OrgID: b.OrgID, WorkspaceID: b.WorkspaceID, Endpoint: b.Endpoint, InputFileID: b.InputFileID,
		CompletionWindow: b.CompletionWindow, Status: b.Status, ReservedNanoUSD: b.ReservedNanoUSD, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt,
		InferenceKeyID: deref(b.InferenceKeyID), OutputFileID: deref(b.OutputFileID), ErrorFileID: deref(b.ErrorFileID),
		BudgetHolder: deref(b.BudgetHolder)}
	if b.Metadata != nil {
		// Written by CreateBatch from a map; a row it cannot read has none.
		_ = json.Unmarshal([]byte(*b.Metadata), &out.Metadata)
	}
	return out
}

// Wire is the line as the data plane reads it.
func (l *BatchLine) Wire() wire.BatchStoreLine {
	return wire.BatchStoreLine{BatchID: l.BatchID, Line: l.Line, CustomID: l.CustomID, Status: l.Status, StatusCode: l.StatusCode,
		CostNanoUSD: l.CostNanoUSD, RequestID: deref(l.RequestID), Response: deref(l.Response), Error: deref(l.Error)}
}

// Wire is the provider batch group as the data plane reads it.
func (u *BatchUpstream) Wire() wire.BatchStoreUpstream {
	return wire.BatchStoreUpstream{BatchID: u.BatchID, Seq: u.Seq, Kind: u.Kind, CredentialID: u.CredentialID, Model: u.Model,
		UpstreamModel: u.UpstreamModel, Status: u.Status, FileID: deref(u.UpstreamFileID), UpstreamID: deref(u.UpstreamBatchID),
		SubmittingAt: deref(u.SubmittingAt), Error: deref(u.Error)}
}

// WireAll is rows, each as Wire makes it.
func WireAll[T any, W any](rows []T, of func(*T) W) []W {
	out := make([]W, len(rows))
	for i := range rows {
		out[i] = of(&rows[i])
	}
	return out
}

// deref is *p, or T's zero value when p is nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// LineBoundsOf are a submission's line bounds as CreateBatch stores them.
func LineBoundsOf(in []wire.BatchStoreLineBound) []LineBound {
	out := make([]LineBound, len(in))
	for i, b := range in {
		out[i] = LineBound(b)
	}
	return out
}
