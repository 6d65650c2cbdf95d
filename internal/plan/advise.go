package plan

// Advise is the experiment of a result that turns a capture's observed
// profile into advice (tlsbench advise): predictions, no trials of its own.
const Advise Experiment = "advise"
