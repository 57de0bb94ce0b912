// Package sqlcore is what the store drivers share above their SQL: the
// Apply and RetryNowBizID sequence (load and lock the rows, store.Fold,
// codec.Prepare and forward, write) over a driver's transaction (Core), and
// the read side (Get, List, Counts, audit reads) over a driver's SQL
// fragments (Dialect). A driver gives connection specifics and one SQL
// fragment per rule; the rule itself is written here once. The state codes
// the statements test come from the state package (StatusSQL and friends),
// never from literals repeated per driver.
package sqlcore
