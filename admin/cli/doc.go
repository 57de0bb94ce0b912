// Package cli is the "admin" command of the eventcenter binary: list, get,
// counts, resolve, redeliver, retry, retry-biz, dlq list and dlq replay,
// talking to a running center's admin API through admin/client.
//
// The server comes from --server, else EVENTCENTER_ADMIN_SERVER, else
// http://127.0.0.1:8080; the token from --token, else
// EVENTCENTER_ADMIN_TOKEN. Output is a table for people (-o table, the
// default) or the API's JSON for scripts (-o json). A failed request returns
// an error carrying the server's message, so the binary exits non-zero.
package cli
