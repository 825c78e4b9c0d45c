package declfile

import (
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	a := strings.Split("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", " ")
	b := append([]string{}, a...)
	b[1] = "two"
	b = append(b[:15], append([]string{"15.5"}, b[15:]...)...)
	got := UnifiedDiff("a", "b", a, b)
	want := `--- a
+++ b
@@ -1,5 +1,5 @@
 1
-2
+two
 3
 4
 5
@@ -13,6 +13,7 @@
 13
 14
 15
+15.5
 16
 17
 18
`
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if d := UnifiedDiff("a", "b", a, a); d != "" {
		t.Fatalf("equal inputs: %q", d)
	}
	if d := UnifiedDiff("a", "b", nil, []string{"x"}); d != "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n" {
		t.Fatalf("from empty: %q", d)
	}
}
