// Package httpguard holds the checks the center's HTTP listeners make
// before a request reaches a route: the admin API and console and the
// producer API use the same ones, so that they refuse the same requests in
// the same way.
//
//   - LoopbackHost: in open mode (no tokens) only requests addressed to
//     this machine are served, so that a web page whose name is re-pointed
//     at 127.0.0.1 (DNS rebinding) cannot reach the listener.
//   - CrossOrigin: cross-origin browser requests are refused, read by
//     net/http's CrossOriginProtection (Sec-Fetch-Site, else Origin against
//     Host); a listener no browser page has any business with refuses them
//     for every method, GET included.
//   - Slots and Limit: at most n requests served at once, the rest
//     answered 503 at once.
//   - TextErr: a path or query holding a NUL byte or invalid UTF-8 is a
//     bad request, before any store is asked (PostgreSQL's text type would
//     refuse it with an error that reads like an outage).
//   - JSONContentType: a JSON body only with a JSON content type (a page's
//     form or a no-cors fetch can send text/plain across sites without a
//     preflight).
//
// It imports nothing of the project.
package httpguard
