package cli

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tlsbench/tlsbench/internal/kube"
	"github.com/tlsbench/tlsbench/internal/plan"
)

// kubeNow is the clock --start-in counts from (tests fix it).
var kubeNow = time.Now

// Defaults of the kube command's own flags.
const (
	defaultStartIn = 2 * time.Minute
	defaultCPU     = "1"
	defaultMemory  = "512Mi"
	// maxFiles bounds the ConfigMap of the run's files (the API server
	// takes at most 1 MiB per object).
	maxFiles = 1 << 20
)

// kubeFlags are the kube command's own flags; the experiment's are
// runFlags, registered and validated as for a run.
type kubeFlags struct {
	shards                 int
	image, namespace, name string
	targetSecret           string
	startIn                time.Duration
	cpu, memory            string
	own                    map[string]bool // the flags above: not the pods'
	experiment             plan.Experiment
	runFlags               runFlags
	stdout                 io.Writer
}

func newKubeCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kube connect|pool|storm TARGET [flags] --shards N --image IMAGE",
		Short: "Print Kubernetes manifests that run one plan as N shards on N machines, for merge",
		Long: `kube prints the manifests (YAML) of an Indexed Job whose N pods each run one
shard of the same plan (tlsbench CMD TARGET --shard I/N --start-at T -o -),
preferably on different nodes, all starting at one wall-clock time T. Each pod
writes its framed result to its log; kubectl logs of all pods feeds
tlsbench merge. The flags are validated here, as the pods will, so that a
bad flag fails now and not in the cluster.

A TARGET with a password is not printed: create a Secret holding the URL
(kubectl create secret generic NAME --from-literal=url='URL') and give
--target-secret NAME; the pods read the URL from it. The files the plan reads
(--ca, --script, --paths, --data @FILE) go into a ConfigMap mounted in the
pods, so they must hold no secret.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("kube: name the experiment: tlsbench kube connect|pool|storm TARGET --shards N --image IMAGE")}
			}
			return usageError{fmt.Errorf("kube: %q is not connect, pool or storm (the experiments that split into shards)", args[0])}
		},
	}
	for _, e := range []plan.Experiment{plan.Connect, plan.Pool, plan.Storm} {
		cmd.AddCommand(newKubeExperimentCmd(e, stdout))
	}
	return cmd
}

func newKubeExperimentCmd(e plan.Experiment, stdout io.Writer) *cobra.Command {
	k := &kubeFlags{experiment: e, stdout: stdout}
	cmd := &cobra.Command{
		Use:   string(e) + " TARGET --shards N --image IMAGE [flags]",
		Short: "Print the manifests of a sharded " + string(e) + " run",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("kube %s takes one TARGET (the URL every shard measures), got %d arguments", e, len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return k.run(cmd, args[0]) },
	}
	k.runFlags.register(cmd, commandSet(e)|onKube, []plan.Experiment{e})
	cmd.SetUsageFunc(runUsage)
	fs := cmd.Flags()
	fs.IntVar(&k.shards, "shards", 0, "pods, each running one shard on (preferably) its own node")
	fs.StringVar(&k.image, "image", "", "the tlsbench image the pods run (see the Dockerfile)")
	fs.StringVar(&k.namespace, "namespace", "", "the namespace of the Job (default: kubectl's current one)")
	fs.StringVar(&k.name, "name", "tlsbench-"+string(e), "the Job's name (kubectl logs -l job-name=NAME)")
	fs.StringVar(&k.targetSecret, "target-secret", "", "a Secret whose key \""+kube.SecretKey+"\" holds the TARGET URL, for a URL with a password (which kube does not print)")
	fs.DurationVar(&k.startIn, "start-in", defaultStartIn, "the shards start this long after the manifests are printed (time to apply them and pull the image)")
	fs.StringVar(&k.cpu, "cpu", defaultCPU, "each pod's CPU request (no limit: throttling would be measured as TLS cost)")
	fs.StringVar(&k.memory, "memory", defaultMemory, "each pod's memory request and limit")
	// A pod measures a URL: the built-in server's --tls is not its default.
	fs.Lookup("tls").DefValue = ""
	fs.Lookup("start-at").Usage = "the time every pod starts its first trial, RFC 3339 or +DURATION from now (instead of --start-in)"
	k.own = map[string]bool{}
	// --start-at is the run's flag (runFlags), which kube resolves once
	// for all pods.
	for _, n := range []string{"shards", "image", "namespace", "name", "target-secret", "start-in", "start-at", "cpu", "memory"} {
		k.own[n] = true
		_ = fs.SetAnnotation(n, sectionKey, []string{secKube})
		delete(fs.Lookup(n).Annotations, orderKey) // alphabetical among kube's
	}
	return cmd
}

// kubeRefuses says why the pods do not take the run flag (options).
func kubeRefuses(flag string) string {
	why, _ := optionByFlag[flag].refusedIn(onKube)
	return why
}

// filesInKube are the run flags that name local files, shipped in the
// ConfigMap.
var filesInKube = []string{"ca", "script", "paths", "data"}

func (k *kubeFlags) run(cmd *cobra.Command, target string) error {
	if strings.TrimSpace(target) == "" {
		return usageError{fmt.Errorf("kube %s: the TARGET given is empty (an unset variable?): give the URL every shard measures", k.experiment)}
	}
	fs := cmd.Flags()
	if err := k.runFlags.refused(cmd); err != nil {
		return err
	}
	if !fs.Changed("shards") {
		return usageError{fmt.Errorf("kube: give --shards N, the number of pods (client machines) the run is split into")}
	}
	if !fs.Changed("image") {
		return usageError{fmt.Errorf("kube: give --image IMAGE, a tlsbench image the cluster can pull (see the Dockerfile)")}
	}
	startAt, err := k.start(fs)
	if err != nil {
		return err
	}
	cpu, err := resource.ParseQuantity(k.cpu)
	if err != nil {
		return usageError{fmt.Errorf("--cpu %q is not a quantity: give cores such as 1, 2 or 500m", k.cpu)}
	}
	mem, err := resource.ParseQuantity(k.memory)
	if err != nil {
		return usageError{fmt.Errorf("--memory %q is not a quantity: give bytes such as 512Mi or 2Gi", k.memory)}
	}
	c := kube.Config{
		Name: k.name, Namespace: k.namespace, Image: k.image, Shards: k.shards,
		TargetSecret: k.targetSecret, StartAt: startAt, Printed: kubeNow(), CPU: cpu, Memory: mem,
		Files: map[string]string{},
	}
	if !fs.Changed("start-at") {
		c.StartIn = k.startIn
	}
	if err := c.Check(); err != nil {
		return usageError{err}
	}
	// The plan, validated by the one constructor the pods will run, as
	// the last shard (the smallest share); the start is resolved here, so
	// the run flags see none.
	k.runFlags.startAt = ""
	raw, err := k.runFlags.spec(cmd, target, []plan.Experiment{k.experiment})
	if err != nil {
		return err
	}
	raw.Shard = &plan.Shard{Index: max(k.shards, 1) - 1, Count: k.shards, StartAt: startAt}
	spec, err := plan.New(raw)
	if err != nil {
		return err
	}
	if spec.CAFile != "" && !fs.Changed("ca") {
		return usageError{fmt.Errorf("kube: the TARGET names a CA file (%s) the pods do not have: give it with --ca FILE instead, which kube puts in a ConfigMap", spec.CAFile)}
	}
	if spec.CertFile != "" {
		return usageError{fmt.Errorf("kube: the TARGET names a client certificate (%s): %s", spec.CertFile, kubeRefuses("cert"))}
	}

	if name, file, ok := localFileParam(target); ok {
		return usageError{fmt.Errorf("kube: the TARGET's %s=%s names a file on this machine, which the pods do not have: %s", name, file, localFileFix(name))}
	}
	if plan.Redact(target) != target && k.targetSecret == "" {
		return usageError{fmt.Errorf("kube: the TARGET holds a password, which kube does not print into manifests: create a Secret (kubectl create secret generic NAME --from-literal=%s='URL') and give --target-secret NAME", kube.SecretKey)}
	}
	var args []string
	fs.Visit(func(fl *pflag.Flag) {
		if err != nil || k.own[fl.Name] {
			return
		}
		values := []string{fl.Value.String()}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		for i, v := range values {
			if slices.Contains(filesInKube, fl.Name) {
				if v, err = k.shipFile(c.Files, fl.Name, i, v); err != nil {
					return
				}
			}
			args = append(args, "--"+fl.Name+"="+v)
		}
	})
	if err != nil {
		return err
	}
	if err := checkNoSecret(args); err != nil {
		return err
	}
	size := 0
	for _, v := range c.Files {
		size += len(v)
	}
	if size > maxFiles {
		return usageError{fmt.Errorf("kube: the files the plan reads hold %d bytes, more than a ConfigMap takes (%d): use smaller files", size, maxFiles)}
	}
	c.Experiment, c.Target, c.Args = string(k.experiment), target, args
	shown := quoteArgs(redactArgs(append([]string{c.Experiment, plan.Redact(target)}, args...)))
	if c.TargetSecret != "" {
		shown[1] = `"$` + kube.TargetEnv + `"`
	}
	shown = append(shown, "--shard", "$"+kube.IndexEnv+"/"+strconv.Itoa(c.Shards),
		"--start-at", c.StartAt.UTC().Format(time.RFC3339), "-o", "-")
	c.Command = "tlsbench " + strings.Join(shown, " ")
	out, err := c.Manifests()
	if err != nil {
		return usageError{err}
	}
	_, err = k.stdout.Write(out)
	return err
}

// start is when the shards start: --start-at, or --start-in from now.
func (k *kubeFlags) start(fs *pflag.FlagSet) (time.Time, error) {
	now := kubeNow()
	if fs.Changed("start-at") {
		if fs.Changed("start-in") {
			return time.Time{}, usageError{fmt.Errorf("kube: give --start-at or --start-in, not both")}
		}
		t, err := plan.ParseStartAt(k.runFlags.startAt, now)
		if err != nil {
			return time.Time{}, usageError{fmt.Errorf("--start-at: %w", err)}
		}
		if !t.After(now) {
			return time.Time{}, usageError{fmt.Errorf("--start-at %s is in the past: give a later time, or --start-in 2m", k.runFlags.startAt)}
		}
		return t, nil
	}
	if k.startIn <= 0 {
		return time.Time{}, usageError{fmt.Errorf("--start-in %s is not ahead: give the time the pods need to start, e.g. 2m", k.startIn)}
	}
	// Whole seconds, as plan.ParseStartAt rounds +DURATION.
	return plan.ParseStartAt("+"+k.startIn.String(), now)
}

var configMapKey = regexp.MustCompile(`[^-._a-zA-Z0-9]`)

// shipFile puts the file a flag's value names into files and returns the
// value naming it where the pods mount them. A value naming no file
// (--data BODY) comes back as it is.
func (k *kubeFlags) shipFile(files map[string]string, flag string, i int, v string) (string, error) {
	path, suffix := v, ""
	switch flag {
	case "data":
		p, ok := strings.CutPrefix(v, "@")
		if !ok {
			return v, nil // an inline body: checkNoSecret refuses it
		}
		path = p
	case "script":
		sc, err := plan.ParseScriptArg(v)
		if err != nil {
			return "", usageError{fmt.Errorf("--script: %w", err)}
		}
		if sc.File != v {
			path, suffix = sc.File, "@"+strconv.Itoa(sc.Weight)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", usageError{fmt.Errorf("--%s: %w", flag, err)}
	}
	key := flag + "-" + strconv.Itoa(i) + "-" + configMapKey.ReplaceAllString(filepath.Base(path), "_")
	files[key] = string(b)
	mounted := kube.FilesDir + "/" + key
	if flag == "data" {
		return "@" + mounted, nil
	}
	return mounted + suffix, nil
}

// checkNoSecret refuses pod arguments that hold a credential (a header's,
// a body's, a Redis AUTH's: whatever redactArgs hides), which the
// manifests would show.
func checkNoSecret(args []string) error {
	red := redactArgs(args)
	for i, a := range args {
		if red[i] != a {
			name, _, _ := strings.Cut(a, "=")
			if !strings.HasPrefix(name, "--") {
				name = "the TARGET"
			}
			return usageError{fmt.Errorf("kube: %s holds a credential, which kube does not print into manifests: pass it in the TARGET URL with --target-secret, or run the shards by hand (tlsbench CMD --shard I/N)", name)}
		}
	}
	return nil
}

// quoteArgs quotes for a POSIX shell the arguments that need it, for the
// comment that shows the shards' command line.
func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/@+%") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return out
}

// localFileParam finds the first parameter of target that names a local
// file.
func localFileParam(target string) (name, file string, ok bool) {
	u, err := url.Parse(target)
	if err != nil {
		return "", "", false
	}
	q := u.Query()
	for _, name := range plan.LocalFileParams {
		if v := q.Get(name); v != "" {
			return name, v, true
		}
	}
	return "", "", false
}

// localFileFix says how a pod gets what a local file gave.
func localFileFix(name string) string {
	if name == "passfile" {
		return fmt.Sprintf("put the password in the URL of a Secret instead (kubectl create secret generic NAME --from-literal=%s='URL') and give --target-secret NAME", kube.SecretKey)
	}
	return "give the CA with --ca FILE (kube puts it in a ConfigMap); client certificates: " + kubeRefuses("cert")
}
