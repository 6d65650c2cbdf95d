# The README's commands; .ci/run calls `make test`.
.PHONY: run test test-short fuzz bench lint

run:
	go run ./cmd/tlsbench

# Two packages at a time: the tests assert invariants that a loaded
# machine meets (they pass beside stress-ng --cpu 4), so the second core
# goes to a second package instead of idling while one waits on servers.
# The timeout fits the slowest package (cli) on a loaded two-core machine;
# go test's default 10 minutes did not.
test:
	bash scripts/install.sh
	go test -p 2 -timeout 45m ./...

# The unit layer: under -short every test that starts a server, captures
# packets, runs a browser or waits for seconds skips (labtest.Slow); the
# rest run in milliseconds, the whole in under a minute.
test-short:
	go test -short -timeout 5m ./...

# Every fuzz target a few seconds past its seed corpus (FUZZTIME=1m for
# longer); CI runs it after the tests.
fuzz:
	bash scripts/fuzz.sh

# Figures, not pass/fail: tlsbench beside its peers, and the accuracy of
# its emulated RTT (the dialer's, and the relay's beside it:
# RelayRTTAccuracy), its round-trip model, its open loop's schedule, its
# knee search and its wait-mode choice, which the tests leave to these
# (a loaded machine misses any bound on them). Run on an idle machine.
bench:
	bash scripts/install.sh bench
	go test -run '^$$' -bench 'RTTAccuracy|RelayRTTAccuracy|StackRTTAccuracy|DelayLinkAccuracy|PredictRTT|ConnectWire|PhaseTimes|RateArrivals|Knee|PoolChoosesWaitMode' -benchtime 1x ./internal/netx ./internal/lab ./internal/cli ./internal/driver/pgdrv ./internal/driver/mysqldrv ./internal/bench
	bash bench/peers.sh
	bash bench/peers-db.sh

lint:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))"
	go vet ./...
