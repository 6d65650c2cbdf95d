package plan

// Wire is the experiment of a result decoded from a packet capture (tlsbench
// wire): connections of any client, not tlsbench's own.
const Wire Experiment = "wire"
