package bench

import (
	"bufio"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tlsbench/tlsbench/internal/result"
)

// Environment describes the machine the client runs on.
func Environment() result.Env {
	e := result.Env{OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: runtime.NumCPU()}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		e.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	e.Hostname, _ = os.Hostname()
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "model name":
				if e.CPUModel == "" {
					e.CPUModel = strings.TrimSpace(v)
				}
			case "flags":
				e.AESNI = e.AESNI || strings.Contains(" "+v+" ", " aes ")
			}
		}
	}
	return e
}
