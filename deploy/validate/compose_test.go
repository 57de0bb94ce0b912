package validate

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

var centers = []string{"eventcenter-1", "eventcenter-2", "eventcenter-3"}

// loadCompose loads deploy/compose/compose.yaml with the Compose
// specification's loader: schema validation, interpolation (with an empty
// environment, so the file's own defaults apply), normalization,
// consistency checks. Nothing is fetched.
func loadCompose(t *testing.T, file string) (*types.Project, error) {
	t.Helper()
	abs, err := filepath.Abs(filepath.Dir(file))
	require.NoError(t, err)
	opts, err := cli.NewProjectOptions([]string{file},
		cli.WithWorkingDirectory(abs),
		cli.WithEnv(nil),
		cli.WithResolvedPaths(true),
		cli.WithConsistency(true),
		cli.WithNormalization(true),
		cli.WithInterpolation(true),
	)
	require.NoError(t, err)
	return cli.ProjectFromOptions(t.Context(), opts)
}

func TestComposeLoads(t *testing.T) {
	t.Parallel()
	p, err := loadCompose(t, filepath.Join(composeDir, "compose.yaml"))
	require.NoError(t, err)
	require.Equal(t, "eventcenter", p.Name)
	for _, s := range append([]string{
		"kafka", "kafka-init", "postgres", "rocketmq-namesrv", "rocketmq-broker",
		"migrate", "example-producer", "prometheus", "grafana",
	}, centers...) {
		require.Contains(t, p.Services, s)
	}

	// Every bind-mounted file or folder exists in the repository.
	for name, s := range p.Services {
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeBind {
				exists(t, v.Source)
			}
		}
		if s.Build != nil {
			exists(t, filepath.Join(s.Build.Context, s.Build.Dockerfile))
			require.Equal(t, mustAbs(t, repoRoot), s.Build.Context, "%s: builds from the repository root", name)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	require.NoError(t, err)
	return abs
}

func TestComposeRejectsUnknownKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "compose.yaml")
	require.NoError(t, os.WriteFile(f, []byte("services:\n  a:\n    image: x\n    comand: [serve]\n"), 0o644))
	_, err := loadCompose(t, f)
	require.ErrorContains(t, err, "comand")
}

func TestComposeCenters(t *testing.T) {
	t.Parallel()
	p, err := loadCompose(t, filepath.Join(composeDir, "compose.yaml"))
	require.NoError(t, err)
	cfgFile := mustAbs(t, filepath.Join(composeDir, "eventcenter.yaml"))
	published := map[string]bool{}
	for _, name := range append(slices.Clone(centers), "migrate") {
		s := p.Services[name]
		want := "serve"
		if name == "migrate" {
			want = "migrate"
		}
		require.Equal(t, types.ShellCommand{want, "--config", "/etc/eventcenter/eventcenter.yaml"}, s.Command, name)
		require.Equal(t, "eventcenter", s.Build.Target, name)
		require.True(t, s.ReadOnly, "%s: read-only root filesystem", name)
		var mounted bool
		for _, v := range s.Volumes {
			if v.Target == "/etc/eventcenter/eventcenter.yaml" {
				require.Equal(t, cfgFile, v.Source, "%s: all instances share one config file", name)
				require.True(t, v.ReadOnly)
				mounted = true
			}
		}
		require.True(t, mounted, "%s mounts the config", name)
		if name == "migrate" {
			require.Equal(t, types.ServiceConditionHealthy, s.DependsOn["postgres"].Condition)
			continue
		}
		require.Equal(t, types.ServiceConditionCompletedSuccessfully, s.DependsOn["migrate"].Condition, name)
		require.Equal(t, types.ServiceConditionCompletedSuccessfully, s.DependsOn["kafka-init"].Condition, name)
		require.NotNil(t, s.HealthCheck, name)
		require.Contains(t, s.HealthCheck.Test, "healthcheck", name)
		// The admin API (8080) and the producer API (ingress.listen, 8081),
		// on loopback host ports of their own.
		require.Len(t, s.Ports, 2, name)
		require.EqualValues(t, 8080, s.Ports[0].Target, name)
		require.EqualValues(t, 8081, s.Ports[1].Target, name)
		for _, p := range s.Ports {
			require.Equal(t, "127.0.0.1", p.HostIP, name)
			require.False(t, published[p.Published], "%s: host port %s used twice", name, p.Published)
			published[p.Published] = true
		}
		require.NotNil(t, s.Environment["EVENTCENTER_ADMIN_TOKENS"], name)
		require.GreaterOrEqual(t, len(*s.Environment["EVENTCENTER_ADMIN_TOKENS"]), 16, name)
		require.Equal(t, name, *s.Environment["EVENTCENTER_KAFKA_CLIENT_ID"])
	}
	require.Equal(t, "example-producer", p.Services["example-producer"].Build.Target)
}

// centerConfig is the part of deploy/compose/eventcenter.yaml checked here
// against the compose file (app/deploycheck checks all of it against
// app/config).
type centerConfig struct {
	Kafka struct {
		Brokers      []string `json:"brokers"`
		ControlTopic string   `json:"control_topic"`
	} `json:"kafka"`
	HTTP struct {
		Listen string `json:"listen"`
	} `json:"http"`
	Forward struct {
		Targets []struct {
			Name        string   `json:"name"`
			Type        string   `json:"type"`
			NameServers []string `json:"name_servers"`
		} `json:"targets"`
	} `json:"forward"`
	Checkback struct {
		Biz []struct {
			BizID    string   `json:"biz_id"`
			Endpoint string   `json:"endpoint"`
			Allow    []string `json:"allow"`
		} `json:"biz"`
	} `json:"checkback"`
}

func TestComposeWiring(t *testing.T) {
	t.Parallel()
	p, err := loadCompose(t, filepath.Join(composeDir, "compose.yaml"))
	require.NoError(t, err)
	var cfg centerConfig
	require.NoError(t, yaml.Unmarshal(readFile(t, filepath.Join(composeDir, "eventcenter.yaml")), &cfg))
	require.Equal(t, "0.0.0.0:8080", cfg.HTTP.Listen)
	require.Equal(t, []string{"kafka:9092"}, cfg.Kafka.Brokers)

	// The control topic is created by kafka-init with several partitions.
	initCmd := strings.Join(p.Services["kafka-init"].Command, " ")
	require.Contains(t, initCmd, "--topic "+cfg.Kafka.ControlTopic+" --partitions 6")
	require.Contains(t, initCmd, "--topic "+cfg.Kafka.ControlTopic+".dlq ")
	require.LessOrEqual(t, len(centers), 6, "instances <= control partitions")

	// RocketMQ: the center's name server literal is the name server's
	// fixed address; the broker registers its own fixed address.
	ns := p.Services["rocketmq-namesrv"].Networks["eventcenter"].Ipv4Address
	broker := p.Services["rocketmq-broker"].Networks["eventcenter"].Ipv4Address
	require.NotEmpty(t, ns)
	var rmq []string
	for _, tg := range cfg.Forward.Targets {
		if tg.Type == "rocketmq" {
			rmq = append(rmq, tg.NameServers...)
		}
	}
	require.Equal(t, []string{ns + ":9876"}, rmq)
	conf := brokerConf(t, filepath.Join(composeDir, "rocketmq", "broker.conf"))
	require.Equal(t, broker, conf["brokerIP1"])
	require.Equal(t, ns+":9876", conf["namesrvAddr"])

	// The example producer's check-back endpoint is allowed for its bizID.
	prod := p.Services["example-producer"]
	cb := *prod.Environment["PRODUCER_CHECKBACK_URL"]
	allowed := false
	for _, b := range cfg.Checkback.Biz {
		for _, a := range b.Allow {
			allowed = allowed || strings.HasPrefix(cb, a)
		}
	}
	require.True(t, allowed, "check-back URL %s is allowed in eventcenter.yaml", cb)
	require.Equal(t, cfg.Kafka.ControlTopic, *prod.Environment["PRODUCER_CONTROL_TOPIC"])

	// Prometheus scrapes every center and loads the alert rules.
	var prom struct {
		RuleFiles     []string `json:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `json:"job_name"`
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, filepath.Join(deployDir, "prometheus", "prometheus.yml")), &prom))
	var targets []string
	for _, sc := range prom.ScrapeConfigs {
		if sc.JobName == "eventcenter" {
			for _, st := range sc.StaticConfigs {
				targets = append(targets, st.Targets...)
			}
		}
	}
	for _, c := range centers {
		require.Contains(t, targets, c+":8080")
	}
	mounts := map[string]string{}
	for _, v := range p.Services["prometheus"].Volumes {
		mounts[v.Target] = v.Source
	}
	for _, rf := range prom.RuleFiles {
		require.Contains(t, mounts, rf, "rule file %s is mounted", rf)
	}
	require.Equal(t, mustAbs(t, filepath.Join(deployDir, "prometheus", "alerts.yaml")), mounts["/etc/prometheus/alerts.yaml"])
}

func brokerConf(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, path)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, "broker.conf line %q", line)
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out
}

func TestGrafanaProvisioning(t *testing.T) {
	t.Parallel()
	p, err := loadCompose(t, filepath.Join(composeDir, "compose.yaml"))
	require.NoError(t, err)
	mounts := map[string]string{}
	for _, v := range p.Services["grafana"].Volumes {
		mounts[v.Target] = v.Source
	}
	var prov struct {
		Providers []struct {
			Options struct {
				Path string `json:"path"`
			} `json:"options"`
		} `json:"providers"`
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, filepath.Join(deployDir, "grafana", "provisioning", "dashboards", "eventcenter.yaml")), &prov))
	require.Len(t, prov.Providers, 1)
	src, ok := mounts[prov.Providers[0].Options.Path]
	require.True(t, ok, "the dashboards folder is mounted where the provider reads")
	exists(t, filepath.Join(src, "eventcenter.json"))
	require.Contains(t, mounts, "/etc/grafana/provisioning")
}
