package validate

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	Cmd  string // upper case: FROM, RUN, ...
	Args string
}

// stage is one build stage.
type stage struct {
	Name, From   string
	Instructions []instruction
}

// parseDockerfile reads the instructions of a Dockerfile: comments and
// blank lines dropped, backslash continuations joined, global ARG defaults
// substituted into FROM lines. It knows only what this repository's
// Dockerfile uses; anything odd fails loudly.
func parseDockerfile(text string) (stages []stage, globalArgs map[string]string, err error) {
	globalArgs = map[string]string{}
	var lines []string
	var cur strings.Builder
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue // comment inside a continued instruction
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(strings.TrimSpace(s) + " ")
			continue
		}
		cur.WriteString(line)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		return nil, nil, fmt.Errorf("dangling continuation: %q", cur.String())
	}
	fromRE := regexp.MustCompile(`^(?:--platform=\S+\s+)?(\S+)(?:\s+(?i:AS)\s+(\S+))?$`)
	argRef := regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)
	for _, l := range lines {
		cmd, args, _ := strings.Cut(l, " ")
		cmd = strings.ToUpper(cmd)
		args = strings.TrimSpace(args)
		switch {
		case cmd == "FROM":
			m := fromRE.FindStringSubmatch(args)
			if m == nil {
				return nil, nil, fmt.Errorf("cannot read FROM %q", args)
			}
			from := argRef.ReplaceAllStringFunc(m[1], func(ref string) string {
				name := argRef.FindStringSubmatch(ref)[1]
				if v, ok := globalArgs[name]; ok {
					return v
				}
				return ref
			})
			stages = append(stages, stage{Name: m[2], From: from})
		case len(stages) == 0 && cmd == "ARG":
			k, v, _ := strings.Cut(args, "=")
			globalArgs[k] = v
		case len(stages) == 0:
			return nil, nil, fmt.Errorf("%s before the first FROM", cmd)
		default:
			s := &stages[len(stages)-1]
			s.Instructions = append(s.Instructions, instruction{cmd, args})
		}
	}
	return stages, globalArgs, nil
}

func findStage(t *testing.T, stages []stage, name string) stage {
	t.Helper()
	for _, s := range stages {
		if s.Name == name {
			return s
		}
	}
	require.FailNow(t, "no stage "+name)
	return stage{}
}

func instructions(s stage, cmd string) []string {
	var out []string
	for _, in := range s.Instructions {
		if in.Cmd == cmd {
			out = append(out, in.Args)
		}
	}
	return out
}

func jsonArgs(t *testing.T, s string) []string {
	t.Helper()
	var v []string
	require.NoError(t, json.Unmarshal([]byte(s), &v), "exec form: %s", s)
	return v
}

const buildScript = "deploy/docker/build.sh"

func TestDockerfile(t *testing.T) {
	t.Parallel()
	stages, _, err := parseDockerfile(string(readFile(t, filepath.Join(deployDir, "docker", "Dockerfile"))))
	require.NoError(t, err)

	// The build stage is Go 1.26 (through the deps stage) and runs the shared script.
	build := findStage(t, stages, "build")
	require.Equal(t, "deps", build.From)
	require.Equal(t, "golang:1.26", findStage(t, stages, "deps").From)
	runs := instructions(build, "RUN")
	require.Len(t, runs, 1)
	require.Contains(t, runs[0], buildScript+" /out/eventcenter ./cmd/eventcenter")
	require.NotContains(t, runs[0], "go build", "the build command lives in "+buildScript+" only")
	ex := findStage(t, stages, "build-example-producer")
	require.Contains(t, strings.Join(instructions(ex, "RUN"), " "), buildScript+" /out/example-producer ./deploy/compose/example-producer")

	// The runtime is the last (default) stage: distroless, non-root.
	rt := stages[len(stages)-1]
	require.Equal(t, "eventcenter", rt.Name)
	require.Equal(t, "gcr.io/distroless/static-debian12:nonroot", rt.From)
	require.Equal(t, []string{"--from=build /out/eventcenter /eventcenter"}, instructions(rt, "COPY"))
	require.Equal(t, []string{"nonroot:nonroot"}, instructions(rt, "USER"))
	require.Equal(t, []string{"8080"}, instructions(rt, "EXPOSE"))
	require.Equal(t, []string{"/eventcenter"}, jsonArgs(t, instructions(rt, "ENTRYPOINT")[0]))
	require.Equal(t, []string{"serve", "--config", "/etc/eventcenter/eventcenter.yaml"}, jsonArgs(t, instructions(rt, "CMD")[0]))
	hc := instructions(rt, "HEALTHCHECK")
	require.Len(t, hc, 1)
	_, probe, ok := strings.Cut(hc[0], " CMD ")
	require.True(t, ok, "HEALTHCHECK ... CMD [...]")
	require.Equal(t, []string{"/eventcenter", "healthcheck", "--url", "http://127.0.0.1:8080/healthz"}, jsonArgs(t, probe))
	require.Equal(t, "gcr.io/distroless/static-debian12:nonroot", findStage(t, stages, "example-producer").From)
}

func TestParseDockerfileErrors(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		"RUN echo before from\n",
		"FROM a AS b\nRUN x \\",
		"FROM a b c d\n",
	} {
		_, _, err := parseDockerfile(bad)
		require.Error(t, err, bad)
	}
	stages, args, err := parseDockerfile("ARG IMG=golang:1.26\n# c\nFROM --platform=$BUILDPLATFORM ${IMG} AS b\nRUN a \\\n  # note\n  b\n")
	require.NoError(t, err)
	require.Equal(t, "golang:1.26", args["IMG"])
	require.Equal(t, []stage{{Name: "b", From: "golang:1.26", Instructions: []instruction{{"RUN", "a b"}}}}, stages)
}

// The one build command: CGO off, trimmed paths, version stamped.
func TestBuildScriptIsTheBuildCommand(t *testing.T) {
	t.Parallel()
	script := string(readFile(t, filepath.Join(repoRoot, buildScript)))
	require.Contains(t, script, `CGO_ENABLED=0 go build -trimpath -ldflags "`)
	require.Contains(t, script, "-X $v.Version=$VERSION -X $v.Commit=$COMMIT")
	require.Contains(t, script, "v=github.com/eventcenter/eventcenter/internal/version")
	builds := 0
	for _, line := range strings.Split(script, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") && strings.Contains(line, "go build") {
			builds++
		}
	}
	require.Equal(t, 1, builds, "one build command")
	ci := string(readFile(t, filepath.Join(repoRoot, "ci", "deploy.sh")))
	require.Contains(t, ci, buildScript, "CI runs the same script as the image")
}

// The build context is the repository root; .dockerignore keeps secrets
// and bulk out and must not drop what the build needs.
func TestDockerignore(t *testing.T) {
	t.Parallel()
	var patterns []string
	for _, line := range strings.Split(string(readFile(t, filepath.Join(repoRoot, ".dockerignore"))), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	require.Contains(t, patterns, ".git")
	for _, p := range patterns {
		require.False(t, strings.HasPrefix(p, "!"), "no re-includes: keep the file simple")
		for _, needed := range []string{"go.mod", "go.sum", "cmd", "deploy/docker", "deploy/compose", "internal", "clientlib"} {
			require.NotEqual(t, needed, strings.TrimSuffix(p, "/"), "the build needs %s", needed)
		}
	}
}
