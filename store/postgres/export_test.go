package postgres

// MarkSentSQL is markSentSQL, for the plan tests.
const MarkSentSQL = markSentSQL
