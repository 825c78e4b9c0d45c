package archive_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gw-gateway/gw/server/archive"
	"github.com/gw-gateway/gw/server/archive/archivetest"
	"github.com/gw-gateway/gw/server/egress"
)

var (
	org = uuid.MustParse("0b8e7c1e-0000-4000-8000-000000000001")
	ws  = uuid.MustParse("0b8e7c1e-0000-4000-8000-000000000002")
)

func TestKey(t *testing.T) {
	id := uuid.MustParse("0b8e7c1e-0000-4000-8000-0000000000ff")
	at := time.Date(2026, 3, 4, 23, 30, 0, 0, time.FixedZone("x", -2*3600)) // 01:30 UTC on the 5th
	for _, c := range []struct{ prefix, want string }{
		{"", org.String() + "/" + ws.String() + "/2026/03/05/" + id.String() + ".json.gz"},
		{"gw", "gw/" + org.String() + "/" + ws.String() + "/2026/03/05/" + id.String() + ".json.gz"},
		{"/a/b/", "a/b/" + org.String() + "/" + ws.String() + "/2026/03/05/" + id.String() + ".json.gz"},
	} {
		if got := archive.Key(c.prefix, org, ws, at, id); got != c.want {
			t.Errorf("Key(%q) = %q, want %q", c.prefix, got, c.want)
		}
		if !strings.HasPrefix(c.want, archive.WorkspacePrefix(c.prefix, org, ws)) {
			t.Errorf("WorkspacePrefix(%q) is not a prefix of %q", c.prefix, c.want)
		}
	}
}

func TestExpired(t *testing.T) {
	wp := archive.WorkspacePrefix("p", org, ws)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		key  string
		days int
		want bool
	}{
		{wp + "2026/11/27/x.json.gz", 1, false},
		{wp + "2026/11/26/x.json.gz", 1, true},
		{wp + "2026/11/20/x.json.gz", 7, true},
		{wp + "2026/11/21/x.json.gz", 7, false},
		{wp + "2026/11/01/x.json.gz", 0, false},   // no retention: kept
		{wp + "2026/11/01/x.txt", 1, false},       // not ours
		{wp + "2026/13/01/x.json.gz", 1, false},   // not a date
		{wp + "2026/11/01/a/x.json.gz", 1, false}, // too deep
		{"other/2026/11/01/x.json.gz", 1, false},
	} {
		if got := archive.Expired(wp, c.key, now, c.days); got != c.want {
			t.Errorf("Expired(%q, %d) = %v, want %v", c.key, c.days, got, c.want)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	p := &archive.Payload{UsageEventID: uuid.New(), OrgID: org, WorkspaceID: ws, OccurredAt: time.Unix(1, 0).UTC(),
		Request: archive.Body([]byte(`{"model":"m"}`)), Response: archive.Body([]byte("data: {}\n\ndata: [DONE]\n\n"))}
	gz, err := archive.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := archive.Decode(gz)
	if err != nil {
		t.Fatal(err)
	}
	var back archive.Payload
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.UsageEventID != p.UsageEventID || string(back.Request) != `{"model":"m"}` || string(back.Response) != `"data: {}\n\ndata: [DONE]\n\n"` {
		t.Errorf("round trip: %s", raw)
	}
	if _, err := archive.Decode([]byte("not gzip")); err == nil {
		t.Error("Decode of garbage: no error")
	}
}

func FuzzDecode(f *testing.F) {
	gz, _ := archive.Encode(&archive.Payload{UsageEventID: uuid.New()})
	f.Add(gz)
	f.Add([]byte("x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		raw, err := archive.Decode(b)
		if err == nil && !json.Valid(raw) {
			t.Fatalf("Decode answered invalid JSON %q", raw)
		}
	})
}

// store is a versitygw with a bucket, and the destination of it.
func store(t *testing.T) (*archivetest.S3, archive.Destination, *archive.Client) {
	s := archivetest.Start(t)
	d := archive.Destination{Endpoint: s.Endpoint(), Region: "us-east-1", Bucket: "gw-archive", Prefix: "gw",
		AccessKeyID: archivetest.Access, SecretAccessKey: archivetest.Secret, PathStyle: true}
	c := archive.NewClient(d, dial())
	if err := c.CreateBucket(context.Background()); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	return s, d, c
}

func dial() *egress.Dialer {
	return egress.NewDialer(func() egress.Policy { return egress.Policy{} })
}

func writer(t *testing.T, dir string, d *archive.Destination) (*archive.Writer, context.CancelFunc) {
	w, err := archive.NewWriter(archive.Options{Dir: dir, Dial: dial(), MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		Resolve: func(o, x uuid.UUID) (*archive.Destination, bool) { return d, true }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return w, stop
}

func payload(i int, at time.Time) *archive.Payload {
	return &archive.Payload{UsageEventID: uuid.New(), RequestID: fmt.Sprintf("req-%d", i), OrgID: org, WorkspaceID: ws,
		Endpoint: "/v1/chat/completions", OccurredAt: at,
		Request: archive.Body(fmt.Appendf(nil, `{"n":%d}`, i)), Response: archive.Body(fmt.Appendf(nil, `{"answer":%d}`, i))}
}

// drained waits until the writer has nothing pending.
func drained(t *testing.T, w *archive.Writer) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for w.Pending() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d payloads still pending", w.Pending())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// objects lists the workspace's keys.
func objects(t *testing.T, c *archive.Client, d archive.Destination) []string {
	t.Helper()
	var keys []string
	if err := c.List(context.Background(), archive.WorkspacePrefix(d.Prefix, org, ws), func(k string) error {
		keys = append(keys, k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestWriterArchivesEachRequestOnce: every payload submitted is one
// object at its key, holding what was submitted.
func TestWriterArchivesEachRequestOnce(t *testing.T) {
	_, d, c := store(t)
	w, _ := writer(t, t.TempDir(), &d)
	now := time.Now().UTC()
	var want []string
	ps := map[string]*archive.Payload{}
	for i := range 25 {
		p := payload(i, now)
		w.Submit(p)
		k := archive.Key(d.Prefix, org, ws, now, p.UsageEventID)
		want = append(want, k)
		ps[k] = p
	}
	drained(t, w)
	got := objects(t, c, d)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("objects %d, want %d: %v", len(got), len(want), got)
	}
	for _, k := range got[:3] {
		gz, err := c.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := archive.Decode(gz)
		if err != nil {
			t.Fatal(err)
		}
		var back archive.Payload
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if p := ps[k]; back.UsageEventID != p.UsageEventID || string(back.Request) != string(p.Request) || string(back.Response) != string(p.Response) {
			t.Errorf("%s holds %s", k, raw)
		}
	}
	if n := testutil.ToFloat64(w.Collectors()[0]); n != 25 {
		t.Errorf("written counter %v, want 25", n)
	}
	if _, err := c.Get(context.Background(), archive.Key(d.Prefix, org, ws, now, uuid.New())); err != archive.ErrNotFound {
		t.Errorf("Get of an unknown key: %v, want ErrNotFound", err)
	}
}

// TestWriterStoreDownAndBack: while the store is down, payloads stay
// spooled (across a restart of the writer too); when it is back, each is
// written exactly once.
func TestWriterStoreDownAndBack(t *testing.T) {
	s, d, c := store(t)
	dir := t.TempDir()
	w, stop := writer(t, dir, &d)
	now := time.Now().UTC()
	want := map[string]bool{}
	submit := func(w *archive.Writer, from, n int) {
		for i := from; i < from+n; i++ {
			p := payload(i, now)
			w.Submit(p)
			want[archive.Key(d.Prefix, org, ws, now, p.UsageEventID)] = true
		}
	}
	submit(w, 0, 5)
	drained(t, w)

	s.Stop()
	submit(w, 5, 10)
	failures := w.Collectors()[1]
	deadline := time.Now().Add(30 * time.Second)
	for testutil.ToFloat64(failures) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no upload failed while the store was down")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := w.Pending(); n != 10 {
		t.Fatalf("pending while down: %d, want 10", n)
	}
	// The process ends with the store still down; the next one finds the
	// spool and takes more requests.
	stop()
	w2, _ := writer(t, dir, &d)
	submit(w2, 15, 5)
	if n := w2.Pending(); n < 10 {
		t.Fatalf("pending after a restart: %d, want at least 10", n)
	}
	s.Restart()
	drained(t, w2)
	got := objects(t, c, d)
	if len(got) != len(want) {
		t.Fatalf("%d objects, want %d", len(got), len(want))
	}
	for _, k := range got {
		if !want[k] {
			t.Errorf("unexpected object %s", k)
		}
	}
}

// TestWriterDiscardsWhenArchiveOff: a workspace that no longer archives
// has its spooled payloads dropped (counted), not retried for ever.
func TestWriterDiscardsWhenArchiveOff(t *testing.T) {
	var known atomic.Bool
	w, err := archive.NewWriter(archive.Options{Dir: t.TempDir(), Dial: dial(), MinBackoff: 10 * time.Millisecond,
		Resolve: func(o, x uuid.UUID) (*archive.Destination, bool) { return nil, known.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Run(ctx)
	w.Submit(payload(1, time.Now()))
	deadline := time.Now().Add(30 * time.Second)
	for testutil.ToFloat64(w.Collectors()[1]) < 1 { // unknown workspace: retried
		if time.Now().After(deadline) {
			t.Fatal("an unknown workspace's payload was not retried")
		}
		time.Sleep(5 * time.Millisecond)
	}
	known.Store(true)
	drained(t, w)
	if n := testutil.ToFloat64(w.Collectors()[2]); n != 1 {
		t.Errorf("discarded %v, want 1", n)
	}
}

// TestSweepDeletesPastRetention: objects of days past retention are
// deleted (each reported), the others kept.
func TestSweepDeletesPastRetention(t *testing.T) {
	_, d, c := store(t)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var keep, drop []string
	for i, age := range []int{0, 1, 6, 7, 8, 30} {
		p := payload(i, now.AddDate(0, 0, -age))
		gz, err := archive.Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		k := archive.Key(d.Prefix, org, ws, p.OccurredAt, p.UsageEventID)
		if err := c.Put(context.Background(), k, gz); err != nil {
			t.Fatal(err)
		}
		if age > 7 {
			drop = append(drop, k)
		} else {
			keep = append(keep, k)
		}
	}
	var deleted []string
	n, err := archive.Sweep(context.Background(), c, d.Prefix, org, ws, 7, now, func(k string) error {
		deleted = append(deleted, k)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(drop)
	slices.Sort(deleted)
	if n != len(drop) || !slices.Equal(deleted, drop) {
		t.Errorf("deleted %v, want %v", deleted, drop)
	}
	got := objects(t, c, d)
	slices.Sort(got)
	slices.Sort(keep)
	if !slices.Equal(got, keep) {
		t.Errorf("left %v, want %v", got, keep)
	}
}
