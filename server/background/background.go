// Package background runs work that can wait, such as writing usage to the
// database, so that it gives way to requests: on Linux, on a thread of its
// own at a lower scheduling priority (nice 10), which the kernel runs on
// whatever cores the requests leave free. Elsewhere it runs as any
// goroutine does.
//
// Raising a thread's nice value needs no privilege and lowering it would,
// so a thread is never given back: the goroutine that lowered it stays
// locked to it, and Go ends the thread when that goroutine returns (Go
// never ends a process's main thread: if the work ran there, it is parked
// for good instead, running nothing). No other goroutine ever runs at the
// lower priority, and Go creates new threads for a locked goroutine from
// its template thread, so none inherits it.
package background

// Do runs fn on a thread of its own at the lower priority, and waits for
// it: a new goroutine locks itself to its thread, lowers it, runs fn and
// returns, which ends the thread. Creating a thread each time is cheap
// beside the work worth giving way (a batch of database writes). What fn
// holds while it runs, others wait for longer when the cores are busy (the
// kernel runs its thread last): it should hold nothing a request waits for
// as a rule, only now and then.
func Do(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		lowerThread()
		fn()
	}()
	<-done
}
