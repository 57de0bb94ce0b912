// Package dubbogo is the end-to-end check of the center against real
// dubbo-go v3 providers that register themselves (interface-level) in a
// real ZooKeeper. It is a module of its own, so that dubbo-go's
// dependency graph stays out of the center's go.mod; run it with
//
//	cd testsupport/dubbogo && GOWORK=off go test ./...
//
// It needs java and Debian's zookeeper package (testsupport/zktest). It
// has no Go API.
package dubbogo
