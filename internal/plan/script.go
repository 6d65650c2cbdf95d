package plan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tlsbench/tlsbench/internal/files"
	"github.com/tlsbench/tlsbench/internal/script"
)

// Script is a pgbench custom script the workload runs (--script
// FILE[@WEIGHT]), recorded whole: what ran can be read from the result,
// and its checksum tells two runs' scripts apart.
type Script struct {
	File string `json:"file"`
	// Weight is the script's share of operations: Weight / the sum of all
	// scripts' weights (pgbench's -f FILE@WEIGHT; 1 if not given).
	Weight int    `json:"weight"`
	Text   string `json:"text"`
	SHA256 string `json:"sha256"`
}

// ParseScriptArg reads pgbench's FILE[@WEIGHT] spelling of a script: the
// weight follows the last @, 1 if there is none.
func ParseScriptArg(arg string) (Script, error) {
	sc := Script{File: arg, Weight: 1}
	if i := strings.LastIndexByte(arg, '@'); i >= 0 {
		w, err := strconv.ParseInt(arg[i+1:], 10, 32)
		if err != nil || w < 0 {
			return sc, fmt.Errorf("%q: the weight after @ must be a whole number from 0 to %d", arg, math.MaxInt32)
		}
		sc.File, sc.Weight = arg[:i], int(w)
	}
	if sc.File == "" {
		return sc, fmt.Errorf("%q names no file: give FILE or FILE@WEIGHT", arg)
	}
	return sc, nil
}

// scriptDialects are the engines that run scripts, and their SQL.
var scriptDialects = map[string]script.Dialect{"postgres": script.Postgres, "mysql": script.MySQL}

// scriptWorkload checks the scripts against the target, reads each file
// once (bounded), records its text and checksum, and parses the mix the
// drivers run. The workload is then "script"; the sbtest size keeps its
// defaults, since a lab server still gets sbtest for scripts to read. A
// cancelled ctx ends the parsing with ctx's error.
func (s *Spec) scriptWorkload(ctx context.Context, t Target) error {
	d, ok := scriptDialects[t.Engine()]
	if !ok {
		return errorf("⟨scripts⟩: pgbench scripts run on PostgreSQL and MySQL/MariaDB targets (a postgres:// or mysql:// URL, ⟨lab⟩ postgres or mariadb), not on %s", t.Redacted)
	}
	if s.Workload != "" && s.Workload != "script" {
		return errorf("give ⟨workload⟩ %s or ⟨scripts⟩, not both: a script is the workload", s.Workload)
	}
	if slices.Contains(s.Experiments, Stream) {
		return errorf("the stream experiment reads one large result: leave ⟨scripts⟩ out, or use the pool experiment")
	}
	// Errors are the user's input: a file that cannot be read, a line of
	// it (FILE:LINE: ...), each one line of its own.
	s.Scripts = slices.Clone(s.Scripts)
	var parsed []*script.Script
	for i := range s.Scripts {
		sc := &s.Scripts[i]
		if sc.Text == "" {
			data, err := files.Read(sc.File, "⟨scripts⟩", files.MaxScript)
			var pe *fs.PathError
			switch {
			case errors.As(err, &pe):
				return errorf("⟨scripts⟩ %s: %v", sc.File, pe.Err)
			case err != nil:
				return errorf("%v", err)
			}
			sc.Text = string(data)
		}
		sum := sha256.Sum256([]byte(sc.Text))
		sc.SHA256 = hex.EncodeToString(sum[:])
		p, err := script.Parse(ctx, sc.File, sc.Text, sc.Weight, d)
		switch {
		case ctx.Err() != nil:
			return ctx.Err() // an interruption, not the user's input
		case err != nil:
			return errorf("%v", err)
		}
		parsed = append(parsed, p)
	}
	mix, err := script.NewMix(parsed...)
	if err != nil {
		return errorf("⟨scripts⟩: %v", err)
	}
	s.mix = mix
	s.Workload = "script"
	return s.sqlWorkload()
}

// scriptTimeout bounds every pass of the scripts by ⟨timeout⟩ (filled by
// then): a script whose fixed \sleeps alone take longer would fail every
// pass, so it is refused now.
func (s *Spec) scriptTimeout() error {
	if s.mix == nil {
		return nil
	}
	if err := s.mix.SetTimeout(s.Timeout); err != nil {
		return errorf("%v: shorten the sleeps, or give a longer ⟨timeout⟩", err)
	}
	return nil
}

// ScriptMix is the parsed scripts the drivers run, nil without scripts
// (or for a Spec not made by New, such as one read from a result).
func (s Spec) ScriptMix() *script.Mix { return s.mix }
