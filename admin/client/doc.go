// Package client is a Go client of the eventcenter admin API (/api/v1/...):
// list and read messages, counts, operator actions and the dead-letter
// topic. Errors the server answers are *Error values carrying the HTTP
// status and the server's message. Requests go through one resty client
// (base URL, bearer token, JSON bodies, a bound on answers, no retries).
package client
