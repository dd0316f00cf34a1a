package runtime

// Internals the external tests (package runtime_test) reach, as net/http's export_test.go does.
var (
	SortToolUses            = sortToolUses
	InReplayOrder           = inReplayOrder
	TurnText                = turnText
	ReplayInput             = replayInput
	SummaryText             = summaryText
	ReplayChars             = replayChars
	ErrInvalidHistoryOption = errInvalidHistoryOption
)

const (
	DefaultReplayResultLimit = defaultReplayResultLimit
	TruncationMarker         = truncationMarker
)
