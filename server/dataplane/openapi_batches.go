package dataplane

import "github.com/gw-gateway/gw/server/apidoc"

// batchPaths documents Files and Batches (batches.go), OpenAI's shapes
// as gw answers them: several methods a path, so apart from
// infOperations, which has one.
func batchPaths(paths map[string]any, closed *apidoc.Reflector, errRef any) {
	errResp := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": errRef}}}
	}
	ok := func(answer any) map[string]any {
		return map[string]any{"description": "OpenAI's object.", "content": map[string]any{"application/json": map[string]any{"schema": closed.Ref(answer)}}}
	}
	idParam := func(name, desc string) []any {
		return []any{map[string]any{"name": name, "in": "path", "required": true, "description": desc, "schema": map[string]any{"type": "string"}}}
	}
	common := func(extra map[string]any) map[string]any {
		r := map[string]any{
			"401": errResp("Missing, invalid or expired inference key."),
			"404": errResp("No such file or batch in the key's workspace (another workspace's id included)."),
			"501": errResp("This data plane has no store of files and batches (a remote data plane; batches_unavailable): use the control plane's own."),
			"503": errResp("No configuration admitted yet, or the store is not available."),
		}
		for k, v := range extra {
			r[k] = v
		}
		return r
	}
	ref := func(desc, url string) map[string]any { return map[string]any{"description": desc, "url": url} }
	op := func(id, summary string, responses map[string]any) map[string]any {
		return map[string]any{"operationId": id, "summary": summary, "tags": []string{"Batches"}, "responses": responses}
	}
	upload := op("create_file", "Upload a batch input file (multipart: file, purpose \"batch\"; at most 200 MiB)",
		common(map[string]any{"200": ok(fileObject{}), "400": errResp("Not multipart, no file, or a purpose other than batch."),
			"413": errResp("The file is over 200 MiB (file_too_large).")}))
	upload["requestBody"] = map[string]any{"required": true, "content": map[string]any{"multipart/form-data": map[string]any{"schema": map[string]any{
		"type": "object", "required": []string{"file", "purpose"}, "properties": map[string]any{
			"file": map[string]any{"type": "string", "format": "binary"}, "purpose": map[string]any{"type": "string", "enum": []string{"batch"}}}}}}}
	upload["externalDocs"] = ref("OpenAI's files.create", "https://platform.openai.com/docs/api-reference/files/create")
	paths[filesPath] = map[string]any{
		"post": upload,
		"get":  op("list_files", "The workspace's files, newest first (limit, after, purpose)", common(map[string]any{"200": ok(filePage{})})),
	}
	getFile := op("get_file", "One file of the workspace", common(map[string]any{"200": ok(fileObject{})}))
	getFile["parameters"] = idParam("file_id", "gw's file id, file-…")
	delFile := op("delete_file", "Delete a file of the workspace", common(map[string]any{"200": ok(fileDeleted{})}))
	delFile["parameters"] = idParam("file_id", "gw's file id, file-…")
	paths[filesPath+"/{file_id}"] = map[string]any{"get": getFile, "delete": delFile}
	content := op("get_file_content", "A file's content: an input file as uploaded, a batch's output or error file (JSONL)",
		common(map[string]any{"200": map[string]any{"description": "The file's bytes.", "content": map[string]any{"application/octet-stream": map[string]any{"schema": map[string]any{"type": "string"}}}}}))
	content["parameters"] = idParam("file_id", "gw's file id, file-…")
	paths[filesPath+"/{file_id}/content"] = map[string]any{"get": content}

	create := op("create_batch", "Submit a batch: every line admitted (model, policies) and the whole batch's bound at the batch prices checked against the budgets; gw runs it line by line",
		common(map[string]any{"200": ok(batchObject{}),
			"400": errResp("A bad body, or a problem of the input file naming its line and custom_id (a malformed line, an unknown model, a line over the limits)."),
			"403": errResp("A line a workspace policy denies, named."),
			"402": errResp("The batch's bound does not fit a budget (budget_exceeded): final, x-should-retry: false."),
			"429": errResp("A rate limit of the key or the workspace, or budget room held by requests in flight (budget_busy).")}))
	create["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": closed.Ref(batchRequest{})}}}
	create["externalDocs"] = ref("OpenAI's batches.create", "https://platform.openai.com/docs/api-reference/batch/create")
	paths[batchesPath] = map[string]any{
		"post": create,
		"get":  op("list_batches", "The workspace's batches, newest first (limit, after)", common(map[string]any{"200": ok(batchPage{})})),
	}
	getBatch := op("get_batch", "One batch of the workspace, its request_counts and files", common(map[string]any{"200": ok(batchObject{})}))
	getBatch["parameters"] = idParam("batch_id", "gw's batch id, batch_…")
	paths[batchesPath+"/{batch_id}"] = map[string]any{"get": getBatch}
	cancel := op("cancel_batch", "Cancel a batch: its pending lines are never sent and cost nothing", common(map[string]any{"200": ok(batchObject{})}))
	cancel["parameters"] = idParam("batch_id", "gw's batch id, batch_…")
	paths[batchesPath+"/{batch_id}/cancel"] = map[string]any{"post": cancel}
}

// messageBatchPaths documents Anthropic's Message Batches
// (messagebatches.go), its shapes and its error body.
func messageBatchPaths(paths map[string]any, closed *apidoc.Reflector, errRef any) {
	errResp := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": errRef}}}
	}
	ok := func(answer any) map[string]any {
		return map[string]any{"description": "Anthropic's object.", "content": map[string]any{"application/json": map[string]any{"schema": closed.Ref(answer)}}}
	}
	idParam := []any{map[string]any{"name": "message_batch_id", "in": "path", "required": true, "description": "gw's message batch id, msgbatch_…",
		"schema": map[string]any{"type": "string"}}}
	common := func(extra map[string]any) map[string]any {
		r := map[string]any{
			"401": errResp("Missing, invalid or expired inference key (x-api-key or Bearer)."),
			"404": errResp("No such message batch in the key's workspace (another workspace's id, or an OpenAI batch's, included)."),
			"501": errResp("This data plane has no store of batches (a remote data plane): use the control plane's own."),
			"503": errResp("No configuration admitted yet, or the store is not available."),
		}
		for k, v := range extra {
			r[k] = v
		}
		return r
	}
	ref := func(desc, url string) map[string]any { return map[string]any{"description": desc, "url": url} }
	op := func(id, summary string, responses map[string]any) map[string]any {
		return map[string]any{"operationId": id, "summary": summary, "tags": []string{"Batches"}, "responses": responses}
	}
	create := op("create_message_batch", "Submit an Anthropic message batch: every request admitted (model, policies) and the whole batch's bound at the batch prices checked against the budgets; gw runs it request by request",
		common(map[string]any{"200": ok(messageBatchObject{}),
			"400": errResp("A bad body, or a request's problem naming requests[i] and its custom_id (an unknown model, a malformed request, a repeated custom_id, over the limits)."),
			"413": errResp("The body is over 256 MB (256,000,000 bytes; request_too_large)."),
			"403": errResp("A request a workspace policy denies, named."),
			"402": errResp("The batch's bound does not fit a budget (billing_error)."),
			"429": errResp("A rate limit of the key or the workspace, or budget room held by requests in flight.")}))
	create["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
		"type": "object", "required": []string{"requests"}, "additionalProperties": false, "properties": map[string]any{
			"requests": map[string]any{"type": "array", "minItems": 1, "maxItems": 100000, "items": map[string]any{
				"type": "object", "required": []string{"custom_id", "params"}, "additionalProperties": false, "properties": map[string]any{
					"custom_id": map[string]any{"type": "string", "minLength": 1, "maxLength": 64},
					"params":    map[string]any{"type": "object", "description": "A Messages request (POST /inf/v1/messages), without stream."}}}}}}}}}
	create["externalDocs"] = ref("Anthropic's messages.batches.create", "https://docs.anthropic.com/en/api/creating-message-batches")
	list := op("list_message_batches", "The workspace's message batches, newest first: the page older than after_id, or the page newer than before_id",
		common(map[string]any{"200": ok(messageBatchPage{}), "400": errResp("A limit outside 1 to 1000, or both after_id and before_id.")}))
	query := func(name, desc string, schema map[string]any) any {
		return map[string]any{"name": name, "in": "query", "required": false, "description": desc, "schema": schema}
	}
	list["parameters"] = []any{
		query("limit", "Items a page, 1 to 1000 (default 20).", map[string]any{"type": "integer", "minimum": 1, "maximum": 1000, "default": 20}),
		query("after_id", "The page of batches just older than this one (last_id of the page before).", map[string]any{"type": "string"}),
		query("before_id", "The page of batches just newer than this one (first_id of the page after).", map[string]any{"type": "string"}),
	}
	paths[messageBatchesPath] = map[string]any{
		"post": create,
		"get":  list,
	}
	get := op("get_message_batch", "One message batch of the workspace, its request_counts and results_url once ended", common(map[string]any{"200": ok(messageBatchObject{})}))
	get["parameters"] = idParam
	del := op("delete_message_batch", "Delete an ended message batch: its results and requests go, its usage events stay",
		common(map[string]any{"200": ok(messageBatchDeleted{}), "400": errResp("The batch is still processing: cancel it first.")}))
	del["parameters"] = idParam
	del["externalDocs"] = ref("Anthropic's messages.batches.delete", "https://docs.anthropic.com/en/api/deleting-message-batches")
	paths[messageBatchesPath+"/{message_batch_id}"] = map[string]any{"get": get, "delete": del}
	results := op("get_message_batch_results", "An ended batch's results, one JSON line a request: {custom_id, result: {type: succeeded|errored|canceled|expired, message|error}}",
		common(map[string]any{"200": map[string]any{"description": "The results (JSONL, as application/octet-stream).", "content": map[string]any{"application/octet-stream": map[string]any{"schema": map[string]any{"type": "string"}}}},
			"400": errResp("The batch is still processing.")}))
	results["parameters"] = idParam
	paths[messageBatchesPath+"/{message_batch_id}/results"] = map[string]any{"get": results}
	cancel := op("cancel_message_batch", "Cancel a message batch: its pending requests are never sent and cost nothing", common(map[string]any{"200": ok(messageBatchObject{})}))
	cancel["parameters"] = idParam
	paths[messageBatchesPath+"/{message_batch_id}/cancel"] = map[string]any{"post": cancel}
}
