// Package admin is the operator's side of eventcenter: a JSON HTTP API under
// /api/v1/ and a small server-rendered web console under /ui, both served by
// the handler NewHandler returns.
//
// Every operator action (resolve as commit or rollback, redeliver, retry
// now, bulk retry of a bizID) goes through the store's Apply with the
// matching operator event, so the state machine decides what is allowed, and
// is written with an audit record naming who did it and why. Messages an
// action makes sendable are handed to the forwarder at once when the store
// given to NewHandler is the forwarder's fast path (forwarder.FastPath).
//
// Authentication uses bearer tokens from Config.Tokens, each with a scope:
// "read" may look, "admin" may also act. The console accepts the same
// tokens through a login form that sets a signed HttpOnly, SameSite=Strict
// cookie, and protects its forms against cross-site requests (Sec-Fetch-Site
// / Origin checks and a per-session form token). Without any token the
// handler refuses everything, unless Config.Insecure is set (development).
//
// Mounting: the handler serves the paths /api/v1/... and /ui/...; mount it
// for both prefixes, e.g.
//
//	mux.Handle("/api/v1/", h)
//	mux.Handle("/ui/", h)
//	mux.Handle("/ui", h)
//
// The dead-letter endpoints use a DLQ; NewKafkaDLQ reads the dead-letter
// topic directly and replays a record to the control topic. Each extra
// control lane has a DLQ of its own (Config.LaneDLQs), chosen with ?lane=.
//
// Sub-packages: adminapi (the JSON shapes), client (a Go client) and cli
// (the "eventcenter admin" commands).
package admin
