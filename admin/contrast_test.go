package admin

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/internal/chart"
)

// Surfaces text may sit on when its rule sets no background of its own:
// the page, the light grey of headers, forms and badges; in the header bar,
// its dark background.
var (
	lightSurfaces  = []string{"#ffffff", "var(--bg)"}
	headerSurfaces = []string{"#24292f"}
)

var (
	styleRe = regexp.MustCompile(`(?s)<style>(.*?)</style>`)
	ruleRe  = regexp.MustCompile(`([^{}]+)\{([^{}]*)\}`)
	varRe   = regexp.MustCompile(`--([a-z]+):(#[0-9a-fA-F]{3,6})`)
)

type cssRule struct {
	selector string
	decls    map[string]string
}

func parseCSS(css string) []cssRule {
	var out []cssRule
	for _, m := range ruleRe.FindAllStringSubmatch(css, -1) {
		r := cssRule{selector: strings.TrimSpace(m[1]), decls: map[string]string{}}
		for d := range strings.SplitSeq(m[2], ";") {
			k, v, ok := strings.Cut(d, ":")
			if ok {
				r.decls[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		out = append(out, r)
	}
	return out
}

// colourOf resolves var(--x) and says whether v is a colour to check
// (none, inherit and the like are not).
func colourOf(v string, vars map[string]string) (string, bool) {
	if name, ok := strings.CutPrefix(v, "var(--"); ok {
		v = vars[strings.TrimSuffix(name, ")")]
	}
	if !strings.HasPrefix(v, "#") {
		return "", false
	}
	return v, true
}

// contrastProblems lists the rules of a stylesheet whose text fails WCAG AA
// (4.5:1) on its background, and the rules that set a background without a
// text colour (their text would inherit one made for another background:
// the "insecure mode" badge was light grey on light grey that way).
func contrastProblems(t *testing.T, css string) []string {
	t.Helper()
	vars := map[string]string{}
	for _, m := range varRe.FindAllStringSubmatch(css, -1) {
		vars[m[1]] = m[2]
	}
	require.NotEmpty(t, vars, "no :root colours found")
	var problems []string
	checked := 0
	for _, r := range parseCSS(css) {
		if r.selector == ":root" {
			continue
		}
		bgv, hasBG := r.decls["background"]
		if !hasBG {
			bgv, hasBG = r.decls["background-color"]
		}
		bg, bgColour := colourOf(bgv, vars)
		fgv, hasFG := r.decls["color"]
		fg, fgColour := colourOf(fgv, vars)
		if hasBG && bgColour && !hasFG {
			problems = append(problems, r.selector+": sets a background ("+bgv+") but no text colour")
			continue
		}
		if !hasFG || !fgColour {
			continue
		}
		var surfaces []string
		switch {
		case hasBG && bgColour:
			surfaces = []string{bg}
		case strings.HasPrefix(r.selector, "header"):
			surfaces = headerSurfaces
		default:
			surfaces = lightSurfaces
		}
		for _, s := range surfaces {
			s, _ = colourOf(s, vars)
			c, err := chart.Contrast(fg, s)
			require.NoError(t, err, r.selector)
			checked++
			if c < 4.5 {
				problems = append(problems, fmt.Sprintf("%s: %s on %s is %.2f:1, under 4.5:1", r.selector, fg, s, c))
			}
		}
	}
	require.Greater(t, checked, 10, "too few colour pairs found: is the stylesheet still parsed?")
	return problems
}

// TestStylesheetContrast checks every text colour of the console's
// stylesheet against its background (WCAG AA, 4.5:1).
func TestStylesheetContrast(t *testing.T) {
	t.Parallel()
	layout, err := templateFS.ReadFile("templates/layout.html")
	require.NoError(t, err)
	m := styleRe.FindSubmatch(layout)
	require.NotNil(t, m, "no <style> in layout.html")
	require.Empty(t, contrastProblems(t, string(m[1])))
}

// The check finds what the console once had.
func TestStylesheetContrastFindsProblems(t *testing.T) {
	t.Parallel()
	css := `:root{--fg:#1f2328;--bg:#f6f8fa}
header{background:#24292f;color:#fff}
header .who{color:#c9d1d9}
.badge{border:1px solid #d0d7de;background:var(--bg)}
.zero{color:#afb8c1}
th{background:var(--bg);color:var(--fg)}
a{color:#0969da}
p{color:#1f2328}
b{color:#1f2328}
i{color:#1f2328}
u{color:#1f2328}
s{color:#1f2328}`
	problems := contrastProblems(t, css)
	require.Len(t, problems, 3, "%q", problems)
	require.Contains(t, problems[0], ".badge: sets a background")
	require.Contains(t, problems[1], ".zero: #afb8c1 on #ffffff")
	require.Contains(t, problems[2], ".zero: #afb8c1 on #f6f8fa")
}
