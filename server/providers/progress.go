package providers

// Progress is what a stream has relayed so far, for a record that must
// outlive the process: a data plane killed mid-stream bills, at its next
// start, what the last record says (the data plane's request journal).
// Reading it costs a few loads, no counting: it can be taken after every
// chunk. The counts are turned into tokens only after a crash, without the
// text (which is not kept).
type Progress struct {
	// TextBytes is the text relayed (content, refusals, tool calls' names
	// and arguments, reasoning), ReasoningBytes the part of it that was
	// reasoning, Pieces the non-empty deltas that carried it (each at
	// least one token generated).
	TextBytes, ReasoningBytes, Pieces int64
	// Input is the input the upstream reported so far, in the catalog's
	// classes (InputReported: it did, with a count above zero).
	Input, CacheRead, CacheWrite, CacheWrite1h int64
	InputReported                              bool
}

// ProgressStream is a ChunkStream that tells its Progress.
type ProgressStream interface {
	Progress() Progress
}

// progress is the relayed text's part of a Progress.
func (r *relayed) progress() Progress {
	return Progress{TextBytes: int64(r.text.Len() + r.rest), ReasoningBytes: int64(r.reasoning), Pieces: int64(r.pieces)}
}

// withInput adds an input the upstream reported (reported: it did), taken
// as estimate takes it: a zero input is no report.
func (p Progress) withInput(u Usage, reported bool) Progress {
	if !reported || u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens == 0 {
		return p
	}
	p.Input, p.CacheRead, p.CacheWrite, p.InputReported = u.InputTokens, u.CacheReadTokens, u.CacheWriteTokens, true
	p.CacheWrite1h = min(u.CacheWrite1hTokens, u.CacheWriteTokens)
	return p
}

func (s *openAIStream) Progress() Progress {
	return s.relayed.progress().withInput(s.usage, s.usage.InputReported)
}

func (s *anthropicStream) Progress() Progress {
	return s.relayed.progress().withInput(s.usage.usage(), s.sawStart)
}

func (s *anthropicNativeStream) Progress() Progress {
	return s.relayed.progress().withInput(s.usage.usage(), s.sawStart)
}

func (s *geminiStream) Progress() Progress {
	return s.relayed.progress().withInput(s.usage.usage(), s.sawUsage)
}

func (s *converseStream) Progress() Progress {
	return s.relayed.progress().withInput(s.usage.usage(), s.sawUsage)
}

func (s *responsesNativeStream) Progress() Progress {
	return s.relayed.progress().withInput(s.usage, s.usage.InputReported)
}

// Every stream an adapter returns tells its progress.
var (
	_ ProgressStream = (*openAIStream)(nil)
	_ ProgressStream = (*anthropicStream)(nil)
	_ ProgressStream = (*anthropicNativeStream)(nil)
	_ ProgressStream = (*geminiStream)(nil)
	_ ProgressStream = (*converseStream)(nil)
	_ ProgressStream = (*responsesNativeStream)(nil)
)
