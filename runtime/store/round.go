package store

// roundHooks lets tests inject faults into RecordRound's transaction.
type roundHooks struct{}
