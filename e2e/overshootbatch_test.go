package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The overshoot run's batch workload (issue 34 parts 1 and 4): the control
// plane of TestBudgetOvershootBound is an all-in-one gw (role all) and the
// batches are submitted to its /inf/v1 with the phase's key, before the
// synchronous callers start; its runner sends their lines, one every
// overshootBatchPace, and the remote planes' runners take lines of them
// too (over the sync API, docs/batches.md), while the callers spend
// through the remote planes and, in the outage phase, while the control
// plane is killed and restarted under them.
const (
	overshootBatches = 2
	// Each batch's bound (about $0.014) fits a phase's whole budget, not
	// both at once in the phase with the control plane up ($0.02): a
	// batch's bound is held from its submission for its whole run
	// (docs/batches.md), so the second submission waits for room
	// (BudgetWait) until the first's lines, drawing their shares as they
	// are sent, have freed enough of its hold — under a second.
	overshootBatchLines = 30
	overshootBatchPace  = "20ms"
	// A line's cost: gw's runner sends it (settings.batches "gateway"),
	// a synchronous request upstream, so gpt-4o-mini's synchronous prices.
	overshootBatchCost = budgetCost
)

// overshootBatchSubmit uploads and submits the phase's batches, each of
// overshootBatchLines chat completions, and returns their ids.
func overshootBatchSubmit(t *testing.T, p *budgetPlanes, token, phase string) []string {
	t.Helper()
	var ids []string
	for b := range overshootBatches {
		var in strings.Builder
		for i := range overshootBatchLines {
			fmt.Fprintf(&in, `{"custom_id":"%s-b%d-%d","method":"POST","url":"/v1/chat/completions","body":%s}`+"\n", phase, b, i, budgetBody)
		}
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		_ = mw.WriteField("purpose", "batch")
		fw, _ := mw.CreateFormFile("file", phase+".jsonl")
		_, _ = io.WriteString(fw, in.String())
		_ = mw.Close()
		var file struct{ ID string }
		if err := overshootBatchDo(p.cp.URL, token, "POST", "/inf/v1/files", mw.FormDataContentType(), &body, &file); err != nil {
			t.Fatalf("%s: upload: %v", phase, err)
		}
		var batch struct{ ID string }
		create := fmt.Sprintf(`{"input_file_id":%q,"endpoint":"/v1/chat/completions","completion_window":"24h"}`, file.ID)
		began := time.Now()
		if err := overshootBatchDo(p.cp.URL, token, "POST", "/inf/v1/batches", "application/json", strings.NewReader(create), &batch); err != nil {
			t.Fatalf("%s: create the batch: %v", phase, err)
		}
		t.Logf("%s: batch %d accepted in %s", phase, b, time.Since(began).Round(time.Millisecond))
		ids = append(ids, batch.ID)
	}
	return ids
}

// overshootBatchLine is a line of a batch's output or error file.
type overshootBatchLine struct {
	ID       string `json:"id"`
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int    `json:"status_code"`
		RequestID  string `json:"request_id"`
	} `json:"response"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// overshootBatchCollect waits until the phase's batches are completed,
// reads their output and error files and adds every line to the run: a
// completed line is delivered (one ok event at its cost, naming its
// batch); a line a refusal ended was run and refused (one denied event
// at $0); a line the kill interrupted is failed and, if its request
// reached the upstream, billed once by the request journal at the next
// start. Every line is one of these.
func overshootBatchCollect(t *testing.T, p *budgetPlanes, token, phase string, ids []string, run *overshootRun) {
	t.Helper()
	run.batch = map[string]string{}
	run.interrupted = map[string]bool{}
	for _, id := range ids {
		var b struct {
			Status        string
			OutputFileID  *string                                `json:"output_file_id"`
			ErrorFileID   *string                                `json:"error_file_id"`
			RequestCounts struct{ Total, Completed, Failed int } `json:"request_counts"`
		}
		waitFor(t, phase+": batch "+id+" to end", func() bool {
			return overshootBatchDo(p.cp.URL, token, "GET", "/inf/v1/batches/"+id, "", nil, &b) == nil && b.Status != "in_progress" && b.Status != "validating" && b.Status != "finalizing"
		})
		if b.Status != "completed" || b.RequestCounts.Total != overshootBatchLines || b.RequestCounts.Completed+b.RequestCounts.Failed != overshootBatchLines {
			t.Errorf("%s: batch %s ended %s with %+v", phase, id, b.Status, b.RequestCounts)
		}
		seen := 0
		for _, fid := range []*string{b.OutputFileID, b.ErrorFileID} {
			if fid == nil {
				continue
			}
			content, err := overshootBatchContent(p.cp.URL, token, *fid)
			if err != nil {
				t.Fatalf("%s: batch %s's file %s: %v", phase, id, *fid, err)
			}
			for _, raw := range strings.Split(strings.TrimSpace(content), "\n") {
				var l overshootBatchLine
				if err := json.Unmarshal([]byte(raw), &l); err != nil {
					t.Fatalf("%s: batch %s: line %q: %v", phase, id, raw, err)
				}
				seen++
				switch {
				case l.Error == nil && l.Response != nil && l.Response.StatusCode == http.StatusOK:
					run.delivered[l.Response.RequestID] = overshootDone{kind: "chat.completions", cost: overshootBatchCost, batch: id}
					run.batch[l.Response.RequestID] = id
					run.deliveredOf["batch"]++
				case l.Error != nil && l.Response != nil && overshootRefusal(l.Error.Message) != overshootProblem:
					run.refused[l.Response.RequestID] = true
					run.batch[l.Response.RequestID] = id
					run.refusedLines++
				case l.Error != nil && l.Response == nil && strings.HasPrefix(l.Error.Message, "interrupted:"):
					run.interrupted[overshootLineRequestID(l.ID)] = true
				default:
					t.Errorf("%s: batch %s: line %s ended %s", phase, id, l.CustomID, raw)
				}
			}
		}
		if seen != overshootBatchLines {
			t.Errorf("%s: batch %s's files hold %d lines of %d", phase, id, seen, overshootBatchLines)
		}
	}
}

// overshootLineRequestID is the request id of an output line's id
// ("batch_req_" and the id's hex digits, docs/batches.md).
func overshootLineRequestID(id string) string {
	h := strings.TrimPrefix(id, "batch_req_")
	if len(h) != 32 {
		return id
	}
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func overshootBatchDo(base, token, method, path, contentType string, body io.Reader, out any) error {
	req, _ := http.NewRequest(method, base+path, body)
	req.Header.Set("Authorization", "Bearer "+token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}

func overshootBatchContent(base, token, id string) (string, error) {
	req, _ := http.NewRequest("GET", base+"/inf/v1/files/"+id+"/content", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%d %s", resp.StatusCode, b)
	}
	return string(b), err
}
