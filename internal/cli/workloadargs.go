package cli

import (
	"strings"

	"github.com/tlsbench/tlsbench/internal/plan"
)

// workloadFlags are the flags whose values may hold credentials that
// plan.Redact cannot see (a header, a body, a Redis AUTH), with the
// redaction of each.
var workloadFlags = map[string]func(string) string{
	"-H": plan.RedactHeader, "--header": plan.RedactHeader,
	"--data":    plan.RedactData,
	"--command": plan.RedactCommandLine,
}

// redactWorkloadArgs hides those values in a command line, in each form
// pflag takes: "-H VALUE", "-HVALUE", "--header VALUE", "--header=VALUE".
func redactWorkloadArgs(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if hide, ok := workloadFlags[a]; ok && i+1 < len(out) {
			out[i+1] = hide(out[i+1])
			i++
			continue
		}
		if name, val, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "--") {
			if hide, ok := workloadFlags[name]; ok {
				out[i] = name + "=" + hide(val)
			}
			continue
		}
		if v, ok := strings.CutPrefix(a, "-H"); ok && v != "" && !strings.HasPrefix(a, "--") {
			out[i] = "-H" + plan.RedactHeader(strings.TrimPrefix(v, "="))
		}
	}
	return out
}
