package plan

import (
	"maps"
	"slices"
	"strings"
)

// experimentKind is an experiment registered by its own file, as --via
// kinds are (routeKinds): what the Spec allows of it.
type experimentKind struct {
	// preset, when set, is the one preset that runs the experiment (the
	// seed's loops); it is not offered otherwise.
	preset string
	// openLoop: it runs at fixed arrival rates (⟨rates⟩) as well as in a
	// closed loop of workers.
	openLoop bool
}

// experimentKinds holds the registered experiments by name.
var experimentKinds = map[Experiment]experimentKind{}

func init() {
	experimentKinds[Connect] = experimentKind{openLoop: true}
	experimentKinds[Pool] = experimentKind{openLoop: true}
	experimentKinds[Stream] = experimentKind{}
}

// Experiments lists every registered experiment, preset-only ones too, by
// name.
func Experiments() []Experiment {
	return slices.Sorted(maps.Keys(experimentKinds))
}

// experiments applies the preset, then fills and checks
// Spec.Experiments: connect by default, and
// each one registered and, if it belongs to a preset, run by that preset.
func (s *Spec) experiments() error {
	if err := s.preset(); err != nil {
		return err
	}
	if len(s.Experiments) == 0 {
		s.Experiments = []Experiment{Connect}
	}
	for _, e := range s.Experiments {
		if k, ok := experimentKinds[e]; !ok || k.preset != "" && k.preset != s.Preset {
			var uses []string
			for _, name := range Experiments() {
				if experimentKinds[name].preset == "" {
					uses = append(uses, string(name))
				}
			}
			return errorf("unknown experiment %q: use %s or %s", e, strings.Join(uses[:len(uses)-1], ", "), uses[len(uses)-1])
		}
	}
	return nil
}
