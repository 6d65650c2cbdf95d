# The README's commands; .ci/run calls `make test`.
.PHONY: run test bench lint

run:
	go run ./cmd/tlsbench

test:
	bash scripts/install.sh
	go test ./...

bench:
	bash scripts/install.sh bench
	bash bench/peers.sh

lint:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))"
	go vet ./...
