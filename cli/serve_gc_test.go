package cli

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
		{"defaults, no container limit", nil, "max\n", nil, DefaultGCPercent, -1},
		{"defaults in a 1 GiB container", nil, "1073741824\n", nil, DefaultGCPercent, 1073741824 / 10 * 9},
		{"no cgroup file", nil, "", errors.New("absent"), DefaultGCPercent, -1},
		{"the operator's GOGC wins", map[string]string{"GOGC": "100"}, "max", nil, -1, -1},
		{"GOGC=off is the operator's", map[string]string{"GOGC": "off"}, "2147483648", nil, -1, 2147483648 / 10 * 9},
		{"the operator's GOMEMLIMIT wins", map[string]string{"GOMEMLIMIT": "512MiB"}, "1073741824", nil, DefaultGCPercent, -1},
		{"a cgroup value that is not a number", nil, "garbage", nil, DefaultGCPercent, -1},
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
