package archive

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gw-gateway/gw/server/egress"
)

// Resolve gives a workspace's destination as the data plane knows it now:
// known false while it does not know the workspace (its bundle not yet
// loaded), a nil destination once the workspace archives nothing.
type Resolve func(org, workspace uuid.UUID) (d *Destination, known bool)

// Options configure a Writer.
type Options struct {
	// Dir is the spool directory (under the data directory); created.
	Dir     string
	Dial    *egress.Dialer
	Resolve Resolve
	Log     *slog.Logger
	// MinBackoff and MaxBackoff bound the wait before a workspace's
	// store is tried again after a failure (defaults 1s and 5m).
	MinBackoff, MaxBackoff time.Duration
	// QueueBytes bounds the payloads held in memory waiting to be
	// spooled (default 32 MiB); past it Submit spools itself.
	QueueBytes int64
}

// Writer spools payloads on disk and uploads them in the background.
type Writer struct {
	o     Options
	queue chan *Payload
	held  atomic.Int64
	// queued counts the payloads submitted and not yet spooled.
	queued atomic.Int64
	wake   chan struct{}
	idle   chan struct{}

	// closing guards closed: once Run has ended, Submit spools itself
	// (what was queued then is spooled by Run on its way out).
	closing sync.RWMutex
	closed  bool

	mu      sync.Mutex
	clients map[Destination]*Client
	waits   map[uuid.UUID]*backoff

	written, failures, discarded prometheus.Counter
	spooled                      prometheus.Gauge
	spoolErrs                    prometheus.Counter
}

type backoff struct {
	next  time.Time
	delay time.Duration
}

// spoolExt names a spooled payload; tmpPrefix one being written.
const (
	spoolExt  = ".spool"
	tmpPrefix = ".tmp-"
)

// meta is the first line of a spool file: what the key is built from.
type meta struct {
	ID          uuid.UUID `json:"id"`
	OrgID       uuid.UUID `json:"org_id"`
	WorkspaceID uuid.UUID `json:"workspace_id"`
	OccurredAt  time.Time `json:"occurred_at"`
}

// NewWriter opens the spool in o.Dir (what an earlier process left there
// is uploaded too).
func NewWriter(o Options) (*Writer, error) {
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(5*time.Minute, o.MinBackoff)
	}
	if o.QueueBytes <= 0 {
		o.QueueBytes = 32 << 20
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("archive spool: %w", err)
	}
	w := &Writer{o: o, queue: make(chan *Payload, 1024), wake: make(chan struct{}, 1), idle: make(chan struct{}, 1),
		clients: map[Destination]*Client{}, waits: map[uuid.UUID]*backoff{},
		written: prometheus.NewCounter(prometheus.CounterOpts{Name: "gw_archive_objects_written_total",
			Help: "Request payloads written to their workspace's archive."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "gw_archive_upload_failures_total",
			Help: "Uploads of a payload to an archive that failed (it stays spooled and is retried)."}),
		discarded: prometheus.NewCounter(prometheus.CounterOpts{Name: "gw_archive_discarded_total",
			Help: "Spooled payloads dropped because their workspace no longer archives."}),
		spoolErrs: prometheus.NewCounter(prometheus.CounterOpts{Name: "gw_archive_spool_errors_total",
			Help: "Payloads that could not be written to the spool directory (lost)."}),
		spooled: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gw_archive_spooled_objects",
			Help: "Payloads spooled on disk waiting for their archive."}),
	}
	ents, _ := os.ReadDir(o.Dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			_ = os.Remove(filepath.Join(o.Dir, e.Name()))
		}
	}
	return w, nil
}

// Collectors are the writer's metrics, for the process's registry.
func (w *Writer) Collectors() []prometheus.Collector {
	return []prometheus.Collector{w.written, w.failures, w.discarded, w.spoolErrs, w.spooled}
}

// Submit hands a request's payload to the writer. It never waits on the
// store: the payload is queued in memory for the spooler, or, when the
// queue holds QueueBytes already, spooled on disk here.
func (w *Writer) Submit(p *Payload) {
	n := int64(len(p.Request) + len(p.Response))
	w.closing.RLock()
	defer w.closing.RUnlock()
	if !w.closed && w.held.Add(n) <= w.o.QueueBytes {
		w.queued.Add(1)
		select {
		case w.queue <- p:
			return
		default:
			w.queued.Add(-1)
		}
	}
	if !w.closed {
		w.held.Add(-n)
	}
	w.spool(p)
	w.poke()
}

func (w *Writer) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// spool writes p to the spool directory, atomically (a file is either
// whole or absent).
func (w *Writer) spool(p *Payload) {
	if err := w.spoolErr(p); err != nil {
		w.spoolErrs.Inc()
		w.o.Log.Error("archive: a payload could not be spooled", "usage_event_id", p.UsageEventID, "error", err)
	}
}

func (w *Writer) spoolErr(p *Payload) error {
	gz, err := Encode(p)
	if err != nil {
		return err
	}
	m, _ := json.Marshal(meta{ID: p.UsageEventID, OrgID: p.OrgID, WorkspaceID: p.WorkspaceID, OccurredAt: p.OccurredAt})
	// The workspace first in the name: a pass skips the files of a
	// workspace waiting out a backoff without reading them.
	name := p.WorkspaceID.String() + "_" + p.UsageEventID.String() + spoolExt
	tmp := filepath.Join(w.o.Dir, tmpPrefix+name)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	// Not synced: a file renamed into place survives the process (a
	// crash, a restart); only the machine's own crash may lose the last
	// ones, which one fsync a request would make the spool's speed.
	_, err = f.Write(append(append(m, '\n'), gz...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(w.o.Dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	w.spooled.Inc()
	return nil
}

// Run spools and uploads until ctx ends; what is spooled stays for the
// next process.
func (w *Writer) Run(ctx context.Context) {
	spooled := func(p *Payload) {
		w.spool(p)
		w.queued.Add(-1)
		w.held.Add(-int64(len(p.Request) + len(p.Response)))
		w.poke()
	}
	spooler := make(chan struct{})
	go func() {
		defer close(spooler)
		for {
			select {
			case <-ctx.Done():
				return
			case p := <-w.queue:
				spooled(p)
			}
		}
	}()
	defer func() {
		<-spooler
		w.closing.Lock()
		w.closed = true
		w.closing.Unlock()
		for {
			select {
			case p := <-w.queue:
				spooled(p)
			default:
				return
			}
		}
	}()
	w.refreshGauge()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		next := w.pass(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = max(time.Until(next), 0)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
			// Payloads come in bursts: one pass (a directory listing)
			// for each burst, not for each payload.
			select {
			case <-ctx.Done():
				return
			case <-time.After(passGap):
			}
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// passGap is how long a pass waits after the first payload of a burst.
const passGap = 20 * time.Millisecond

func (w *Writer) refreshGauge() {
	n, _ := w.pending()
	w.spooled.Set(float64(len(n)))
}

// pending lists the spooled files, oldest name first.
func (w *Writer) pending() ([]string, error) {
	ents, err := os.ReadDir(w.o.Dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), spoolExt) && !strings.HasPrefix(e.Name(), tmpPrefix) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// Pending is how many payloads are spooled or queued, not yet uploaded.
func (w *Writer) Pending() int {
	q := w.queued.Load()
	n, _ := w.pending()
	return len(n) + int(q)
}

// pass tries each spooled payload whose workspace is not waiting out a
// backoff, and returns when the earliest backoff ends (zero: none).
func (w *Writer) pass(ctx context.Context) time.Time {
	names, err := w.pending()
	if err != nil {
		w.o.Log.Error("archive: the spool cannot be read", "error", err)
		return time.Now().Add(w.o.MinBackoff)
	}
	var next time.Time
	for _, name := range names {
		if ctx.Err() != nil {
			return next
		}
		if ws, err := uuid.Parse(strings.SplitN(name, "_", 2)[0]); err == nil {
			if b := w.waits[ws]; b != nil && time.Now().Before(b.next) {
				if next.IsZero() || b.next.Before(next) {
					next = b.next
				}
				continue
			}
		}
		m, gz, err := w.read(name)
		if err != nil {
			w.o.Log.Error("archive: a spooled payload is damaged and is dropped", "file", name, "error", err)
			w.remove(name)
			continue
		}
		if b := w.waits[m.WorkspaceID]; b != nil && time.Now().Before(b.next) {
			continue
		}
		d, known := w.o.Resolve(m.OrgID, m.WorkspaceID)
		if known && d == nil {
			w.discarded.Inc()
			w.remove(name)
			continue
		}
		if !known {
			err = errors.New("workspace not known yet")
		} else {
			pctx, cancel := context.WithTimeout(ctx, time.Minute)
			err = w.client(*d).Put(pctx, Key(d.Prefix, m.OrgID, m.WorkspaceID, m.OccurredAt, m.ID), gz)
			cancel()
		}
		if err != nil {
			if ctx.Err() != nil {
				return next
			}
			w.failures.Inc()
			b := w.waits[m.WorkspaceID]
			if b == nil {
				b = &backoff{delay: w.o.MinBackoff}
				w.waits[m.WorkspaceID] = b
			} else {
				b.delay = min(b.delay*2, w.o.MaxBackoff)
			}
			b.next = time.Now().Add(b.delay)
			w.o.Log.Warn("archive: upload failed; the payload stays spooled", "workspace_id", m.WorkspaceID, "retry_in", b.delay, "error", err)
			if next.IsZero() || b.next.Before(next) {
				next = b.next
			}
			continue
		}
		delete(w.waits, m.WorkspaceID)
		w.written.Inc()
		w.remove(name)
	}
	return next
}

func (w *Writer) remove(name string) {
	if err := os.Remove(filepath.Join(w.o.Dir, name)); err == nil {
		w.spooled.Dec()
	}
}

func (w *Writer) read(name string) (meta, []byte, error) {
	var m meta
	b, err := os.ReadFile(filepath.Join(w.o.Dir, name))
	if err != nil {
		return m, nil, err
	}
	line, err := bufio.NewReader(bytes.NewReader(b)).ReadBytes('\n')
	if err != nil {
		return m, nil, err
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return m, nil, err
	}
	return m, b[len(line):], nil
}

// client is the cached client of d.
func (w *Writer) client(d Destination) *Client {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.clients[d]
	if c == nil {
		c = NewClient(d, w.o.Dial)
		w.clients[d] = c
	}
	return c
}
