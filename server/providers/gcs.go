package providers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Cloud Storage, as a vertex credential's batch prediction jobs need it
// (vertexbatch.go): an object written (a job's input), read (its
// predictions), listed under a prefix and deleted. These are plain calls
// of the JSON API (https://storage.googleapis.com/storage/v1), so they go
// through send like every other upstream call — the adapters' HTTP client
// (the egress policy), gw's trace context, Google's refusal reader —
// authorized with the service account's OAuth token (scope cloud-platform
// covers Cloud Storage). A storage client library would make its own
// connections; this keeps one upstream path.

// defaultGCSEndpoint is Cloud Storage's JSON API host.
const defaultGCSEndpoint = "https://storage.googleapis.com"

// maxGCSObject bounds an object read into memory: a job's predictions
// for at most 50,000 requests (gw's batch file limit), as large as a batch
// output file may be.
const maxGCSObject = 256 << 20

// Each call is bounded, so a store that stops answering holds the runner
// (which moves every batch on) for a while, not for ever: listings and
// deletes are small; an object is at most a job's input or predictions.
const (
	gcsControlTimeout = time.Minute
	gcsObjectTimeout  = 10 * time.Minute
)

// gcsClient is the Cloud Storage of one call: its endpoint (the
// credential's batch_gcs_endpoint, else Google's) and bearer token.
type gcsClient struct {
	client   *http.Client
	call     *Call
	endpoint string
	auth     func(http.Header)
}

func newGCSClient(client *http.Client, call *Call, token string) *gcsClient {
	ep := trimBase(call.Settings.BatchGCSEndpoint)
	if ep == "" {
		ep = defaultGCSEndpoint
	}
	return &gcsClient{client: client, call: call, endpoint: ep, auth: func(h http.Header) { h.Set("Authorization", "Bearer "+token) }}
}

// splitGS splits gs://bucket/object.
func splitGS(uri string) (bucket, object string, ok bool) {
	rest, found := strings.CutPrefix(uri, "gs://")
	if !found {
		return "", "", false
	}
	bucket, object, _ = strings.Cut(rest, "/")
	return bucket, object, bucket != ""
}

func (g *gcsClient) objectURL(bucket, object string) string {
	return g.endpoint + "/storage/v1/b/" + url.PathEscape(bucket) + "/o/" + url.PathEscape(object)
}

func (g *gcsClient) do(ctx context.Context, method, u, contentType string, body []byte) (*http.Response, error) {
	p := upstreamPost{method: method, url: u, contentType: contentType, authorize: headerAuth(g.auth), refusal: googleStatusError}
	if body != nil {
		p.body = rope{body}
	}
	return send(ctx, g.client, g.call, p)
}

// put writes an object whole (a simple media upload).
func (g *gcsClient) put(ctx context.Context, bucket, object string, content []byte) error {
	ctx, cancel := context.WithTimeout(ctx, gcsObjectTimeout)
	defer cancel()
	u := g.endpoint + "/upload/storage/v1/b/" + url.PathEscape(bucket) + "/o?" + url.Values{"uploadType": {"media"}, "name": {object}}.Encode()
	resp, err := g.do(ctx, http.MethodPost, u, "application/jsonl", content)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.Body.Close()
}

// get reads an object whole, up to maxGCSObject.
func (g *gcsClient) get(ctx context.Context, bucket, object string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, gcsObjectTimeout)
	defer cancel()
	resp, err := g.do(ctx, http.MethodGet, g.objectURL(bucket, object)+"?alt=media", "", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxGCSObject+1))
	if err != nil {
		return nil, transportError(err)
	}
	if len(raw) > maxGCSObject {
		return nil, &Error{Kind: Unavailable, Message: "a Cloud Storage object of the batch job is larger than gw reads (256 MiB)"}
	}
	return raw, nil
}

// list names the objects under prefix, every page.
func (g *gcsClient) list(ctx context.Context, bucket, prefix string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, gcsControlTimeout)
	defer cancel()
	var names []string
	token := ""
	for page := 0; page < 1000; page++ {
		q := url.Values{"prefix": {prefix}, "fields": {"items(name),nextPageToken"}}
		if token != "" {
			q.Set("pageToken", token)
		}
		raw, err := answerOf(g.do(ctx, http.MethodGet, g.endpoint+"/storage/v1/b/"+url.PathEscape(bucket)+"/o?"+q.Encode(), "", nil))
		if err != nil {
			return nil, err
		}
		var l struct {
			Items []struct {
				Name string `json:"name"`
			} `json:"items"`
			NextPageToken string `json:"nextPageToken"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, &Error{Kind: Unavailable, Message: "Cloud Storage's object list does not read"}
		}
		for _, it := range l.Items {
			names = append(names, it.Name)
		}
		if token = l.NextPageToken; token == "" {
			break
		}
	}
	return names, nil
}

// remove deletes an object; one already gone is no error.
func (g *gcsClient) remove(ctx context.Context, bucket, object string) error {
	ctx, cancel := context.WithTimeout(ctx, gcsControlTimeout)
	defer cancel()
	resp, err := g.do(ctx, http.MethodDelete, g.objectURL(bucket, object), "", nil)
	var pe *Error
	if errors.As(err, &pe) && pe.Status == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
