package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/gw-gateway/gw/wire"
)

// BatchStore calls op on the control plane's files and batches as the
// enrolled data plane dataPlaneID (POST /api/v1/data-plane/batch-store/{op};
// wire.BatchStoreRequest says the framing): req goes as one JSON line,
// followed by files, each file's bytes as they are. The answer's JSON is
// returned, with, for op file, the file's bytes (at most maxContent).
// Nothing is held twice: the files are streamed after the line, and the
// answer's bytes read once into their own buffer.
func (c *Client) BatchStore(ctx context.Context, dataPlaneID, op string, req wire.BatchStoreRequest, maxContent int64, files ...[]byte) (wire.BatchStoreResult, []byte, error) {
	var out wire.BatchStoreResult
	head, err := json.Marshal(req)
	if err != nil {
		return out, nil, err
	}
	parts := []io.Reader{bytes.NewReader(head), bytes.NewReader([]byte{'\n'})}
	contentType := "application/json"
	for _, f := range files {
		parts = append(parts, bytes.NewReader(f))
		contentType = "application/octet-stream"
	}
	path := "/api/v1/data-plane/batch-store/" + esc(op)
	resp, err := c.r.R().SetContext(ctx).SetQueryParam("data_plane_id", dataPlaneID).SetHeader("Content-Type", contentType).
		SetBody(io.MultiReader(parts...)).SetDoNotParseResponse(true).Post(path)
	if err != nil {
		return out, nil, c.transportError("POST", path, err)
	}
	body := resp.RawBody()
	defer body.Close()
	if resp.IsError() {
		raw, _ := io.ReadAll(io.LimitReader(body, 1<<20))
		return out, nil, decodeErrorBody(resp.StatusCode(), raw)
	}
	br := bufio.NewReader(body)
	line, err := br.ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return out, nil, fmt.Errorf("POST %s: reading the answer: %w", path, err)
	}
	var env wire.Envelope[wire.BatchStoreResult]
	if err := json.Unmarshal(line, &env); err != nil {
		return out, nil, fmt.Errorf("POST %s: decoding the answer: %w", path, err)
	}
	out = env.Data
	if op != "file" || out.File == nil {
		return out, nil, nil
	}
	n := out.File.Bytes
	if n < 0 || n > maxContent {
		return out, nil, fmt.Errorf("POST %s: a file of %d bytes is over the limit of %d", path, n, maxContent)
	}
	content := make([]byte, n)
	if _, err := io.ReadFull(br, content); err != nil {
		return out, nil, fmt.Errorf("POST %s: reading the file's %d bytes: %w", path, n, err)
	}
	return out, content, nil
}
