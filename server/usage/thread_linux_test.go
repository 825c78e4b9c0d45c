//go:build linux

package usage_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

// The sink's background flushes run on a thread of their own at nice 10,
// so a request's threads get the cores first; that thread ends with the
// sink, so no other goroutine ever runs at its priority. (Go never ends a
// process's main thread: if the writer ran there, its exit parks the thread
// for good instead, which runs nothing either. The counts leave it out.)
func TestStoreSinkFlushesOnALowPriorityThread(t *testing.T) {
	if n := threadsAtNice(t, 10, false); n != 0 {
		t.Fatalf("%d threads at nice 10 before the sink started", n)
	}
	mainWedged := threadsAtNice(t, 10, true)
	flushedAt := make(chan int, 16)
	st := store.New(storetest.Open(t, storetest.SQLite))
	sink := usage.NewStoreSink(st, usage.StoreSinkOptions{
		FlushInterval: 10 * time.Millisecond,
		Stored: func([]wire.UsageEventIn) {
			nice, err := threadNice(unix.Gettid())
			if err != nil {
				t.Error(err)
			}
			flushedAt <- nice
		},
	})
	src := newLoaderEvents()
	sink.Record(src.next())
	select {
	case nice := <-flushedAt:
		if nice != 10 {
			t.Errorf("the background flush ran at nice %d, want 10", nice)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no background flush in 10 s")
	}
	// The main thread may hold one at nice 10 parked by an earlier run.
	if n := threadsAtNice(t, 10, true) - mainWedged; n != 1 {
		t.Errorf("%d threads at nice 10 while the sink runs, want its one", n)
	}
	if err := sink.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Close's own last flush runs on the caller's thread, at its priority.
	deadline := time.Now().Add(10 * time.Second)
	for threadsAtNice(t, 10, false) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the low-priority thread outlived the sink: other goroutines could run on it")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// threadsAtNice counts this process's threads at nice n, the main thread
// only if withMain.
func threadsAtNice(t *testing.T, n int, withMain bool) int {
	t.Helper()
	dirs, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, d := range dirs {
		tid, err := strconv.Atoi(d.Name())
		if err != nil || (tid == os.Getpid() && !withMain) {
			continue
		}
		nice, err := threadNice(tid)
		if err != nil {
			continue // ended meanwhile
		}
		if nice == n {
			count++
		}
	}
	return count
}

// threadNice is a thread's nice value, field 19 of its stat (fields counted
// after the command's closing parenthesis, which may hold spaces).
func threadNice(tid int) (int, error) {
	b, err := os.ReadFile(filepath.Join("/proc/self/task", strconv.Itoa(tid), "stat"))
	if err != nil {
		return 0, err
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 17 {
		return 0, fmt.Errorf("thread %d: short stat %q", tid, s)
	}
	// fields[0] is field 3 (state); nice is field 19.
	return strconv.Atoi(fields[19-3])
}
