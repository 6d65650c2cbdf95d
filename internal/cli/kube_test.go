package cli

import (
	"bufio"
	"bytes"
	"debug/elf"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/tlsbench/tlsbench/internal/kube"
	"github.com/tlsbench/tlsbench/internal/lab"
	"github.com/tlsbench/tlsbench/internal/lab/labtest"
	"github.com/tlsbench/tlsbench/internal/result"
)

var updateKube = flag.Bool("update-kube", false, "rewrite testdata/kube-*.golden")

// kubeClock fixes kube's clock for a test.
func kubeClock(t *testing.T, now time.Time) {
	old := kubeNow
	kubeNow = func() time.Time { return now }
	t.Cleanup(func() { kubeNow = old })
}

// manifests splits kube's output and decodes each document strictly (an
// unknown or repeated field fails) as a core/v1 ConfigMap or a batch/v1
// Job, by its kind.
func manifests(t *testing.T, out string) (*batchv1.Job, *corev1.ConfigMap) {
	t.Helper()
	var job *batchv1.Job
	var cm *corev1.ConfigMap
	for _, doc := range strings.Split(out, "\n---\n") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, doc)
		}
		var obj any
		switch meta.Kind {
		case "Job":
			job = &batchv1.Job{}
			obj = job
		case "ConfigMap":
			cm = &corev1.ConfigMap{}
			obj = cm
		default:
			t.Fatalf("unexpected kind %q:\n%s", meta.Kind, doc)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("%s does not decode strictly: %v\n%s", meta.Kind, err, doc)
		}
	}
	if job == nil || job.APIVersion != "batch/v1" {
		t.Fatalf("no batch/v1 Job in:\n%s", out)
	}
	return job, cm
}

func TestKubeManifests(t *testing.T) {
	kubeClock(t, time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	dir := t.TempDir()
	body := filepath.Join(dir, "body.json")
	paths := filepath.Join(dir, "paths.txt")
	os.WriteFile(body, []byte(`{"q": 1}`), 0o644)
	os.WriteFile(paths, []byte("/a\n/b\n"), 0o644)
	code, stdout, stderr := runMain(t, "kube", "pool", "https://db.example:8443/", "--shards", "3", "--image", "registry.example/tlsbench:0.1",
		"-c", "6", "--tls", "1.2,1.3", "-d", "10s", "--data", "@"+body, "--paths", paths, "-H", "X-Trace: $(HOME) costs $5",
		"--name", "tls-api", "--namespace", "bench", "--cpu", "2", "--memory", "1Gi")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	kubeGolden(t, "kube-pool.golden", stdout)
	job, cm := manifests(t, stdout)
	if cm == nil || cm.Data["data-0-body.json"] != `{"q": 1}` || cm.Data["paths-0-paths.txt"] != "/a\n/b\n" {
		t.Errorf("ConfigMap of the files: %+v", cm)
	}
	if job.Name != "tls-api" || job.Namespace != "bench" || *job.Spec.Completions != 3 || *job.Spec.Parallelism != 3 ||
		*job.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("Job: %+v", job.Spec)
	}
	args := job.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--shard", "$(JOB_COMPLETION_INDEX)/3", "--start-at", "2030-01-02T03:06:06Z", "--data=@/etc/tlsbench/data-0-body.json",
		"--paths=/etc/tlsbench/paths-0-paths.txt", "--header=X-Trace: $$(HOME) costs $$5", "--concurrency=6", "--duration=10s"} {
		if !slices.Contains(args, want) {
			t.Errorf("args lack %q: %q", want, args)
		}
	}
	if i := slices.Index(args, "-o"); i < 0 || args[i+1] != "-" {
		t.Errorf("the pods must write their framed result to stdout (-o -): %q", args)
	}
}

func TestKubeBadInput(t *testing.T) {
	kubeClock(t, time.Now())
	base := []string{"kube", "pool", "https://db.example/", "--image", "x", "-c", "4"}
	with := func(extra ...string) []string { return append(slices.Clone(base), extra...) }
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no experiment", []string{"kube"}, "kube: name the experiment"},
		{"stream", []string{"kube", "stream", "https://db.example/"}, `kube: "stream" is not connect, pool or storm`},
		{"no target", []string{"kube", "pool", "--shards", "2", "--image", "x"}, "kube pool takes one TARGET"},
		{"no shards", with(), "kube: give --shards N"},
		{"no image", []string{"kube", "pool", "https://db.example/", "--shards", "2"}, "kube: give --image IMAGE"},
		{"zero shards", with("--shards", "0"), "--shards 0 is out of range"},
		{"share of none", with("--shards", "5"), "-c/--concurrency 4 split over 5 shards leaves shard 4 none"},
		{"plan flag", with("--shards", "2", "--tls", "1.4"), `--tls: unknown mode "1.4"`},
		{"shard given", with("--shards", "2", "--shard", "0/2"), "kube: --shard does not apply: the Job gives each pod its shard"},
		{"output", with("--shards", "2", "-o", "x.json"), "kube: --output does not apply: each pod writes its result to its log"},
		{"lab", []string{"kube", "pool", "--lab", "postgres", "--shards", "2", "--image", "x"}, "kube pool takes one TARGET"},
		{"lab and target", with("--shards", "2", "--lab", "postgres"), "kube: --lab does not apply"},
		{"builtin", []string{"kube", "connect", "builtin", "--shards", "1", "--image", "x"}, "--shard splits the clients of a run over machines"},
		{"password", []string{"kube", "pool", "postgres://app:hunter2@db/app", "--shards", "2", "--image", "x", "-c", "2"},
			"kube: the TARGET holds a password, which kube does not print into manifests: create a Secret"},
		{"passfile", []string{"kube", "pool", "postgres://app@db/app?passfile=/home/me/.pgpass", "--shards", "2", "--image", "x", "-c", "2"},
			"kube: the TARGET's passfile=/home/me/.pgpass names a file on this machine, which the pods do not have: put the password in the URL of a Secret"},
		{"redis passfile", []string{"kube", "pool", "rediss://db:6380/?passfile=/tmp/lab/pw", "--shards", "2", "--image", "x", "-c", "2"},
			"kube: the TARGET's passfile=/tmp/lab/pw names a file on this machine"},
		{"token header", with("--shards", "2", "-H", "Authorization: Bearer abc"), "kube: --header holds a credential"},
		{"inline body", with("--shards", "2", "--data", "x=1"), "kube: --data holds a credential"},
		{"past start", with("--shards", "2", "--start-at", "2001-01-01T00:00:00Z"), "--start-at 2001-01-01T00:00:00Z is in the past"},
		{"bad start", with("--shards", "2", "--start-at", "noon"), `--start-at: "noon" is not a time`},
		{"start twice", with("--shards", "2", "--start-at", "+1m", "--start-in", "1m"), "kube: give --start-at or --start-in, not both"},
		{"start-in", with("--shards", "2", "--start-in", "0s"), "--start-in 0s is not ahead"},
		{"cpu", with("--shards", "2", "--cpu", "lots"), `--cpu "lots" is not a quantity`},
		{"memory", with("--shards", "2", "--memory", "1Q"), `--memory "1Q" is not a quantity`},
		{"name", with("--shards", "2", "--name", "TLS"), `--name "TLS" is not a Kubernetes name`},
		{"secret name", []string{"kube", "pool", "postgres://app:pw@db/app", "--shards", "2", "--image", "x", "-c", "2", "--target-secret", "Pg Url"},
			`--target-secret "Pg Url" is not a Secret's name`},
		{"via", with("--shards", "2", "--via", "ssh"), "kube: --via does not apply"},
		{"url CA", []string{"kube", "pool", "postgres://app@db/app?sslmode=verify-full&sslrootcert=/etc/ca.pem", "--shards", "2", "--image", "x", "-c", "2"},
			"kube: the TARGET names a CA file (/etc/ca.pem) the pods do not have: give it with --ca FILE"},
		{"missing file", with("--shards", "2", "--paths", "/nonexistent/paths.txt"), "/nonexistent/paths.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, tt.args...)
			if code != 2 || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
				t.Errorf("exit %d, stderr %q, stdout %d bytes; want exit 2 and one line with %q", code, stderr, len(stdout), tt.want)
			}
			if strings.Contains(stderr, "hunter2") || strings.Contains(stderr, "Bearer abc") {
				t.Errorf("a secret in the error: %q", stderr)
			}
		})
	}
}

// staticBinary builds tlsbench as the image does (scripts/build-static.sh),
// once for the tests that run it; TestMain removes it.
func staticBinary(t *testing.T) string {
	t.Helper()
	bin, err := buildStatic()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

var buildStatic = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "tlsbench-static-")
	if err != nil {
		return "", err
	}
	onExit(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "tlsbench")
	if out, err := exec.Command("bash", "../../scripts/build-static.sh", bin).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build-static.sh: %v: %s", err, out)
	}
	return bin, nil
})

// TestStaticBinary: the image's binary needs no loader and no shared
// library (it runs on distroless/static or scratch), and the Dockerfile
// builds it with go.mod's Go. The image itself is not built here.
func TestStaticBinary(t *testing.T) {
	labtest.Slow(t)
	bin := staticBinary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: it is not static", p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("shared libraries %v (%v)", libs, err)
	}
	gomod, _ := os.ReadFile("../../go.mod")
	docker, _ := os.ReadFile("../../Dockerfile")
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	if goVersion == nil || !bytes.Contains(docker, []byte("FROM golang:"+string(goVersion[1])+" AS build")) {
		t.Errorf("the Dockerfile does not build with go.mod's Go %s", goVersion)
	}
	if !bytes.Contains(docker, []byte("scripts/build-static.sh")) {
		t.Error("the Dockerfile does not build with scripts/build-static.sh, which this test checks")
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "tlsbench ") {
		t.Errorf("tlsbench version: %q, %v", out, err)
	}
}

// expand does what the kubelet does to a container's args: $(VAR) of a
// variable the container declares becomes its value, $$ becomes $, and
// anything else stays as it is.
func expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+end+1])
			}
			i += end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func TestExpand(t *testing.T) {
	env := map[string]string{"A": "1"}
	for in, want := range map[string]string{
		"$(A)/2": "1/2", "$$(A)": "$(A)", "$(B)": "$(B)", "$$$$": "$$", "$5": "$5", "$(A": "$(A", "x$": "x$",
		kube.Escape("$(A) $$ $"): "$(A) $$ $",
	} {
		if got := expand(in, env); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestKubePodsRunLocally runs what the manifests tell the kubelet to run,
// on this machine: for each index, the static tlsbench with the Job's
// args, JOB_COMPLETION_INDEX and the target from its "Secret" expanded as
// the kubelet does, the ConfigMap's files where the pod mounts them (here
// a directory in their stead), against one built-in server; then the pods'
// logs, prefixed as kubectl logs --prefix does, feed tlsbench merge.
func TestKubePodsRunLocally(t *testing.T) {
	labtest.Slow(t)
	bin := staticBinary(t)
	srv := startServer(t, lab.BuiltinOptions{Keys: []string{"ecdsa-p256"}, ResponseSize: 64})
	const password, header = "s3cretpw", "X-Note: $(JOB_COMPLETION_INDEX) costs $$5"
	target := "https://u:" + password + "@127.0.0.1" + port(srv.Endpoint("ecdsa-p256")) + "/"
	const shards = 2
	kubeClock(t, time.Now())
	code, stdout, stderr := runMain(t, "kube", "pool", target, "--target-secret", "tgt", "--shards", fmt.Sprint(shards), "--image", "test",
		"--name", "local", "--ca", srv.CAFile(), "--tls", "1.3", "-c", "4", "-d", "600ms", "--warmup", "0", "--trials", "2",
		"-H", header, "--start-in", "4s")
	if code != 0 {
		t.Fatalf("kube: exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, password) {
		t.Fatalf("the password is in the manifests:\n%s", stdout)
	}
	job, cm := manifests(t, stdout)
	mount := t.TempDir()
	for name, data := range cm.Data {
		os.WriteFile(filepath.Join(mount, name), []byte(data), 0o644)
	}
	ctr := job.Spec.Template.Spec.Containers[0]
	secrets := map[string]map[string]string{"tgt": {kube.SecretKey: target}}

	var logs bytes.Buffer
	outs := make([]bytes.Buffer, shards)
	errs := make([]bytes.Buffer, shards)
	cmds := make([]*exec.Cmd, shards)
	for i := range shards {
		env := map[string]string{}
		for _, e := range ctr.Env {
			switch {
			case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
				if e.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
					t.Fatalf("%s from %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
				}
				env[e.Name] = fmt.Sprint(i) // the Job controller's annotation
			case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
				ref := e.ValueFrom.SecretKeyRef
				env[e.Name] = secrets[ref.Name][ref.Key]
			default:
				env[e.Name] = e.Value
			}
		}
		args := make([]string, len(ctr.Args))
		for j, a := range ctr.Args {
			args[j] = strings.ReplaceAll(expand(a, env), kube.FilesDir+"/", mount+"/")
		}
		if !slices.Contains(args, fmt.Sprintf("%d/%d", i, shards)) || !slices.Contains(args, "--header="+header) {
			t.Fatalf("pod %d args %q", i, args)
		}
		if ctr.Command[0] != kube.Binary {
			t.Fatalf("command %q", ctr.Command)
		}
		cmds[i] = exec.Command(bin, args...)
		cmds[i].Dir = t.TempDir() // the pod's workingDir
		for k, v := range env {
			cmds[i].Env = append(cmds[i].Env, k+"="+v)
		}
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &errs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("pod %d: %v: %s", i, err, errs[i].String())
		}
		if n := strings.Count(outs[i].String(), fmt.Sprintf("tlsbench-result shard=%d/%d begin", i, shards)); n != 1 {
			t.Fatalf("pod %d wrote %d frames:\n%s", i, n, outs[i].String())
		}
		// kubectl logs --prefix: one pod after the other, stderr
		// interleaved with stdout in the pod's log.
		sc := bufio.NewScanner(strings.NewReader(errs[i].String() + outs[i].String()))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			fmt.Fprintf(&logs, "[pod/local-%d-x7k2p/tlsbench] %s\n", i, sc.Text())
		}
	}
	if strings.Contains(logs.String(), password) {
		t.Fatal("the password is in the pods' logs")
	}
	dir := t.TempDir()
	dump, merged := filepath.Join(dir, "shards.log"), filepath.Join(dir, "result.json")
	os.WriteFile(dump, logs.Bytes(), 0o644)
	if code, _, stderr := runMain(t, "merge", dump, "-o", merged); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	res, err := result.Read(merged)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(merged)
	if bytes.Contains(raw, []byte(password)) {
		t.Error("the password is in the merged result")
	}
	if len(res.Shards) != shards || res.Spec.Concurrency[0] != 4 || !slices.Contains(res.Spec.Headers, header) {
		t.Errorf("merged: %d shards, concurrency %v, headers %q", len(res.Shards), res.Spec.Concurrency, res.Spec.Headers)
	}
	var ops int64
	for _, tr := range res.Trials {
		ops += tr.Ops
	}
	if len(res.Trials) != 2 || ops == 0 {
		t.Errorf("merged %d trials, %d operations", len(res.Trials), ops)
	}
}

func kubeGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateKube {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update-kube writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update-kube rewrites it):\n%s", path, got)
	}
}
