package tui

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// All I/O happens in the commands below; each answers with one typed
// message. Every load carries the sequence number it was issued with, and
// the root keeps only the answer to the newest load of each kind, so a
// slow answer for a period the user has already left never overwrites the
// one on screen.

// loadTimeout bounds one request, so a hung server shows up as an error on
// screen instead of a dashboard that silently stops updating.
const loadTimeout = 20 * time.Second

// loadKind says which load an answer or an error belongs to.
type loadKind int

const (
	loadReport loadKind = iota
	loadBreakdown
	loadWorkspaces
)

func (k loadKind) String() string {
	switch k {
	case loadReport:
		return "report"
	case loadBreakdown:
		return "breakdown"
	}
	return "workspace list"
}

type reportLoadedMsg struct {
	seq    int
	report wire.UsageReport
}

type breakdownLoadedMsg struct {
	seq       int
	by        string
	breakdown wire.UsageBreakdown
}

// workspacesLoadedMsg lists the workspaces with usage in the period, the
// ones `w` cycles through, largest cost first.
type workspacesLoadedMsg struct {
	seq int
	ids []string
}

type labelsLoadedMsg struct {
	labels map[string]string
}

type errMsg struct {
	kind loadKind
	seq  int
	err  error
}

// tickMsg is the auto refresh. gen is the generation of the timer that
// sent it: a manual refresh starts a new timer, and the old one's tick is
// then ignored, so refreshes stay one interval apart.
type tickMsg struct {
	gen int
}

// byChangedMsg is the breakdown table asking for another dimension.
type byChangedMsg struct {
	by string
}

// filterRowMsg is the breakdown table asking to filter the report by the
// selected row's key.
type filterRowMsg struct {
	by, key string
}

func loadReportCmd(src Source, seq int, q client.UsageQuery) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
		defer cancel()
		r, err := src.Report(ctx, q)
		if err != nil {
			return errMsg{kind: loadReport, seq: seq, err: err}
		}
		return reportLoadedMsg{seq: seq, report: r}
	}
}

func loadBreakdownCmd(src Source, seq int, by string, q client.UsageQuery) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
		defer cancel()
		b, err := Breakdown(ctx, src, by, q)
		if err != nil {
			return errMsg{kind: loadBreakdown, seq: seq, err: err}
		}
		return breakdownLoadedMsg{seq: seq, by: by, breakdown: b}
	}
}

// loadWorkspacesCmd finds the workspaces to cycle through: a breakdown by
// workspace of the same query without its workspace filter. Workspaces
// without usage in the period are left out on purpose; filtering on one
// would only show zeros.
func loadWorkspacesCmd(src Source, seq int, q client.UsageQuery) tea.Cmd {
	q.WorkspaceID = ""
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
		defer cancel()
		b, err := src.Breakdown(ctx, "workspace", q)
		if err != nil {
			return errMsg{kind: loadWorkspaces, seq: seq, err: err}
		}
		ids := make([]string, 0, len(b.Rows))
		for _, r := range b.Rows {
			if r.Key != "" {
				ids = append(ids, r.Key)
			}
		}
		return workspacesLoadedMsg{seq: seq, ids: ids}
	}
}

// loadLabelsCmd resolves names once, at start. Its error is dropped on
// purpose: names are a convenience, and a partial map is still useful.
func loadLabelsCmd(l Labeler) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
		defer cancel()
		labels, _ := l.Labels(ctx)
		return labelsLoadedMsg{labels: labels}
	}
}

func tickCmd(d time.Duration, gen int) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return tickMsg{gen: gen} })
}
