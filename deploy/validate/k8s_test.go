package validate

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// newObject returns an empty API object for a manifest's apiVersion/kind;
// only the kinds deploy/k8s is meant to hold are known.
func newObject(apiVersion, kind string) (runtime.Object, error) {
	switch apiVersion + "/" + kind {
	case "v1/Namespace":
		return &corev1.Namespace{}, nil
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1/Secret":
		return &corev1.Secret{}, nil
	case "v1/Service":
		return &corev1.Service{}, nil
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}, nil
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, nil
	case "batch/v1/Job":
		return &batchv1.Job{}, nil
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "networking.k8s.io/v1/NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, nil
	}
	return nil, fmt.Errorf("unexpected manifest kind %s %s", apiVersion, kind)
}

// kustomization is the part of kustomize's Kustomization we use; decoded
// strictly, so a key we do not expect fails the test (extend it with care).
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors"`
	} `json:"labels"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// manifests holds every decoded object of deploy/k8s by file.
type manifests struct {
	kust    kustomization
	byFile  map[string][]runtime.Object
	objects []runtime.Object
}

// decodeStrict decodes one manifest into its API type; unknown or
// duplicate fields are errors.
func decodeStrict(doc []byte) (runtime.Object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, fmt.Errorf("read apiVersion/kind: %w", err)
	}
	obj, err := newObject(tm.APIVersion, tm.Kind)
	if err != nil {
		return nil, err
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return obj, nil
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	m := manifests{byFile: map[string][]runtime.Object{}}
	files, err := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		base := filepath.Base(f)
		data := readFile(t, f)
		if base == "kustomization.yaml" {
			require.NoError(t, yaml.UnmarshalStrict(data, &m.kust), base)
			continue
		}
		docs := yamlDocs(data)
		require.NotEmpty(t, docs, base)
		for i, doc := range docs {
			obj, err := decodeStrict(doc)
			require.NoError(t, err, "%s document %d", base, i)
			m.byFile[base] = append(m.byFile[base], obj)
			m.objects = append(m.objects, obj)
		}
	}
	return m
}

func only[T runtime.Object](t *testing.T, m manifests) T {
	t.Helper()
	var found []T
	for _, o := range m.objects {
		if x, ok := o.(T); ok {
			found = append(found, x)
		}
	}
	require.Len(t, found, 1, "want exactly one %T", *new(T))
	return found[0]
}

// named is the object of type T named name.
func named[T interface {
	runtime.Object
	GetName() string
}](t *testing.T, m manifests, name string) T {
	t.Helper()
	for _, o := range m.objects {
		if x, ok := o.(T); ok && x.GetName() == name {
			return x
		}
	}
	t.Fatalf("no %T named %s", *new(T), name)
	return *new(T)
}

// The producer API: its container port, its Service, its token files from
// the Secret, its listen address in the configuration, and a network
// policy that opens it to labelled namespaces only while leaving the admin
// port as it was.
func TestK8sProducerAPI(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	dep := only[*appsv1.Deployment](t, m)
	svc := named[*corev1.Service](t, m, "eventcenter-producer-api")
	np := only[*networkingv1.NetworkPolicy](t, m)
	cm := only[*corev1.ConfigMap](t, m)
	secret := only[*corev1.Secret](t, m)
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	var port corev1.ContainerPort
	for _, p := range c.Ports {
		if p.Name == "producer-api" {
			port = p
		}
	}
	require.EqualValues(t, 8081, port.ContainerPort)
	require.Contains(t, cm.Data["eventcenter.yaml"], "listen: 0.0.0.0:8081")
	require.Len(t, svc.Spec.Ports, 1)
	require.Equal(t, "producer-api", svc.Spec.Ports[0].TargetPort.String())
	podLabels := labels.Set(dep.Spec.Template.Labels)
	require.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels), "service selects the pods")

	npSel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	require.NoError(t, err)
	require.True(t, npSel.Matches(podLabels), "the policy selects the pods")
	open := map[string]bool{}
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if len(rule.From) == 0 {
				open[p.Port.String()] = true
				continue
			}
			require.Equal(t, "producer-api", p.Port.String())
			require.Equal(t, map[string]string{"eventcenter.io/producer": "true"}, rule.From[0].NamespaceSelector.MatchLabels)
		}
	}
	require.Equal(t, map[string]bool{"http": true}, open, "only the admin port stays open to all")

	tokenFiles := 0
	for _, v := range pod.Volumes {
		if v.Secret == nil {
			continue
		}
		require.Equal(t, secret.Name, v.Secret.SecretName)
		for _, it := range v.Secret.Items {
			require.Contains(t, secret.StringData, it.Key, "volume %s item (see secret.example.yaml)", v.Name)
			for _, vm := range c.VolumeMounts {
				if vm.Name == v.Name {
					require.Contains(t, cm.Data["eventcenter.yaml"], "token_file: "+filepath.Join(vm.MountPath, it.Path))
					tokenFiles++
				}
			}
		}
	}
	require.Equal(t, 1, tokenFiles)
}

func TestK8sStrictDecodeRejectsUnknownFields(t *testing.T) {
	t.Parallel()
	// The decode is only a check if a misspelt field fails it.
	_, err := decodeStrict([]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replica: 3\n"))
	require.ErrorContains(t, err, "replica")
	_, err = decodeStrict([]byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n  name: y\n"))
	require.Error(t, err, "duplicate field")
	_, err = decodeStrict([]byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n"))
	require.ErrorContains(t, err, "unexpected manifest kind")
	var k kustomization
	require.Error(t, yaml.UnmarshalStrict([]byte("resource: [a.yaml]\n"), &k))
}

func TestK8sManifestsDecodeStrictly(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	require.Equal(t, "kustomize.config.k8s.io/v1beta1", m.kust.APIVersion)
	require.Equal(t, "Kustomization", m.kust.Kind)
	require.Equal(t, "eventcenter", m.kust.Namespace)

	// Every manifest is in the kustomization except the example Secret,
	// which must never be applied from the repository.
	var want []string
	for f := range m.byFile {
		if f != "secret.example.yaml" {
			want = append(want, f)
		}
	}
	slices.Sort(want)
	got := slices.Clone(m.kust.Resources)
	slices.Sort(got)
	require.Equal(t, want, got, "kustomization resources vs files in deploy/k8s")
	for _, o := range m.objects {
		meta, ok := o.(metav1.Object)
		require.True(t, ok)
		if _, isNS := o.(*corev1.Namespace); !isNS {
			require.Equal(t, m.kust.Namespace, meta.GetNamespace(), "%T %s", o, meta.GetName())
		}
	}
	secret := only[*corev1.Secret](t, m)
	require.Contains(t, m.byFile["secret.example.yaml"], runtime.Object(secret))
}

func TestK8sDeployment(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	dep := only[*appsv1.Deployment](t, m)
	svc := named[*corev1.Service](t, m, "eventcenter")
	pdb := only[*policyv1.PodDisruptionBudget](t, m)
	cm := only[*corev1.ConfigMap](t, m)
	secret := only[*corev1.Secret](t, m)
	sa := only[*corev1.ServiceAccount](t, m)

	require.NotNil(t, dep.Spec.Replicas)
	require.GreaterOrEqual(t, *dep.Spec.Replicas, int32(2), "several instances")
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	require.NoError(t, err)
	podLabels := labels.Set(dep.Spec.Template.Labels)
	require.True(t, sel.Matches(podLabels), "deployment selector matches its pods")
	require.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels), "service selects the pods")
	pdbSel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	require.NoError(t, err)
	require.True(t, pdbSel.Matches(podLabels), "PDB selects the pods")
	require.Equal(t, sa.Name, dep.Spec.Template.Spec.ServiceAccountName)

	pod := dep.Spec.Template.Spec
	require.NotNil(t, pod.SecurityContext.RunAsNonRoot)
	require.True(t, *pod.SecurityContext.RunAsNonRoot)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.Equal(t, "eventcenter", c.Image, "kustomization images: rewrites this name")
	require.Equal(t, []string{"serve", "--config", "/etc/eventcenter/eventcenter.yaml"}, c.Args)
	require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	require.True(t, *c.SecurityContext.RunAsNonRoot)
	require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	require.False(t, c.Resources.Requests.Cpu().IsZero())
	require.False(t, c.Resources.Requests.Memory().IsZero())
	require.False(t, c.Resources.Limits.Memory().IsZero())

	require.Len(t, c.Ports, 2, "http and producer-api")
	port := c.Ports[0]
	require.EqualValues(t, 8080, port.ContainerPort, "http.listen: 0.0.0.0:8080")
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, port.Name, c.ReadinessProbe.HTTPGet.Port.String())
	require.Equal(t, port.Name, c.LivenessProbe.HTTPGet.Port.String())
	require.Len(t, svc.Spec.Ports, 1)
	require.Equal(t, port.Name, svc.Spec.Ports[0].TargetPort.String())
	require.Equal(t, "true", svc.Annotations["prometheus.io/scrape"])
	require.Equal(t, fmt.Sprint(port.ContainerPort), svc.Annotations["prometheus.io/port"])
	require.Equal(t, "/metrics", svc.Annotations["prometheus.io/path"])

	checkPodRefs(t, pod, cm, secret, "/etc/eventcenter/eventcenter.yaml")
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for _, name := range []string{"EVENTCENTER_STORE_DSN", "EVENTCENTER_ADMIN_TOKENS"} {
		e, ok := env[name]
		require.True(t, ok, "%s is set", name)
		require.NotNil(t, e.ValueFrom, "%s comes from the Secret", name)
		require.NotNil(t, e.ValueFrom.SecretKeyRef, "%s comes from the Secret", name)
		require.Empty(t, e.Value, "%s: no literal secret", name)
	}
}

func TestK8sMigrationJob(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	job := only[*batchv1.Job](t, m)
	cm := only[*corev1.ConfigMap](t, m)
	secret := only[*corev1.Secret](t, m)
	pod := job.Spec.Template.Spec
	require.Contains(t, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}, pod.RestartPolicy)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.Equal(t, "eventcenter", c.Image)
	require.Equal(t, []string{"migrate", "--config", "/etc/eventcenter/eventcenter.yaml"}, c.Args)
	require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	require.True(t, *pod.SecurityContext.RunAsNonRoot)
	checkPodRefs(t, pod, cm, secret, "/etc/eventcenter/eventcenter.yaml")
}

// checkPodRefs checks that the pod's ConfigMap volumes and Secret key
// references name objects and keys that exist, and that configPath is a
// file the ConfigMap provides.
func checkPodRefs(t *testing.T, pod corev1.PodSpec, cm *corev1.ConfigMap, secret *corev1.Secret, configPath string) {
	t.Helper()
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
		if v.ConfigMap != nil {
			require.Equal(t, cm.Name, v.ConfigMap.Name, "volume %s", v.Name)
			for _, it := range v.ConfigMap.Items {
				require.Contains(t, cm.Data, it.Key, "volume %s item", v.Name)
			}
		}
	}
	configFound := false
	for _, c := range pod.Containers {
		for _, vm := range c.VolumeMounts {
			v, ok := volumes[vm.Name]
			require.True(t, ok, "mount %s has a volume", vm.Name)
			if v.ConfigMap == nil {
				continue
			}
			dir, file := filepath.Split(configPath)
			if filepath.Clean(vm.MountPath) == filepath.Clean(dir) {
				_, inData := cm.Data[file]
				itemOK := len(v.ConfigMap.Items) == 0 && inData
				for _, it := range v.ConfigMap.Items {
					itemOK = itemOK || it.Path == file
				}
				configFound = configFound || itemOK
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				continue
			}
			ref := e.ValueFrom.SecretKeyRef
			require.Equal(t, secret.Name, ref.Name, "%s: secret name (see secret.example.yaml)", e.Name)
			require.Contains(t, secret.StringData, ref.Key, "%s: secret key (see secret.example.yaml)", e.Name)
		}
	}
	require.True(t, configFound, "%s comes from the ConfigMap", configPath)
}

func TestK8sConfigMapHoldsCenterConfig(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	cm := only[*corev1.ConfigMap](t, m)
	body, ok := cm.Data["eventcenter.yaml"]
	require.True(t, ok)
	// app/deploycheck parses it through config.Parse (strict); here
	// only check that it is YAML and says where to listen.
	var cfg struct {
		HTTP struct {
			Listen string `json:"listen"`
		} `json:"http"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(body), &cfg))
	require.Equal(t, "0.0.0.0:8080", cfg.HTTP.Listen)
	require.False(t, strings.Contains(body, "dsn: postgres"), "no DSN (it carries a password) in the ConfigMap")
	_, err := os.Stat(filepath.Join(k8sDir, "secret.example.yaml"))
	require.NoError(t, err)
}
