package benchcompare

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build is one side of the comparison: what was asked for and the ectools
// binary that runs it.
type Build struct {
	// Spec is what was given: a binary's path or a git revision.
	Spec string `json:"spec"`
	// Revision is the commit a git revision resolved to ("" for a binary).
	Revision string `json:"revision,omitempty"`
	// Bin is the ectools binary.
	Bin string `json:"bin"`
}

// resolve turns spec into a binary: an executable file is used as it is;
// anything else is a git revision of repo, built once into cache (the
// binary is named by its commit, so a tag or branch that moves is built
// again).
func resolve(ctx context.Context, spec, repo, cache string, progress io.Writer) (Build, error) {
	if spec == "" {
		return Build{}, errors.New("empty build (want an ectools binary or a git revision)")
	}
	if fi, err := os.Stat(spec); err == nil {
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return Build{}, fmt.Errorf("%s: not an executable file (want an ectools binary or a git revision)", spec)
		}
		abs, err := filepath.Abs(spec)
		if err != nil {
			return Build{}, fmt.Errorf("%s: %w", spec, err)
		}
		return Build{Spec: spec, Bin: abs}, nil
	}
	out, err := command(ctx, repo, "git", "rev-parse", "--verify", "--quiet", spec+"^{commit}")
	if err != nil {
		return Build{}, fmt.Errorf("%s: neither a file nor a git revision of %s", spec, repo)
	}
	sha := strings.TrimSpace(out)
	bin := filepath.Join(cache, "ectools-"+sha)
	if _, err := os.Stat(bin); err == nil {
		fmt.Fprintf(progress, "build %s (%.12s): cached %s\n", spec, sha, bin)
		return Build{Spec: spec, Revision: sha, Bin: bin}, nil
	}
	fmt.Fprintf(progress, "build %s (%.12s): go build ./cmd/ectools (minutes on a cold build cache)\n", spec, sha)
	src, err := os.MkdirTemp(cache, "src-")
	if err != nil {
		return Build{}, fmt.Errorf("build %s: %w", spec, err)
	}
	defer os.RemoveAll(src)
	if err := checkout(ctx, repo, sha, src); err != nil {
		return Build{}, fmt.Errorf("build %s: %w", spec, err)
	}
	tmp := bin + ".tmp"
	if _, err := command(ctx, src, "go", "build", "-o", tmp, "./cmd/ectools"); err != nil {
		return Build{}, fmt.Errorf("build %s: %w", spec, err)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return Build{}, fmt.Errorf("build %s: %w", spec, err)
	}
	return Build{Spec: spec, Revision: sha, Bin: bin}, nil
}

// checkout writes the tree of commit sha into dir (git archive, read as
// it streams).
func checkout(ctx context.Context, repo, sha, dir string) error {
	cmd := exec.CommandContext(ctx, "git", "-C", repo, "archive", "--format=tar", sha)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("git archive: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git archive: %w", err)
	}
	untarErr := untar(pipe, dir)
	_, _ = io.Copy(io.Discard, pipe)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive %.12s: %w: %s", sha, err, strings.TrimSpace(stderr.String()))
	}
	return untarErr
}

// untar extracts the regular files, directories and symbolic links of a
// tar stream under dir, refusing names that leave it.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read archive: %w", err)
		}
		name := filepath.Clean(h.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("archive entry %q leaves the tree", h.Name)
		}
		path := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("write %s: %w", name, err)
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, path); err != nil {
				return err
			}
		}
	}
}

// command runs name with args in dir and returns its standard output; an
// error carries the end of what it wrote.
func command(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, tail(stderr.String(), 2000))
	}
	return out.String(), nil
}

// tail is the last n bytes of s, trimmed.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
