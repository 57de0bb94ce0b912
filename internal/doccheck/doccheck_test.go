package doccheck

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// The front door and the figures page stay short: a README a newcomer
// reads in minutes, and current figures only.
var lineBudgets = map[string]int{
	"README.md":           300,
	"docs/performance.md": 250,
}

func TestLineBudgets(t *testing.T) {
	root := repoRoot(t)
	for name, most := range lineBudgets {
		b, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		n := strings.Count(string(b), "\n")
		if !strings.HasSuffix(string(b), "\n") {
			n++
		}
		require.LessOrEqual(t, n, most, "%s has %d lines, at most %d: move what is not the page's job to a topic page under docs/", name, n, most)
	}
}

// CI runs exactly the test command the README gives, so that what passes
// in CI is what a newcomer runs.
func TestCIRunsTheReadmesTestCommand(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	require.NoError(t, err)
	cmds := regexp.MustCompile("(?m)^go test .*$").FindAllString(string(readme), -1)
	require.Len(t, cmds, 1, "the README gives one test command (a line starting with \"go test \")")
	var ran []string
	for _, line := range strings.Split(string(ci), "\n") {
		if strings.HasPrefix(line, "go test ") && strings.Contains(line, "./...") && !strings.Contains(line, "-fuzz") {
			ran = append(ran, line)
		}
	}
	require.Equal(t, cmds, ran, ".ci/run's test command differs from the README's")
}

// Every relative link of every Markdown file resolves, and its fragment
// names a heading or an anchor of the page it points to.
func TestMarkdownLinks(t *testing.T) {
	r := newRepo(t)
	var bad []string
	for _, md := range r.markdown {
		for _, l := range r.pages[md].links {
			if err := r.check(md, l); err != nil {
				bad = append(bad, fmt.Sprintf("%s:%d: (%s): %v", md, l.line, l.target, err))
			}
		}
	}
	require.Empty(t, bad, "broken links:\n%s", strings.Join(bad, "\n"))
}

// Code, comments, help texts, configuration and scripts name pages by
// path (docs/ordering.md, docs/ordering.md#the-wire-rule) or by path and
// section title (docs/ordering.md "The wire rule", README "Quickstart");
// every such page and section exists. Markdown pages' quoted section
// references are checked the same way.
func TestReferencesToPages(t *testing.T) {
	r := newRepo(t)
	var bad []string
	for _, f := range r.files {
		// docs/bench holds raw reports; this package's own files hold the
		// checker's broken examples.
		if strings.HasPrefix(f, "docs/bench/") || strings.HasPrefix(f, "internal/doccheck/") ||
			!referenceExt[filepath.Ext(f)] && filepath.Base(f) != "run" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(r.root, f))
		require.NoError(t, err)
		text := string(b)
		isMD := filepath.Ext(f) == ".md"
		if !isMD {
			for _, m := range pathRef.FindAllStringSubmatchIndex(text, -1) {
				ref := text[m[2]:m[3]]
				if partOfURL(text, m[2]) || strings.ContainsAny(ref, "*{") {
					continue
				}
				frag := ""
				if m[4] >= 0 {
					frag = text[m[4]+1 : m[5]]
				}
				if err := r.checkRef(f, ref, frag); err != nil {
					bad = append(bad, fmt.Sprintf("%s:%d: %s: %v", f, lineOf(text, m[0]), text[m[0]:m[1]], err))
				}
			}
		}
		if isMD {
			text = stripCode(text)
		}
		for _, m := range titledRef.FindAllStringSubmatchIndex(text, -1) {
			ref, title := text[m[2]:m[3]], text[m[4]:m[5]]
			if partOfURL(text, m[2]) {
				continue
			}
			if ref == "README" {
				ref = "README.md"
			}
			if err := r.checkTitled(f, ref, title); err != nil {
				bad = append(bad, fmt.Sprintf("%s:%d: %s: %v", f, lineOf(text, m[0]), text[m[0]:m[1]], err))
			}
		}
	}
	require.Empty(t, bad, "references to pages or sections that do not exist:\n%s", strings.Join(bad, "\n"))
}

// Only the raw reports a current figure cites stay under docs/bench/:
// each file there is linked, itself or through a directory that holds
// it, from a Markdown page outside docs/bench/ (git history keeps the
// rest).
func TestBenchReportsAreCited(t *testing.T) {
	r := newRepo(t)
	cited := map[string]bool{}
	for _, md := range r.markdown {
		if strings.HasPrefix(md, "docs/bench/") {
			continue
		}
		for _, l := range r.pages[md].links {
			if p, _, ok := r.resolve(md, l.target); ok {
				cited[p] = true
			}
		}
	}
	var uncited []string
	for _, f := range r.files {
		if !strings.HasPrefix(f, "docs/bench/") || f == "docs/bench/README.md" {
			continue
		}
		ok := false
		for p := f; p != "docs/bench" && p != "."; p = filepath.ToSlash(filepath.Dir(p)) {
			if cited[p] {
				ok = true
				break
			}
		}
		if !ok {
			uncited = append(uncited, f)
		}
	}
	require.Empty(t, uncited, "files under docs/bench/ that no page outside it links (to the file or a directory holding it): cite them from the figure they back, or remove them")
}

// The checks themselves: a slug, a broken link and a reference to a
// missing section are told apart from good ones.
func TestCheckerFindsWhatIsBroken(t *testing.T) {
	require.Equal(t, "the-import-rule", slug("The import rule"))
	require.Equal(t, "fair-share-between-bizids-forwarding-and-lanes", slug("Fair share between bizIDs: forwarding and lanes"))
	require.Equal(t, "ec-topic-and-ec-verify", slug("`ec-topic` and `ec-verify`"))
	require.Equal(t, "the-producer-http-api", slug("The [producer](x.md) HTTP API"))

	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600))
	}
	write("README.md", "# Title\n\n## The two commands\n\nSee [ordering](docs/ordering.md#the-wire-rule), [gone](docs/gone.md), [bad anchor](docs/ordering.md#no-such), [self](#the-two-commands), [selfbad](#nope).\n\n```\n[in code](nowhere.md)\n```\n")
	write("docs/ordering.md", "# Ordering\n\n## The wire rule\n\n## The wire rule\n\n[dup](#the-wire-rule-1) [up](../README.md#title) [bench](bench/2026-01-01-x/)\n")
	write("docs/bench/2026-01-01-x/a.json", "{}")
	write("docs/bench/loose.json", "{}")
	write("code/x.go", "// per key (docs/ordering.md \"The wire rule\"; README \"Missing section\"), docs/ordering.md#nope, docs/none.md, https://example.com/a/README.md\n")
	r := scan(t, dir)
	var broken []string
	for _, md := range r.markdown {
		for _, l := range r.pages[md].links {
			if r.check(md, l) != nil {
				broken = append(broken, l.target)
			}
		}
	}
	require.ElementsMatch(t, []string{"docs/gone.md", "docs/ordering.md#no-such", "#nope"}, broken)
	require.NoError(t, r.checkTitled("code/x.go", "docs/ordering.md", "The wire rule"))
	require.Error(t, r.checkTitled("code/x.go", "README.md", "Missing section"))
	require.Error(t, r.checkRef("code/x.go", "docs/ordering.md", "nope"))
	require.Error(t, r.checkRef("code/x.go", "docs/none.md", ""))
	require.NoError(t, r.checkRef("code/x.go", "docs/ordering.md", "the-wire-rule"))
	text := "see https://example.com/a/README.md"
	require.True(t, partOfURL(text, strings.Index(text, "README")))
	_, _, ok := r.resolve("docs/ordering.md", "bench/2026-01-01-x/")
	require.True(t, ok)
}

// --- the checker --------------------------------------------------------

var (
	// referenceExt are the files whose text may name a page.
	referenceExt = map[string]bool{".go": true, ".yaml": true, ".yml": true, ".json": true, ".py": true,
		".mjs": true, ".sh": true, ".html": true, ".md": true}
	// pathRef: a page named by path in code or configuration.
	pathRef = regexp.MustCompile(`([A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md)(#[A-Za-z0-9_-]+)?`)
	// titledRef: a page and a section title: README "Ordering",
	// docs/ordering.md "The wire rule", the README, "Check-back".
	titledRef = regexp.MustCompile(`\b((?:[A-Za-z0-9_./-]+/)?[A-Za-z0-9_-]+\.md|README)(?:'s)?,?\s+(?:section\s+)?"([^"\n]{2,80})"`)
	heading   = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$`)
	anchorTag = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	inline    = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^()\s<>]+(?:\([^()\s]*\))?)>?(?:\s+"[^"]*")?\s*\)`)
	refDef    = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	htmlLink  = regexp.MustCompile(`<(?:a|img)\s[^>]*?(?:href|src)="([^"]+)"`)
	codeSpan  = regexp.MustCompile("`+[^`\n]*`+")
	scheme    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	lineFrag  = regexp.MustCompile(`^L[0-9]+(-L[0-9]+)?$`)
)

type link struct {
	target string
	line   int
}

type page struct {
	anchors  map[string]bool
	headings []string
	links    []link
}

type repo struct {
	root     string
	files    []string // slash paths relative to root
	exists   map[string]bool
	dirs     map[string]bool
	markdown []string
	pages    map[string]*page
}

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	return scan(t, repoRoot(t))
}

// scan reads the tree under root: every file but those of hidden
// directories (.git; .ci is read), node_modules and build output.
func scan(t *testing.T, root string) *repo {
	t.Helper()
	r := &repo{root: root, exists: map[string]bool{}, dirs: map[string]bool{".": true}, pages: map[string]*page{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") && name != ".ci" || name == "node_modules" || rel == "bin" || name == "__pycache__") {
				return filepath.SkipDir
			}
			r.dirs[rel] = true
			return nil
		}
		r.files = append(r.files, rel)
		r.exists[rel] = true
		if strings.HasSuffix(rel, ".md") {
			r.markdown = append(r.markdown, rel)
		}
		return nil
	})
	require.NoError(t, err)
	for _, md := range r.markdown {
		b, err := os.ReadFile(filepath.Join(root, md))
		require.NoError(t, err)
		r.pages[md] = parse(string(b))
	}
	return r
}

// parse finds a page's headings (as GitHub anchors them), explicit anchors
// and links, outside code.
func parse(text string) *page {
	p := &page{anchors: map[string]bool{}}
	seen := map[string]int{}
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[2])
			n := seen[s]
			seen[s]++
			if n > 0 {
				s = fmt.Sprintf("%s-%d", s, n)
			}
			p.anchors[s] = true
			p.headings = append(p.headings, plain(m[2]))
		}
		for _, m := range anchorTag.FindAllStringSubmatch(line, -1) {
			p.anchors[m[1]] = true
		}
		code := codeSpan.ReplaceAllString(line, "")
		for _, re := range []*regexp.Regexp{inline, refDef, htmlLink} {
			for _, m := range re.FindAllStringSubmatch(code, -1) {
				p.links = append(p.links, link{target: m[1], line: i + 1})
			}
		}
	}
	return p
}

// plain is a heading's text without its inline Markdown: link targets,
// code ticks and emphasis.
func plain(h string) string {
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
	return strings.NewReplacer("`", "", "*", "").Replace(h)
}

// slug is GitHub's anchor for a heading: lower case, punctuation other
// than - and _ dropped, spaces to hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(plain(h)) {
		switch {
		case c == ' ':
			b.WriteRune('-')
		case c == '-' || c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c) || unicode.Is(unicode.Mn, c):
			b.WriteRune(c)
		}
	}
	return b.String()
}

// stripCode blanks fenced blocks and code spans (keeping the line count).
func stripCode(text string) string {
	var out []string
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			line = ""
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			line = ""
		}
		out = append(out, codeSpan.ReplaceAllString(line, ""))
	}
	return strings.Join(out, "\n")
}

// resolve turns a link target of page from into a path of the tree and a
// fragment; ok is false for a path that does not exist. Absolute URLs
// resolve to ("", "", false) too: callers skip them first.
func (r *repo) resolve(from, target string) (path, frag string, ok bool) {
	target, frag, _ = strings.Cut(target, "#")
	if target == "" {
		return from, frag, true
	}
	unescaped, err := url.PathUnescape(target)
	if err == nil {
		target = unescaped
	}
	target, _, _ = strings.Cut(target, "?")
	var p string
	if strings.HasPrefix(target, "/") {
		p = filepath.ToSlash(filepath.Clean(strings.TrimPrefix(target, "/")))
	} else {
		p = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(from), target)))
	}
	return p, frag, r.exists[p] || r.dirs[p]
}

func (r *repo) check(from string, l link) error {
	if scheme.MatchString(l.target) {
		return nil
	}
	p, frag, ok := r.resolve(from, l.target)
	if !ok {
		return fmt.Errorf("no such file or directory: %s", p)
	}
	return r.checkFrag(p, frag)
}

func (r *repo) checkFrag(p, frag string) error {
	if frag == "" {
		return nil
	}
	pg := r.pages[p]
	if pg == nil {
		if r.exists[p] && lineFrag.MatchString(frag) {
			return nil
		}
		return fmt.Errorf("#%s: %s is not a Markdown page", frag, p)
	}
	if !pg.anchors[frag] {
		return fmt.Errorf("%s has no heading or anchor #%s", p, frag)
	}
	return nil
}

// checkRef checks a page named by path in a file that is not Markdown:
// the path is the repository's (docs/ordering.md) or the file's own
// directory's (README.md beside the code).
func (r *repo) checkRef(from, ref, frag string) error {
	p, ok := r.page(from, ref)
	if !ok {
		return fmt.Errorf("no page %s", ref)
	}
	return r.checkFrag(p, frag)
}

func (r *repo) page(from, ref string) (string, bool) {
	for _, p := range []string{ref, filepath.ToSlash(filepath.Join(filepath.Dir(from), ref))} {
		p = filepath.ToSlash(filepath.Clean(p))
		if r.exists[p] {
			return p, true
		}
	}
	return "", false
}

// checkTitled checks a reference by section title: a heading of the page
// begins with the title (case aside).
func (r *repo) checkTitled(from, ref, title string) error {
	p, ok := r.page(from, ref)
	if !ok {
		if strings.HasSuffix(from, ".md") {
			if q, _, ok := r.resolve(from, ref); ok {
				p = q
			}
		}
		if p == "" {
			return fmt.Errorf("no page %s", ref)
		}
	}
	pg := r.pages[p]
	if pg == nil {
		return fmt.Errorf("%s is not a Markdown page", p)
	}
	want := strings.ToLower(title)
	if slices.ContainsFunc(pg.headings, func(h string) bool { return strings.HasPrefix(strings.ToLower(h), want) }) {
		return nil
	}
	return fmt.Errorf("%s has no section %q", p, title)
}

// partOfURL tells whether the text at i belongs to a URL (a word holding
// "://").
func partOfURL(text string, i int) bool {
	const delims = " \t\n\"'`()<>"
	start := strings.LastIndexAny(text[:i], delims) + 1
	end := strings.IndexAny(text[i:], delims)
	if end < 0 {
		end = len(text) - i
	}
	return strings.Contains(text[start:i+end], "://")
}

func lineOf(text string, i int) int { return strings.Count(text[:i], "\n") + 1 }
