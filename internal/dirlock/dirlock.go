package dirlock

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FileName is the lock file Acquire creates in the directory.
const FileName = "eventcenter.lock"

// HeldError is Acquire's error when another process holds the directory.
type HeldError struct {
	Dir string
	// PID is the holder's process id, 0 when the lock file did not say
	// (the holder was still writing it).
	PID int
}

func (e *HeldError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("directory %s is in use by another process (its pid is not yet in %s)", e.Dir, filepath.Join(e.Dir, FileName))
	}
	return fmt.Sprintf("directory %s is in use by process %d (lock file %s); stop it or use another directory", e.Dir, e.PID, filepath.Join(e.Dir, FileName))
}

// Lock is a held directory lock. Release it when done.
type Lock struct {
	f *os.File
}

// Acquire takes the directory dir (which must exist) for this process. It
// does not wait: when another process (or another Acquire in this
// process) holds dir, it returns a *HeldError naming the holder's pid.
func Acquire(dir string) (*Lock, error) {
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	held, err := tryLock(f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if held {
		pid := readPID(f)
		_ = f.Close()
		return nil, &HeldError{Dir: dir, PID: pid}
	}
	if err := writePID(f); err != nil {
		_ = unlock(f)
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: write pid: %w", dir, err)
	}
	return &Lock{f: f}, nil
}

// Release gives the directory up. The lock file stays (removing it would
// let a process that opened it just before lock a file no longer there);
// it is emptied so that it names no pid.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	errs := []error{f.Truncate(0), unlock(f), f.Close()}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("release %s: %w", f.Name(), err)
	}
	return nil
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return err
	}
	return f.Sync()
}

func readPID(f *os.File) int {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 32))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid < 1 {
		return 0
	}
	return pid
}
