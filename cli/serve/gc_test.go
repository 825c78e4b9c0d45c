package serve

import (
	"errors"
	"testing"
)

func TestChooseGC(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	file := func(content string, err error) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if name != cgroupMemoryMax {
				t.Fatalf("read %s", name)
			}
			return []byte(content), err
		}
	}
	cases := []struct {
		name    string
		env     map[string]string
		cgroup  string
		err     error
		percent int
		limit   int64
	}{
		{"no container limit: Go's defaults", nil, "max\n", nil, -1, -1},
		{"no cgroup file: Go's defaults", nil, "", errors.New("absent"), -1, -1},
		{"a cgroup value that is not a number", nil, "garbage", nil, -1, -1},
		{"a 1 GiB container", nil, "1073741824\n", nil, LimitedGCPercent, 1073741824 / 10 * 9},
		{"the operator's GOGC wins", map[string]string{"GOGC": "100"}, "1073741824", nil, -1, 1073741824 / 10 * 9},
		{"GOGC=off is the operator's", map[string]string{"GOGC": "off"}, "2147483648", nil, -1, 2147483648 / 10 * 9},
		{"the operator's GOMEMLIMIT wins, and bounds a GOGC of 400", map[string]string{"GOMEMLIMIT": "512MiB"}, "1073741824", nil, LimitedGCPercent, -1},
		{"the operator's GOMEMLIMIT without a container", map[string]string{"GOMEMLIMIT": "512MiB"}, "max", nil, LimitedGCPercent, -1},
		{"GOMEMLIMIT=off is no limit", map[string]string{"GOMEMLIMIT": "off"}, "max", nil, -1, -1},
		{"GOMEMLIMIT=off is the operator's, container or not", map[string]string{"GOMEMLIMIT": "off"}, "1073741824", nil, -1, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := chooseGC(env(c.env), file(c.cgroup, c.err))
			if got.percent != c.percent || got.memoryLimit != c.limit {
				t.Fatalf("got %+v, want percent %d limit %d", got, c.percent, c.limit)
			}
		})
	}
}
