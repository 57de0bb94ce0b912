package deploycheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"gopkg.in/yaml.v3"
)

// CenterConfig is one center configuration file shipped in deploy/.
type CenterConfig struct {
	// Source says where it came from (a path, and for a ConfigMap its key).
	Source string
	// Data is the YAML text.
	Data []byte
	// SecretEnv lists the variables the deployment sets from secrets
	// instead of the file (so the file alone need not validate for them).
	SecretEnv []string
}

// CenterConfigs returns the center configurations deploy/ ships: the
// compose file's eventcenter.yaml (and eventcenter-mysql.yaml of its
// "mysql" profile) and the eventcenter.yaml embedded in the Kubernetes
// ConfigMap.
func CenterConfigs(repoRoot string) ([]CenterConfig, error) {
	compose, err := os.ReadFile(filepath.Join(repoRoot, ComposeConfig))
	if err != nil {
		return nil, fmt.Errorf("read compose center config: %w", err)
	}
	composeMySQL, err := os.ReadFile(filepath.Join(repoRoot, ComposeMySQLConfig))
	if err != nil {
		return nil, fmt.Errorf("read compose center config: %w", err)
	}
	cm, err := ConfigMapFile(filepath.Join(repoRoot, K8sConfigMapFile), K8sConfigMapKey)
	if err != nil {
		return nil, err
	}
	return []CenterConfig{
		{Source: ComposeConfig, Data: compose},
		{Source: ComposeMySQLConfig, Data: composeMySQL},
		{
			Source:    K8sConfigMapFile + " data." + K8sConfigMapKey,
			Data:      cm,
			SecretEnv: []string{"EVENTCENTER_STORE_DSN", "EVENTCENTER_ADMIN_TOKENS"},
		},
	}, nil
}

// ConfigMapFile returns data[key] of the (first) ConfigMap in a YAML file
// of one or more documents.
func ConfigMapFile(path, key string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read configmap: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var doc struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
		}
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
		if doc.Kind != "ConfigMap" {
			continue
		}
		v, ok := doc.Data[key]
		if !ok {
			return nil, fmt.Errorf("%s: ConfigMap has no data key %q", path, key)
		}
		return []byte(v), nil
	}
	return nil, fmt.Errorf("%s: no ConfigMap", path)
}

var envRE = regexp.MustCompile(`\bEVENTCENTER_[A-Z0-9_]*[A-Z0-9]\b`)

// envScanExts are the kinds of files under deploy/ whose EVENTCENTER_*
// names must be real configuration variables. Go sources are left out:
// deploy/validate's tests and the example producer may name others.
var envScanExts = []string{".yaml", ".yml", ".json", ".md", ".sh", ".conf", ".env", ""}

// EnvNames returns, per variable, the files under deploy/ (relative to the
// repository root) that name an EVENTCENTER_* environment variable.
func EnvNames(repoRoot string) (map[string][]string, error) {
	out := map[string][]string{}
	root := filepath.Join(repoRoot, "deploy")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !slices.Contains(envScanExts, filepath.Ext(p)) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		rel, err := filepath.Rel(repoRoot, p)
		if err != nil {
			return fmt.Errorf("relative path of %s: %w", p, err)
		}
		for _, m := range envRE.FindAllString(string(data), -1) {
			if !slices.Contains(out[m], rel) {
				out[m] = append(out[m], rel)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan deploy/ for EVENTCENTER_* names: %w", err)
	}
	return out, nil
}
