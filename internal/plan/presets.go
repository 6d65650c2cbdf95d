package plan

import (
	"slices"
	"time"
)

// Presets fill what the user left unset with the values of a study; what
// was given stays, unless the study cannot be done that way.
const (
	// PresetDefault is the run with no command: the whole matrix on the
	// built-in server (DefaultMatrix).
	PresetDefault = "default"
	// PresetMongoDBSeed replays the MongoDB seed study: its four figures
	// over new and reused clients, with and without TLS.
	PresetMongoDBSeed = "mongodb-seed"
)

func init() {
	experimentKinds[NewClient] = experimentKind{preset: PresetMongoDBSeed}
	experimentKinds[ReusedClient] = experimentKind{preset: PresetMongoDBSeed}
}

// Presets lists the presets --preset takes.
var Presets = []string{PresetDefault, PresetMongoDBSeed}

// Matrix is what PresetDefault fills in.
type Matrix struct {
	Experiments      []Experiment
	TLS, Keys        []string
	Concurrency      []int
	Duration, Warmup time.Duration
}

// DefaultMatrix is the no-argument run: plain against TLS 1.2 and 1.3 for
// four server keys, connect and pool at 1 and 4 clients, within two
// minutes on two cores.
var DefaultMatrix = Matrix{
	Experiments: []Experiment{Connect, Pool},
	TLS:         []string{"off", "1.2", "1.3"},
	Keys:        []string{"rsa1024", "rsa2048", "rsa4096", "ecdsa-p256"},
	Concurrency: []int{1, 4},
	Duration:    750 * time.Millisecond,
	Warmup:      200 * time.Millisecond,
}

// The MongoDB seed's 5000 iterations per variant, in 5 interleaved trials.
const (
	presetCount  = 1000
	presetTrials = 5
)

// preset fills the values of s.Preset's study into what s leaves unset.
func (s *Spec) preset() error {
	switch s.Preset {
	case "":
		return nil
	case PresetDefault:
		s.defaultMatrix()
		return nil
	case PresetMongoDBSeed:
		return s.mongoDBSeed()
	}
	return errorf("⟨preset⟩ %q: use %s or %s", s.Preset, PresetDefault, PresetMongoDBSeed)
}

// defaultMatrix fills DefaultMatrix into what s leaves unset.
func (s *Spec) defaultMatrix() {
	m := DefaultMatrix
	if len(s.Experiments) == 0 {
		s.Experiments = slices.Clone(m.Experiments)
	}
	if len(s.TLS) == 0 {
		s.TLS = slices.Clone(m.TLS)
	}
	if len(s.Keys) == 0 {
		s.Keys = slices.Clone(m.Keys)
	}
	if len(s.Concurrency) == 0 {
		s.Concurrency = slices.Clone(m.Concurrency)
	}
	if s.Duration == 0 && s.Count == 0 {
		s.Duration = m.Duration
	}
	if s.Warmup == nil {
		s.Warmup = &m.Warmup
	}
}

// mongoDBSeed fills a Spec that replays the MongoDB seed study.
func (s *Spec) mongoDBSeed() error {
	if len(s.Experiments) > 0 && !slices.Contains(s.Experiments, Connect) {
		return errorf("⟨preset⟩ %s runs its own experiments: use tlsbench connect ⟨preset⟩ %s", s.Preset, s.Preset)
	}
	s.Experiments = []Experiment{Connect, NewClient, ReusedClient}
	switch s.Workload {
	case "", "find-one":
		s.Workload = "find-one" // the seed's find_one() with no filter
	default:
		return errorf("⟨preset⟩ %s times the seed's find_one() with no filter: leave ⟨workload⟩ out", s.Preset)
	}
	if len(s.Concurrency) > 1 || (len(s.Concurrency) == 1 && s.Concurrency[0] != 1) {
		return errorf("⟨preset⟩ %s runs one client at a time, as the seed did: leave ⟨concurrency⟩ out", s.Preset)
	}
	if len(s.TLS) == 0 {
		s.TLS = []string{"off", "auto"} // with and without TLS
	}
	if s.Count == 0 {
		s.Count = presetCount
	}
	if s.Trials == 0 {
		s.Trials = presetTrials
	}
	return nil
}
