-- eventcenter:no-transaction
-- The check-back claims, fair or oldest due first, read the PREPARED rows
-- by bizID and due time (eventcenter_messages_verify_due_biz, 0006). The
-- index of the PREPARED rows by partition and due time was read by the
-- claim without fair shares only, which no center runs (the verifier's
-- claims are fair), yet every PREPARE and every check-back claim wrote an
-- entry into it. Dropped CONCURRENTLY: inserts and claims go on meanwhile.
-- Centers of the release before this one claim check-backs fairly too,
-- so they never read it.
DROP INDEX CONCURRENTLY IF EXISTS eventcenter_messages_verify_due;
