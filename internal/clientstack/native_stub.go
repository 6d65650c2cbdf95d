package clientstack

import "context"

func startCurl(ctx context.Context, cfg Config) (Client, error) {
	return nil, refuse(cfg, "not driven by tlsbench yet")
}

func startSysbench(ctx context.Context, cfg Config) (Client, error) {
	return nil, refuse(cfg, "not driven by tlsbench yet")
}
