package validate

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func parse(t *testing.T, s string) any {
	t.Helper()
	v, err := ParseJSON([]byte(s), Loc{"body"})
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return v
}

func TestParseJSONErrors(t *testing.T) {
	cases := []struct{ in, typ string }{
		{"", "missing"},
		{"   ", "missing"},
		{"{", "json_invalid"},
		{`{"a":1} x`, "json_invalid"},
		{`{"a":1}{"b":2}`, "json_invalid"},
	}
	for _, c := range cases {
		_, err := ParseJSON([]byte(c.in), Loc{"body"})
		ve, ok := AsError(err)
		if !ok || len(ve.Issues) != 1 || ve.Issues[0].Type != c.typ || ve.Issues[0].Loc[0] != "body" {
			t.Errorf("%q: got %v", c.in, err)
		}
	}
}

func TestTruncatedJSONPointsAtTheEnd(t *testing.T) {
	_, err := ParseJSON([]byte(`{"target":`), Loc{"body"})
	ve, _ := AsError(err)
	if ve == nil || ve.Issues[0].Loc[1] != 10 {
		t.Fatalf("got %v", err)
	}
}

func TestObjectReportsEverythingAtOnce(t *testing.T) {
	v := parse(t, `{"name":"","count":1.5,"flag":"yes","extra":1,"list":[1,"x"],"kind":"nope"}`)
	var errs Errors
	o := ReadObject(v, Loc{"body"}, &errs)
	if v, ok := o.Require("name"); ok {
		String(v, Loc{"body", "name"}, StringRule{Min: 1}, &errs)
	}
	if v, ok := o.Require("count"); ok {
		Int(v, Loc{"body", "count"}, IntRule{}, &errs)
	}
	if v, ok := o.Require("flag"); ok {
		Bool(v, Loc{"body", "flag"}, &errs)
	}
	if v, ok := o.Require("list"); ok {
		List(v, Loc{"body", "list"}, ListRule{Max: 1}, &errs, func(item any, loc Loc) {
			String(item, loc, StringRule{}, &errs)
		})
	}
	o.Require("absent")
	Discriminator(o, "kind", []string{"a", "b"})
	o.Close()
	got := map[string]string{}
	for _, is := range errs.Err().(*Error).Issues {
		got[FormatLoc(is.Loc)] = is.Type
	}
	want := map[string]string{
		"body.name": "string_too_short", "body.count": "int_from_float", "body.flag": "bool_type",
		"body.list": "too_long", "body.list[0]": "string_type", "body.absent": "missing",
		"body": "union_tag_invalid", "body.extra": "extra_forbidden",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("issues\n got %v\nwant %v", got, want)
	}
}

func TestStringBoundsCountCharacters(t *testing.T) {
	rule := StringRule{Min: 1, Max: 3}
	for in, ok := range map[string]bool{"": false, "a": true, "ééé": true, "abcd": false} {
		var errs Errors
		_, good := String(in, Loc{"x"}, rule, &errs)
		if good != ok {
			t.Errorf("%q: ok=%v", in, good)
		}
	}
	var errs Errors
	String("1e3", Loc{"p"}, StringRule{Pattern: regexp.MustCompile(`^\d+(?:\.\d+)?$`)}, &errs)
	if errs.Len() != 1 || errs.issues[0].Type != "string_pattern_mismatch" {
		t.Fatalf("pattern: %+v", errs.issues)
	}
}

func TestIntRules(t *testing.T) {
	rule := IntRule{Min: Bound(2), Max: Bound(5)}
	cases := map[string]string{"1": "greater_than_equal", "2": "", "5": "", "6": "less_than_equal", `"3"`: "int_type", "2.5": "int_from_float", "3.0": ""}
	for in, typ := range cases {
		var v any
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		_ = dec.Decode(&v)
		var errs Errors
		Int(v, Loc{"n"}, rule, &errs)
		got := ""
		if errs.Len() > 0 {
			got = errs.issues[0].Type
		}
		if got != typ {
			t.Errorf("%s: got %q, want %q", in, got, typ)
		}
	}
	for in, typ := range map[string]string{"0": "greater_than_equal", "1": "", "200": "", "201": "less_than_equal", "x": "int_parsing", "": "int_parsing"} {
		var errs Errors
		IntString(in, Loc{"query", "limit"}, IntRule{Min: Bound(1), Max: Bound(200)}, &errs)
		got := ""
		if errs.Len() > 0 {
			got = errs.issues[0].Type
		}
		if got != typ {
			t.Errorf("query %q: got %q, want %q", in, got, typ)
		}
	}
}

func TestDateTimeAndUUID(t *testing.T) {
	var errs Errors
	if _, ok := DateTime("2030-01-02T03:04:05Z", Loc{"t"}, &errs); !ok {
		t.Fatal("valid datetime refused")
	}
	DateTime("2030-01-02T03:04:05", Loc{"t"}, &errs)
	DateTime("tomorrow", Loc{"t"}, &errs)
	UUIDString("not-a-uuid", Loc{"path", "id"}, &errs)
	UUID(7, Loc{"u"}, &errs)
	var types []string
	for _, is := range errs.issues {
		types = append(types, is.Type)
	}
	want := []string{"timezone_aware", "datetime_parsing", "uuid_parsing", "uuid_type"}
	if !reflect.DeepEqual(types, want) {
		t.Fatalf("got %v, want %v", types, want)
	}
}

func TestLiteralMessageQuotesLikePydantic(t *testing.T) {
	var errs Errors
	Literal("x", Loc{"r"}, []string{"a", "b", "c"}, &errs)
	if errs.issues[0].Msg != "Input should be 'a', 'b' or 'c'" {
		t.Fatalf("msg %q", errs.issues[0].Msg)
	}
}
