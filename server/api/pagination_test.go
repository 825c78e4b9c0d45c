package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// Scenario tests for spec 4.11 (pagination) and 2.1 (the envelope).

// kpPage checks a paginated body is exactly {data: [..], page: {next_cursor}}
// and returns the items and the cursor ("" when null).
func kpPage(t *testing.T, raw []byte) ([]map[string]any, string) {
	t.Helper()
	m := kpObject(t, raw)
	if got := kpMembers(m); !kpSameSet(got, []string{"data", "page"}) {
		t.Fatalf("paginated body members = %v, want exactly [data page]: %s", got, raw)
	}
	pg, ok := m["page"].(map[string]any)
	if !ok {
		t.Fatalf("page is not an object: %s", raw)
	}
	if got := kpMembers(pg); !kpSameSet(got, []string{"next_cursor"}) {
		t.Fatalf("page members = %v, want exactly [next_cursor]: %s", got, raw)
	}
	cursor := ""
	switch c := pg["next_cursor"].(type) {
	case nil:
	case string:
		if c == "" {
			t.Fatalf("next_cursor is an empty string; the last page says null: %s", raw)
		}
		cursor = c
	default:
		t.Fatalf("next_cursor is %T: %s", c, raw)
	}
	arr, ok := m["data"].([]any)
	if !ok {
		t.Fatalf("data is not a list: %s", raw)
	}
	items := make([]map[string]any, len(arr))
	for i, it := range arr {
		if items[i], ok = it.(map[string]any); !ok {
			t.Fatalf("item %d is not an object: %s", i, raw)
		}
	}
	return items, cursor
}

// kpGetPage fetches one page of path with the given limit ("" for the
// default) and cursor.
func (e *env) kpGetPage(path, cred, limit, cursor string) ([]map[string]any, string) {
	e.t.Helper()
	q := url.Values{}
	if limit != "" {
		q.Set("limit", limit)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return kpPage(e.t, e.must("GET", path, cred, nil))
}

// kpTraverse follows next_cursor to the end and returns the item ids, page by
// page; between pages it calls between (if set) with the page just read.
func (e *env) kpTraverse(path, limit string, between func(page []map[string]any)) [][]string {
	e.t.Helper()
	var pages [][]string
	cursor := ""
	for i := 0; ; i++ {
		if i > 100 {
			e.t.Fatalf("%s: traversal does not end", path)
		}
		items, next := e.kpGetPage(path, e.ownerKey, limit, cursor)
		var ids []string
		for _, it := range items {
			ids = append(ids, kpStr(it["id"]))
		}
		pages = append(pages, ids)
		if next == "" {
			return pages
		}
		if between != nil {
			between(items)
		}
		cursor = next
	}
}

func kpFlatten(pages [][]string) []string {
	var out []string
	for _, p := range pages {
		out = append(out, p...)
	}
	return out
}

// position is an item's sort key: (created_at, id).
func kpPosition(t *testing.T, it map[string]any) (time.Time, string) {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, kpStr(it["created_at"]))
	if err != nil {
		t.Fatalf("created_at %v: %v", it["created_at"], err)
	}
	return at, kpStr(it["id"])
}

// kpCheckOrder checks items are strictly ordered by (created_at, id),
// ascending or descending.
func kpCheckOrder(t *testing.T, items []map[string]any, desc bool) {
	t.Helper()
	for i := 1; i < len(items); i++ {
		pa, ia := kpPosition(t, items[i-1])
		pb, ib := kpPosition(t, items[i])
		less := pa.Before(pb) || (pa.Equal(pb) && ia < ib)
		if desc {
			less = pb.Before(pa) || (pa.Equal(pb) && ib < ia)
		}
		if !less {
			t.Errorf("items %d and %d out of order (desc=%v): %v %s / %v %s", i-1, i, desc, pa, ia, pb, ib)
		}
	}
}

func (e *env) kpCreateOrgs(n int, prefix string) []wire.Organization {
	e.t.Helper()
	out := make([]wire.Organization, n)
	for i := range out {
		out[i] = decodeData[wire.Organization](e.t, e.must("POST", kpInst+"/organizations", e.ownerKey,
			map[string]any{"name": fmt.Sprintf("%s %d", prefix, i), "slug": fmt.Sprintf("%s-%d", prefix, i)}))
	}
	return out
}

// kpInsertEvents writes n audit events for an organization directly, for
// volume without a request per event.
func (e *env) kpInsertEvents(orgID uuid.UUID, n int) {
	e.t.Helper()
	ctx := context.Background()
	for i := 0; i < n; i++ {
		ev := &store.AuditEvent{ID: uuid.New(), OrgID: &orgID, ActorType: "system", Action: "test.event",
			TargetType: "test", TargetID: fmt.Sprint(i), RequestID: "req_test", Details: store.JSONMap{}, CreatedAt: store.Now()}
		if err := e.st.InsertAuditEvent(ctx, ev); err != nil {
			e.t.Fatal(err)
		}
	}
}

var kpPaginated = []string{kpInst + "/organizations", kpInst + "/activity", kpOrg + "/activity"}

// TestPaginationLimit: limit is an integer 1 to 200, default 50, on every
// paginated collection.
func TestPaginationLimit(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		// 51 organizations in all (with "default"), and as many instance
		// audit events; 55 more in the default organization's activity.
		e.kpCreateOrgs(50, "bulk")
		e.kpInsertEvents(e.boot.Organization.ID, 55)

		for _, path := range kpPaginated {
			t.Run(path, func(t *testing.T) {
				e := e.kpWith(t)
				bad := []struct{ limit, typ string }{
					{"0", "greater_than_equal"},
					{"-1", "greater_than_equal"},
					{"201", "less_than_equal"},
					{"1000000", "less_than_equal"},
					{"abc", "int_parsing"},
					{"1.5", "int_parsing"},
					{"", "int_parsing"},
					{"99999999999999999999", "int_parsing"},
				}
				for _, b := range bad {
					status, raw := e.do("GET", path+"?limit="+url.QueryEscape(b.limit), e.ownerKey, nil)
					if status != http.StatusUnprocessableEntity {
						t.Errorf("limit=%q: %d %s, want 422", b.limit, status, raw)
						continue
					}
					if got := kpIssues(t, raw); len(got) != 1 || got[0] != (kpIssue{"query.limit", b.typ}) {
						t.Errorf("limit=%q: issues %v, want [{query.limit %s}]", b.limit, got, b.typ)
					}
				}
				good := []struct {
					limit    string
					want     int
					moreNext bool
				}{
					{"1", 1, true},
					{"2", 2, true},
					{"", 50, true},
					{"50", 50, true},
					{"200", -1, false}, // everything
				}
				var total int
				for _, g := range good {
					items, next := e.kpGetPage(path, e.ownerKey, g.limit, "")
					if g.want >= 0 && len(items) != g.want {
						t.Errorf("limit=%q: %d items, want %d", g.limit, len(items), g.want)
					}
					if (next != "") != g.moreNext {
						t.Errorf("limit=%q: next_cursor %q, want non-null=%v", g.limit, next, g.moreNext)
					}
					if g.limit == "200" {
						total = len(items)
					}
				}
				if total <= 50 || total > 200 {
					t.Fatalf("limit=200 returned %d items; the fixture should hold 51 to 200", total)
				}
				// Default page then the rest: everything, once.
				pages := e.kpTraverse(path, "", nil)
				var want []int
				for left := total; left > 0; left -= 50 {
					want = append(want, min(left, 50))
				}
				if fmt.Sprint(kpLens(pages)) != fmt.Sprint(want) {
					t.Errorf("default-size traversal: pages of %v, want %v", kpLens(pages), want)
				}
				// A limit equal to the number of items leaves no next page.
				if _, next := e.kpGetPage(path, e.ownerKey, fmt.Sprint(total), ""); next != "" {
					t.Errorf("limit=%d over %d items: next_cursor %q, want null", total, total, next)
				}
				if _, next := e.kpGetPage(path, e.ownerKey, fmt.Sprint(total-1), ""); next == "" {
					t.Errorf("limit=%d over %d items: next_cursor null", total-1, total)
				}
			})
		}
	})
}

func kpLens(pages [][]string) []int {
	out := make([]int, len(pages))
	for i, p := range pages {
		out[i] = len(p)
	}
	return out
}

// TestPaginationTraversal: small pages visit every item exactly once, in
// order, and a deleted boundary item does not stop or skew traversal.
func TestPaginationTraversal(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		// Organizations: "default" and 6 more = 7, oldest first.
		e.kpCreateOrgs(6, "p")
		// Organization activity: a fresh organization with exactly 7
		// events (its creation plus 6 workspaces), newest first.
		for i := 0; i < 6; i++ {
			e.must("POST", "/api/v1/organizations/p-0/workspaces", e.ownerKey, map[string]any{"name": fmt.Sprint("w", i)})
		}
		cases := []struct {
			path  string
			count int // -1: whatever the full listing has
			desc  bool
		}{
			{kpInst + "/organizations", 7, false},
			{"/api/v1/organizations/p-0/activity", 7, true},
			{kpInst + "/activity", -1, true},
		}
		for _, c := range cases {
			t.Run(c.path, func(t *testing.T) {
				e := e.kpWith(t)
				full, next := e.kpGetPage(c.path, e.ownerKey, "200", "")
				if next != "" {
					t.Fatal("fixture exceeds one 200-item page")
				}
				if c.count >= 0 && len(full) != c.count {
					t.Fatalf("%d items, want %d", len(full), c.count)
				}
				kpCheckOrder(t, full, c.desc)
				var want []string
				for _, it := range full {
					want = append(want, kpStr(it["id"]))
				}
				for _, limit := range []string{"1", "3", "6", "7"} {
					pages := e.kpTraverse(c.path, limit, nil)
					got := kpFlatten(pages)
					if strings.Join(got, ",") != strings.Join(want, ",") {
						t.Errorf("limit %s: traversal %v, want %v", limit, got, want)
					}
					n, _ := strconv.Atoi(limit)
					if wantPages := (len(want) + n - 1) / n; len(pages) != wantPages {
						t.Errorf("limit %s: %d pages %v, want %d", limit, len(pages), kpLens(pages), wantPages)
					}
				}
			})
		}

		// Organizations: delete the boundary item (the last of page one)
		// between pages; traversal goes on with the next item.
		t.Run("deleted boundary organization", func(t *testing.T) {
			e := e.kpWith(t)
			before := kpFlatten(e.kpTraverse(kpInst+"/organizations", "200", nil))
			var deleted string
			pages := e.kpTraverse(kpInst+"/organizations", "3", func(page []map[string]any) {
				if deleted == "" {
					deleted = kpStr(page[len(page)-1]["id"])
					e.must("DELETE", kpInst+"/organizations/"+deleted, e.ownerKey, nil)
				}
			})
			if deleted == "" || deleted != before[2] {
				t.Fatalf("deleted %q, want the third item %q", deleted, before[2])
			}
			if got := strings.Join(kpFlatten(pages), ","); got != strings.Join(before, ",") {
				t.Errorf("traversal with a deleted boundary: %v, want %v", kpFlatten(pages), before)
			}
			if len(pages) < 2 || len(pages[1]) != 3 {
				t.Errorf("page sizes %v, want the second page full", kpLens(pages))
			}
		})

		// Activity: delete the boundary event (directly; events are not
		// deleted through the API) and both neighbours of the boundary.
		t.Run("deleted boundary events", func(t *testing.T) {
			e := e.kpWith(t)
			path := "/api/v1/organizations/p-0/activity"
			before := kpFlatten(e.kpTraverse(path, "200", nil))
			var gone []string
			pages := e.kpTraverse(path, "2", func(page []map[string]any) {
				if gone != nil {
					return
				}
				gone = []string{kpStr(page[len(page)-1]["id"]), kpStr(page[len(page)-2]["id"])}
				_, err := e.st.DB().NewDelete().Table("audit_events").Where("id IN (?, ?)", gone[0], gone[1]).Exec(context.Background())
				if err != nil {
					t.Fatal(err)
				}
			})
			if got := strings.Join(kpFlatten(pages), ","); got != strings.Join(before, ",") {
				t.Errorf("traversal with a deleted boundary: %v, want %v", kpFlatten(pages), before)
			}
		})
	})
}

// TestPaginationCursorRejected: tampered, foreign, garbage and oversized
// cursors answer 422 {"detail":"invalid cursor"} and nothing else.
func TestPaginationCursorRejected(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.kpCreateOrgs(3, "c")
		for _, slug := range []string{"c-0", "c-1"} {
			for i := 0; i < 2; i++ {
				e.must("POST", "/api/v1/organizations/"+slug+"/workspaces", e.ownerKey, map[string]any{"name": fmt.Sprint("w", i)})
			}
		}
		cursorOf := func(path string) string {
			_, next := e.kpGetPage(path, e.ownerKey, "1", "")
			if next == "" {
				t.Fatalf("%s: no next_cursor with limit 1", path)
			}
			if len(next) > 256 {
				t.Fatalf("%s: next_cursor is %d characters, beyond what the server itself accepts", path, len(next))
			}
			return next
		}
		orgsC := cursorOf(kpInst + "/organizations")
		instAct := cursorOf(kpInst + "/activity")
		actA := cursorOf("/api/v1/organizations/c-0/activity")
		actB := cursorOf("/api/v1/organizations/c-1/activity")

		// A cursor from another instance (another database, cursor key).
		foreignEnv := newEnv(t, storetest.Open(t, storetest.SQLite), api.Options{})
		foreignEnv.kpCreateOrgs(2, "f")
		_, foreign := foreignEnv.kpGetPage(kpInst+"/organizations", foreignEnv.ownerKey, "1", "")

		type bad struct{ name, path, cursor string }
		cases := []bad{
			{"activity cursor on organizations", kpInst + "/organizations", instAct},
			{"organizations cursor on activity", kpInst + "/activity", orgsC},
			{"org A activity cursor on org B", "/api/v1/organizations/c-1/activity", actA},
			{"org B activity cursor on org A", "/api/v1/organizations/c-0/activity", actB},
			{"instance activity cursor on org activity", "/api/v1/organizations/c-0/activity", instAct},
			{"org activity cursor on instance activity", kpInst + "/activity", actA},
			{"another instance's cursor", kpInst + "/organizations", foreign},
			{"garbage", kpInst + "/organizations", "garbage"},
			{"empty", kpInst + "/organizations", ""},
			{"dot only", kpInst + "/organizations", "."},
			{"signature dropped", kpInst + "/organizations", strings.SplitN(orgsC, ".", 2)[0]},
			{"payload dropped", kpInst + "/organizations", "." + strings.SplitN(orgsC, ".", 2)[1]},
			{"extra segment", kpInst + "/organizations", orgsC + ".x"},
			{"oversized, valid prefix", kpInst + "/organizations", orgsC + strings.Repeat("A", 300)},
			{"oversized garbage", kpInst + "/organizations", strings.Repeat("A", 300)},
			{"huge", kpInst + "/organizations", strings.Repeat("A", 10000)},
			{"truncated", kpInst + "/organizations", orgsC[:len(orgsC)-1]},
			{"padded", kpInst + "/organizations", orgsC + "="},
			{"whitespace", kpInst + "/organizations", " " + orgsC},
		}
		// Flip each character once: every edit must be refused.
		for _, c := range []struct{ path, cursor string }{
			{kpInst + "/organizations", orgsC},
			{"/api/v1/organizations/c-0/activity", actA},
		} {
			for i := range c.cursor {
				flipped := []byte(c.cursor)
				flipped[i] = kpFlip(flipped[i])
				cases = append(cases, bad{fmt.Sprintf("flip %d of %s", i, c.path), c.path, string(flipped)})
			}
		}
		for _, c := range cases {
			status, raw := e.do("GET", c.path+"?cursor="+url.QueryEscape(c.cursor), e.ownerKey, nil)
			if status != http.StatusUnprocessableEntity || strings.TrimSpace(string(raw)) != `{"detail":"invalid cursor"}` {
				t.Errorf("%s: %d %s, want 422 {\"detail\":\"invalid cursor\"}", c.name, status, raw)
			}
		}
		// The genuine cursors still work where they belong.
		for _, c := range []struct{ path, cursor string }{
			{kpInst + "/organizations", orgsC},
			{kpInst + "/activity", instAct},
			{"/api/v1/organizations/c-0/activity", actA},
			{"/api/v1/organizations/c-1/activity", actB},
		} {
			if items, _ := e.kpGetPage(c.path, e.ownerKey, "1", c.cursor); len(items) != 1 {
				t.Errorf("%s: genuine cursor gave %d items", c.path, len(items))
			}
		}
		// A bad cursor is refused even with a bad limit beside it: one of
		// the two 422s, never a 200 or 500.
		if status, raw := e.do("GET", kpInst+"/organizations?limit=0&cursor=x", e.ownerKey, nil); status != http.StatusUnprocessableEntity {
			t.Errorf("bad limit and cursor: %d %s", status, raw)
		}
	})
}

// kpFlip changes a character to another one of the same (base64url)
// alphabet, so that only the content differs, not the form.
func kpFlip(c byte) byte {
	switch {
	case c == 'A':
		return 'B'
	case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '1' && c <= '9':
		return c - 1
	case c == '0':
		return '1'
	case c == '-':
		return '_'
	case c == '_':
		return '-'
	default:
		return 'A'
	}
}

// TestEnvelopeShapes: successes are wrapped exactly once; growing
// collections add page and nothing else; complete sets carry no page;
// errors are never wrapped.
func TestEnvelopeShapes(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		paged := []string{
			kpInst + "/organizations",
			kpInst + "/activity",
			kpOrg + "/activity",
			"/api/v1/organizations",
		}
		for _, p := range paged {
			items, _ := kpPage(t, e.must("GET", p, e.ownerKey, nil))
			if len(items) == 0 {
				t.Errorf("%s: empty; the fixture should hold something", p)
			}
			for _, it := range items {
				if _, nested := it["data"]; nested {
					t.Errorf("%s: item has a data member", p)
				}
			}
		}
		complete := []string{
			kpOrg + "/workspaces",
			kpOrg + "/management-keys",
			kpInst + "/management-keys",
			kpWS + "/management-keys",
			kpOrg + "/members",
			kpWS + "/members",
			kpOrg + "/service-accounts",
			kpOrg + "/invitations",
		}
		for _, p := range complete {
			status, raw := e.do("GET", p, e.ownerKey, nil)
			if status != http.StatusOK {
				t.Errorf("GET %s: %d %s", p, status, raw)
				continue
			}
			if _, ok := kpData(t, raw).([]any); !ok {
				t.Errorf("GET %s: data is not a list: %s", p, raw)
			}
			// Complete sets ignore paging parameters rather than growing a
			// page member.
			if _, raw := e.do("GET", p+"?limit=1", e.ownerKey, nil); strings.Contains(string(raw), `"page"`) {
				t.Errorf("GET %s?limit=1 grew a page member: %s", p, raw)
			}
		}
		singles := []struct{ method, path string }{
			{"GET", kpOrg},
			{"GET", kpWS},
			{"GET", "/api/v1/auth/me"},
			{"GET", kpInst + "/management-keys/" + e.boot.ManagementKey.ID.String()},
		}
		for _, s := range singles {
			if _, ok := kpData(t, e.must(s.method, s.path, e.ownerKey, nil)).(map[string]any); !ok {
				t.Errorf("%s %s: data is not an object", s.method, s.path)
			}
		}
		created := e.must("POST", kpOrg+"/management-keys", e.ownerKey, map[string]any{"permissions": []string{"organizations.read"}, "label": "x"})
		if _, ok := kpData(t, created).(map[string]any); !ok {
			t.Errorf("create: data is not an object: %s", created)
		}

		e.must("POST", kpInst+"/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"})
		narrow := e.key(kpOrg, e.ownerKey, []string{"organizations.read"}, nil).Token
		errs := []struct {
			name, method, path, cred string
			status                   int
		}{
			{"no credential", "GET", kpOrg, "", 401},
			{"missing permission", "GET", kpOrg + "/activity", narrow, 403},
			{"out of scope", "GET", "/api/v1/organizations/other", narrow, 403},
			{"unknown key", "GET", kpOrg + "/management-keys/" + uuid.NewString(), e.ownerKey, 404},
			{"unknown route", "GET", "/api/v1/no-such-thing", e.ownerKey, 404},
			{"bad cursor", "GET", kpOrg + "/activity?cursor=x", e.ownerKey, 422},
		}
		for _, c := range errs {
			status, raw := e.do(c.method, c.path, c.cred, nil)
			if status != c.status {
				t.Errorf("%s: %d %s, want %d", c.name, status, raw, c.status)
				continue
			}
			kpDetail(t, raw)
		}
		status, raw := e.do("GET", kpOrg+"/activity?limit=0", e.ownerKey, nil)
		if status != http.StatusUnprocessableEntity {
			t.Fatalf("limit=0: %d %s", status, raw)
		}
		kpIssues(t, raw) // checks {"detail":[…]} and nothing else
	})
}
