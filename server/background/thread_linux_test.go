//go:build linux

package background_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gw-gateway/gw/server/background"
)

// Do runs its function on a lowered thread, that one only, and the thread
// ends with it, so nothing else ever runs at its priority; the caller stays
// at its own. (Go never ends a process's main thread: if the function ran
// there, the goroutine's end parks the thread for good, running nothing;
// the counts leave it out.)
func TestDoRunsItsFunctionOnALoweredThreadThatEnds(t *testing.T) {
	waitNoLoweredThread(t)
	mainLowered := lowered(t, true)
	var nice, during int
	background.Do(func() {
		nice = threadNice(t, unix.Gettid())
		during = lowered(t, true) - mainLowered
	})
	if nice != background.Nice {
		t.Errorf("Do ran its function at nice %d, want %d", nice, background.Nice)
	}
	if during != 1 {
		t.Errorf("%d threads lowered while the function ran, want its one", during)
	}
	if got := threadNice(t, unix.Gettid()); got != 0 {
		t.Errorf("Do's caller's thread is at nice %d", got)
	}
	waitNoLoweredThread(t)
}

// waitNoLoweredThread waits until no thread but the main one is lowered.
func waitNoLoweredThread(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for lowered(t, false) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("a lowered thread outlived its goroutine: other goroutines could run on it")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lowered counts this process's threads at background.Nice, the main
// thread only if withMain.
func lowered(t *testing.T, withMain bool) int {
	t.Helper()
	dirs, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Error(err) // not Fatal: Do's function calls this off the test's goroutine
		return -1
	}
	count := 0
	for _, d := range dirs {
		tid, err := strconv.Atoi(d.Name())
		if err != nil || (tid == os.Getpid() && !withMain) {
			continue
		}
		nice, err := readNice(tid)
		if err != nil {
			continue // ended meanwhile
		}
		if nice == background.Nice {
			count++
		}
	}
	return count
}

func threadNice(t *testing.T, tid int) int {
	n, err := readNice(tid)
	if err != nil {
		t.Error(err)
	}
	return n
}

// readNice is a thread's nice value, field 19 of its stat (counted after
// the command's closing parenthesis, since the command may hold spaces).
func readNice(tid int) (int, error) {
	b, err := os.ReadFile(filepath.Join("/proc/self/task", strconv.Itoa(tid), "stat"))
	if err != nil {
		return 0, err
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 17 {
		return 0, fmt.Errorf("thread %d: short stat %q", tid, s)
	}
	// fields[0] is field 3, the state.
	return strconv.Atoi(fields[19-3])
}
