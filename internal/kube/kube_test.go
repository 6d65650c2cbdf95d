package kube

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func config() Config {
	printed := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	return Config{
		Name: "tls-pool", Namespace: "bench", Image: "registry.example/tlsbench:0.1", Shards: 4,
		Experiment: "pool", Target: "postgres://app@db.example:5432/app?sslmode=require",
		Args:    []string{"--concurrency=8", "--script=" + FilesDir + "/script-0-select.sql@2", "--data=pay$5"},
		Files:   map[string]string{"script-0-select.sql": "SELECT 1;\n"},
		StartAt: printed.Add(2 * time.Minute), Printed: printed, StartIn: 2 * time.Minute,
		CPU: resource.MustParse("2"), Memory: resource.MustParse("1Gi"),
		Command: "tlsbench pool postgres://app@db.example:5432/app?sslmode=require --concurrency=8",
	}
}

// decode splits YAML documents and decodes each strictly (an unknown or
// duplicated field is an error) into the next of objs.
func decode(t *testing.T, out []byte, objs ...any) {
	t.Helper()
	docs := strings.Split(string(out), "\n---\n")
	if len(docs) != len(objs) {
		t.Fatalf("%d documents, want %d:\n%s", len(docs), len(objs), out)
	}
	for i, d := range docs {
		if err := yaml.UnmarshalStrict([]byte(d), objs[i]); err != nil {
			t.Fatalf("document %d does not decode strictly as %T: %v\n%s", i, objs[i], err, d)
		}
	}
}

func TestManifestsDecodeStrictly(t *testing.T) {
	c := config()
	out, err := c.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "pool.golden", out)
	var cm corev1.ConfigMap
	var job batchv1.Job
	decode(t, out, &cm, &job)

	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Name != "tls-pool-files" || cm.Namespace != "bench" ||
		cm.Data["script-0-select.sql"] != "SELECT 1;\n" {
		t.Errorf("ConfigMap: %+v", cm)
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Name != "tls-pool" || job.Namespace != "bench" {
		t.Errorf("Job's type or metadata: %+v %+v", job.TypeMeta, job.ObjectMeta)
	}
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion ||
		s.Completions == nil || *s.Completions != 4 || s.Parallelism == nil || *s.Parallelism != 4 ||
		s.BackoffLimit == nil || *s.BackoffLimit != 0 {
		t.Errorf("Job spec: mode %v completions %v parallelism %v backoff %v", s.CompletionMode, s.Completions, s.Parallelism, s.BackoffLimit)
	}
	pod := s.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q", pod.RestartPolicy)
	}
	anti := pod.Affinity.PodAntiAffinity
	if anti == nil || len(anti.RequiredDuringSchedulingIgnoredDuringExecution) != 0 || len(anti.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("anti-affinity: %+v", anti)
	}
	term := anti.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
	if term.TopologyKey != "kubernetes.io/hostname" {
		t.Errorf("topologyKey %q", term.TopologyKey)
	}
	// The selector must pick the Job's own pods: their labels hold it.
	for k, v := range term.LabelSelector.MatchLabels {
		if s.Template.Labels[k] != v {
			t.Errorf("anti-affinity selects %s=%s, which the pods do not carry (%v)", k, v, s.Template.Labels)
		}
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	ctr := pod.Containers[0]
	if ctr.Image != c.Image || !slices.Equal(ctr.Command, []string{Binary}) {
		t.Errorf("image %q command %q", ctr.Image, ctr.Command)
	}
	req, lim := ctr.Resources.Requests, ctr.Resources.Limits
	if req.Cpu().Cmp(resource.MustParse("2")) != 0 || req.Memory().Cmp(resource.MustParse("1Gi")) != 0 ||
		lim.Memory().Cmp(resource.MustParse("1Gi")) != 0 || !lim.Cpu().IsZero() {
		t.Errorf("resources: %+v", ctr.Resources)
	}
	var index *corev1.EnvVar
	for i, e := range ctr.Env {
		if e.Name == IndexEnv {
			index = &ctr.Env[i]
		}
		if e.Name == TargetEnv {
			t.Errorf("the target is in the args: no %s wanted", TargetEnv)
		}
	}
	if index == nil || index.ValueFrom == nil || index.ValueFrom.FieldRef == nil ||
		index.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("%s: %+v", IndexEnv, index)
	}
	want := []string{"pool", c.Target, "--concurrency=8", "--script=/etc/tlsbench/script-0-select.sql@2", "--data=pay$$5",
		"--shard", "$(JOB_COMPLETION_INDEX)/4", "--start-at", "2030-01-02T03:06:05Z", "-o", "-"}
	if !slices.Equal(ctr.Args, want) {
		t.Errorf("args\n%q, want\n%q", ctr.Args, want)
	}
	mounted := false
	for _, m := range ctr.VolumeMounts {
		mounted = mounted || m.MountPath == FilesDir
	}
	if !mounted {
		t.Errorf("the ConfigMap is not mounted at %s: %+v", FilesDir, ctr.VolumeMounts)
	}
	if !bytes.Contains(out, []byte("# The shards start at 2030-01-02T03:06:05Z (--start-in 2m0s after printing at 2030-01-02T03:04:05Z")) {
		t.Errorf("no comment with the start time:\n%s", out)
	}
}

func TestTargetFromSecret(t *testing.T) {
	c := config()
	c.Target, c.TargetSecret, c.Files = "postgres://app:hunter2@db/app", "pg-url", nil
	c.Args = c.Args[:1]
	out, err := c.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("hunter2")) {
		t.Fatalf("the password is in the manifests:\n%s", out)
	}
	var job batchv1.Job
	decode(t, out, &job) // no ConfigMap without files
	ctr := job.Spec.Template.Spec.Containers[0]
	if ctr.Args[1] != "$(TLSBENCH_TARGET)" {
		t.Errorf("target argument %q", ctr.Args[1])
	}
	var found bool
	for _, e := range ctr.Env {
		if e.Name == TargetEnv {
			ref := e.ValueFrom.SecretKeyRef
			found = ref != nil && ref.Name == "pg-url" && ref.Key == SecretKey
		}
	}
	if !found {
		t.Errorf("no %s from Secret pg-url: %+v", TargetEnv, ctr.Env)
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"bad name", func(c *Config) { c.Name = "Tls_Pool" }, `--name "Tls_Pool" is not a Kubernetes name`},
		{"long name", func(c *Config) { c.Name = strings.Repeat("a", 62); c.Shards = 10 }, "too long for 10 pods named after it: give at most 61 characters"},
		{"bad namespace", func(c *Config) { c.Namespace = "a.b" }, `--namespace "a.b" is not a Kubernetes namespace`},
		{"no image", func(c *Config) { c.Image = "" }, "--image \"\" is not an image reference"},
		{"no shards", func(c *Config) { c.Shards = 0 }, "--shards 0 is out of range"},
		{"bad secret", func(c *Config) { c.TargetSecret = "A B" }, `--target-secret "A B" is not a Secret's name`},
		{"no memory", func(c *Config) { c.Memory = resource.Quantity{} }, "--cpu and --memory must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := config()
			tt.edit(&c)
			_, err := c.Manifests()
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line with %q", err, tt.want)
			}
		})
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", path, got)
	}
}

// TestPodSecurityRestricted: the Job's pods pass Kubernetes' own
// pod-security checks at the "restricted" level (what a namespace that
// enforces it admits), and the kubelet can verify the user is not root:
// runAsNonRoot with a numeric runAsUser, as the image's USER is.
func TestPodSecurityRestricted(t *testing.T) {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	job := config().Job()
	pod := job.Spec.Template
	lv := psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()}
	if r := policy.AggregateCheckResults(e.EvaluatePod(lv, &pod.ObjectMeta, &pod.Spec)); !r.Allowed {
		t.Errorf("the pod template fails pod security %q: %s", psapi.LevelRestricted, r.ForbiddenDetail())
	}
	for _, c := range pod.Spec.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
			t.Errorf("container %s: runAsNonRoot without a numeric non-zero runAsUser: the kubelet refuses a named image user", c.Name)
		}
	}
	docker, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("\nUSER %d:%d\n", ImageUID, ImageUID); !strings.Contains(string(docker), want) {
		t.Errorf("the Dockerfile does not say %q: the image's user and the Job's runAsUser must agree", strings.TrimSpace(want))
	}
}
