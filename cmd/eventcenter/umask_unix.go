//go:build unix

package main

import "syscall"

// privateUmask makes every file and directory this process creates from
// now on readable by its owner only (umask 077): the embedded broker
// writes its files 0644 and its directories 0755, and they hold message
// payloads. restore puts the previous umask back.
func privateUmask() (restore func()) {
	old := syscall.Umask(0o077)
	return func() { syscall.Umask(old) }
}
