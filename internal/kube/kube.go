// Package kube builds the Kubernetes manifests of a run split into shards:
// an Indexed Job whose pod I runs shard I/N of one plan, all starting at one
// wall-clock time, each writing its framed result to its log for
// `tlsbench merge`. It only builds objects; cli validates the plan (with
// plan.New, as the pods will) before asking for them.
package kube

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Names the manifests and the pods share.
const (
	// IndexEnv is the variable an Indexed Job's pod learns its index from;
	// the manifest declares it (from the pod's completion-index
	// annotation, as the Job controller would) so that $(IndexEnv) in the
	// args is expanded by the kubelet.
	IndexEnv = "JOB_COMPLETION_INDEX"
	// TargetEnv carries the target URL from a Secret, so that a password
	// never stands in a manifest.
	TargetEnv = "TLSBENCH_TARGET"
	// SecretKey is the key of the target URL in that Secret.
	SecretKey = "url"
	// Binary is the command in the image (see the Dockerfile).
	Binary = "tlsbench"
	// FilesDir is where the ConfigMap of the run's files is mounted.
	FilesDir = "/etc/tlsbench"
	// indexAnnotation is set by the Job controller on every pod.
	indexAnnotation = "batch.kubernetes.io/job-completion-index"
)

// Config is one sharded run as the manifests describe it.
type Config struct {
	// Name names the Job (and its ConfigMap); Namespace may be empty
	// (kubectl's current one).
	Name, Namespace string
	Image           string
	Shards          int
	// Experiment, Target and Args are tlsbench's arguments for every
	// shard, before the shard's own (--shard, --start-at, -o), as the
	// program is to receive them: ShardArgs escapes them for the kubelet.
	// With TargetSecret (an existing Secret whose key SecretKey holds the
	// URL) Target is not written: the pods read it from the Secret.
	Experiment   string
	Target       string
	Args         []string
	TargetSecret string
	// Files are the contents of the local files the plan reads, by the
	// name Args give them under FilesDir; they go into a ConfigMap.
	Files map[string]string
	// StartAt is when every shard starts its first trial; StartIn, if
	// not 0, is how far ahead of Printed it was put (for the comment).
	StartAt, Printed time.Time
	StartIn          time.Duration
	// CPU and Memory are each pod's requests; Memory is also its limit.
	CPU, Memory resource.Quantity
	// Command is the shards' command line as a shell would take it,
	// secrets removed, for the comment.
	Command string
}

// Check refuses a Config the API server would refuse, one line each.
func (c Config) Check() error {
	if errs := validation.IsDNS1123Label(c.Name); len(errs) > 0 {
		return fmt.Errorf("--name %q is not a Kubernetes name: %s", c.Name, errs[0])
	}
	// The pods are named NAME-INDEX-RANDOM; their hostname NAME-INDEX
	// must be a label too.
	if n := len(c.Name) + 1 + len(strconv.Itoa(c.Shards-1)); n > validation.DNS1123LabelMaxLength {
		return fmt.Errorf("--name %q is too long for %d pods named after it: give at most %d characters", c.Name, c.Shards, len(c.Name)-(n-validation.DNS1123LabelMaxLength))
	}
	if c.Namespace != "" {
		if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
			return fmt.Errorf("--namespace %q is not a Kubernetes namespace: %s", c.Namespace, errs[0])
		}
	}
	if c.TargetSecret != "" {
		if errs := validation.IsDNS1123Subdomain(c.TargetSecret); len(errs) > 0 {
			return fmt.Errorf("--target-secret %q is not a Secret's name: %s", c.TargetSecret, errs[0])
		}
	}
	if c.Image == "" || strings.ContainsAny(c.Image, " \t\n") {
		return fmt.Errorf("--image %q is not an image reference: give one such as registry.example/tlsbench:0.1", c.Image)
	}
	if c.Shards < 1 {
		return fmt.Errorf("--shards %d is out of range: give the number of pods, 1 or more", c.Shards)
	}
	if c.CPU.Sign() <= 0 || c.Memory.Sign() <= 0 {
		return fmt.Errorf("--cpu and --memory must be positive, e.g. --cpu 1 --memory 512Mi")
	}
	return nil
}

// Escape writes a literal argument so that the kubelet passes it
// unchanged: it expands $(VAR) in args and turns "$$" into "$".
func Escape(arg string) string { return strings.ReplaceAll(arg, "$", "$$") }

// ShardArgs are the arguments of the pod of every index, as the kubelet
// expands them: literal arguments escaped, the index from IndexEnv, the
// target from TargetEnv when it is in a Secret.
func (c Config) ShardArgs() []string {
	target := Escape(c.Target)
	if c.TargetSecret != "" {
		target = "$(" + TargetEnv + ")"
	}
	args := []string{Escape(c.Experiment), target}
	for _, a := range c.Args {
		args = append(args, Escape(a))
	}
	return append(args,
		"--shard", "$("+IndexEnv+")/"+strconv.Itoa(c.Shards),
		"--start-at", c.StartAt.UTC().Format(time.RFC3339),
		"-o", "-")
}

// labels are the pods' own labels; the anti-affinity selects on them.
func (c Config) labels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": "tlsbench", "app.kubernetes.io/instance": c.Name}
}

// ConfigMap holds the run's files, or is nil when it reads none.
func (c Config) ConfigMap() *corev1.ConfigMap {
	if len(c.Files) == 0 {
		return nil
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: c.Name + "-files", Namespace: c.Namespace, Labels: c.labels()},
		Data:       c.Files,
	}
}

// ImageUID is the user and group the image runs as (the Dockerfile's
// USER, distroless's nonroot), which the Job names by number.
const ImageUID = 65532

// Job is the Indexed Job: N pods at once, one per shard, none retried (a
// retried shard would start after its trials' slots).
func (c Config) Job() *batchv1.Job {
	n := int32(c.Shards)
	indexed := batchv1.IndexedCompletion
	env := []corev1.EnvVar{{
		Name: IndexEnv,
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.annotations['" + indexAnnotation + "']",
		}},
	}}
	if c.TargetSecret != "" {
		env = append(env, corev1.EnvVar{
			Name: TargetEnv,
			ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: c.TargetSecret},
				Key:                  SecretKey,
			}},
		})
	}
	no, yes, uid := false, true, int64(ImageUID)
	container := corev1.Container{
		Name:    "tlsbench",
		Image:   c.Image,
		Command: []string{Binary},
		Args:    c.ShardArgs(),
		Env:     env,
		// No CPU limit: throttling would be measured as TLS cost.
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: c.CPU, corev1.ResourceMemory: c.Memory},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: c.Memory},
		},
		SecurityContext: &corev1.SecurityContext{
			// Numbers, not the image's user name: the kubelet cannot
			// check that a named user (distroless "nonroot") is not
			// root, and refuses to start such a container.
			RunAsNonRoot:             &yes,
			RunAsUser:                &uid,
			RunAsGroup:               &uid,
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			ReadOnlyRootFilesystem:   &yes,
			AllowPrivilegeEscalation: &no,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		WorkingDir:   "/tmp",
		VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
	}
	volumes := []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if cm := c.ConfigMap(); cm != nil {
		container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: "files", MountPath: FilesDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "files", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}},
		}})
	}
	backoff := int32(0)
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, Labels: c.labels()},
		Spec: batchv1.JobSpec{
			CompletionMode: &indexed,
			Completions:    &n,
			Parallelism:    &n,
			BackoffLimit:   &backoff,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: c.labels()},
				Spec: corev1.PodSpec{
					RestartPolicy:      corev1.RestartPolicyNever,
					EnableServiceLinks: &no,
					// Preferred, not required: a cluster with fewer
					// nodes than shards still runs them all, and each
					// shard's result keeps its node's environment.
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
							Weight: 100,
							PodAffinityTerm: corev1.PodAffinityTerm{
								LabelSelector: &metav1.LabelSelector{MatchLabels: c.labels()},
								TopologyKey:   corev1.LabelHostname,
							},
						}},
					}},
					Containers: []corev1.Container{container},
					Volumes:    volumes,
				},
			},
		},
	}
}

// Manifests writes the ConfigMap (if any) and the Job as YAML documents
// separated by "---", after comments that say when the shards start and
// how to collect their results.
func (c Config) Manifests() ([]byte, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	start := c.StartAt.UTC().Format(time.RFC3339)
	fmt.Fprintf(&b, "# %d shards of: %s\n", c.Shards, c.Command)
	if c.StartIn > 0 {
		fmt.Fprintf(&b, "# The shards start at %s (--start-in %s after printing at %s, rounded up to the second):\n# apply these manifests before then; a shard that starts late is marked so in its result.\n",
			start, c.StartIn, c.Printed.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintf(&b, "# The shards start at %s: apply these manifests before then;\n# a shard that starts late is marked so in its result.\n", start)
	}
	if c.TargetSecret != "" {
		fmt.Fprintf(&b, "# The target URL is read from Secret %s, key %s (not in these manifests).\n", c.TargetSecret, SecretKey)
	}
	fmt.Fprintf(&b, "# kubectl apply -f FILE && kubectl wait --for=condition=complete job/%s --timeout=1h (longer than the run)\n", c.Name)
	fmt.Fprintf(&b, "# kubectl logs -l job-name=%s --prefix --tail=-1 > shards.log && tlsbench merge shards.log -o result.json\n", c.Name)
	objs := []any{}
	if cm := c.ConfigMap(); cm != nil {
		objs = append(objs, cm)
	}
	objs = append(objs, c.Job())
	for i, o := range objs {
		y, err := marshal(o)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}

// marshal writes o as YAML without its empty status, which is the API
// server's to fill.
func marshal(o any) ([]byte, error) {
	j, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	return yaml.Marshal(m)
}
