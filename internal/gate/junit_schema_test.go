package gate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tlsbench/tlsbench/internal/result"
)

// junitXSD is Jenkins xunit's junit-10.xsd, the schema Jenkins reads JUnit
// reports with (GitLab's reader takes the same documents), as pytest's
// source package carries it: scripts/install-junit-xsd.sh puts it here.
const junitXSD = "/opt/tlsbench-junit/junit-10.xsd"

// TestJUnitSchema validates the JUnit reports of passed, failed and
// unmeasured gates, with names that need escaping and without a start
// time, against junit-10.xsd with libxml2's validator (xmllint).
func TestJUnitSchema(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err == nil {
		_, err = os.Stat(junitXSD)
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the schema or its validator is missing: %v (scripts/install.sh installs both)", err)
		}
		t.Skipf("the schema or its validator is missing: %v (scripts/install.sh installs both)", err)
	}
	vs := []result.Gate{
		{Name: "tls13-p99", Expr: "connect[tls1.3].overhead.p99 < 40% @ci95", Cell: "connect tls1.3 c=1", Value: 52, Mean: 45, Low: 38, High: 52, Bound: 40, Unit: "%", Cells: 1, Interval: "paired", Rounds: 5}, // with the few-rounds note
		{Name: "connect[*].roundtrips.tls-handshake <= 1", Expr: "connect[*].roundtrips.tls-handshake <= 1", Pass: true, Cell: "connect tls1.3 c=1", Value: 1, Mean: 1, Low: 1, High: 1, Bound: 1, Unit: "count", Cells: 1},
		{Name: `a <"quoted"> & odd name`, Expr: "advise[*].saved.round_trips >= 1", Why: "no cell of advise [tls1.3] measured saved.round_trips"},
	}
	dir := t.TempDir()
	validate := func(file string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return exec.CommandContext(ctx, xmllint, "--noout", "--schema", junitXSD, file).CombinedOutput()
	}
	for i, started := range []string{"2026-11-27T11:00:00Z", ""} {
		out, err := JUnit(vs, "tlsbench connect", started)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "j"+strconv.Itoa(i)+".xml")
		if err := os.WriteFile(file, out, 0o600); err != nil {
			t.Fatal(err)
		}
		if msg, err := validate(file); err != nil {
			t.Errorf("xmllint --schema junit-10.xsd: %v: %s\n%s", err, msg, out)
		}
	}
	// The validator refuses what the schema does: a testcase without its
	// required name.
	bad := filepath.Join(dir, "bad.xml")
	if err := os.WriteFile(bad, []byte(`<testsuites><testsuite name="x" tests="1" failures="0" errors="0"><testcase/></testsuite></testsuites>`), 0o600); err != nil {
		t.Fatal(err)
	}
	if msg, err := validate(bad); err == nil {
		t.Errorf("xmllint took a testcase without a name: %s", msg)
	}
}
