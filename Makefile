# dsh-host: build, test, bench and the proto contract.
GO          ?= go
PROTOC      ?= protoc
TOOLS       := $(CURDIR)/.tools
PROTO_DIR   := pluginapi/proto
PROTO_FILES := $(shell find $(PROTO_DIR) -name '*.proto')
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GREMLINS_VERSION           := v0.6.0
TEST_TIMEOUT ?= 10m
BIN         := bin
PLUGINS := bash-local bash-sandbox pwsh-local container ssh kubernetes

.PHONY: all build host agents install test bench run proto check-proto have-protoc tools clean cross stress mutate

all: build

# AGENT_ARCHS: the targets build makes dsh-agent for (static, for any
# image), in $(BIN)/agent/linux-ARCH/dsh-agent: this machine's; agents
# makes every one an executor may upload (amd64 and arm64).
AGENT_ARCHS ?= $(shell $(GO) env GOARCH)

# The commit dsh-host version reports (the build info has none when
# GOFLAGS has -buildvcs=false); install also bakes in where it installs
# the plugins and agents, which a copy of dsh-host elsewhere looks in last.
COMMIT  := $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +modified)
LDFLAGS := -X main.commit=$(COMMIT) $(if $(LIBEXECDIR),-X github.com/dsh-host/dsh-host/internal/layout.LibexecDir=$(LIBEXECDIR))

build: host
	@for a in $(AGENT_ARCHS); do \
		echo "CGO_ENABLED=0 GOOS=linux GOARCH=$$a $(GO) build -trimpath -o $(BIN)/agent/linux-$$a/dsh-agent ./cmd/dsh-agent"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$a $(GO) build -trimpath -o $(BIN)/agent/linux-$$a/dsh-agent ./cmd/dsh-agent || exit 1; \
	done
	@mkdir -p $(BIN)/plugins
	@for p in $(PLUGINS); do \
		echo "$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/plugins/dsh-executor-$$p ./plugins/$$p/cmd/dsh-executor-$$p"; \
		$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/plugins/dsh-executor-$$p ./plugins/$$p/cmd/dsh-executor-$$p || exit 1; \
	done

# host: dsh-host alone, with its built-in executors (all that make run needs).
host:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/dsh-host ./cmd/dsh-host

# install: dsh-host in $(DESTDIR)$(PREFIX)/bin, the plugins and agents in
# $(DESTDIR)$(PREFIX)/libexec/dsh-host/{plugins,agent/linux-ARCH}. dsh-host
# finds them from its own location (../libexec/dsh-host beside bin/), and the
# container and ssh plugins find their agent from theirs, so the installed
# tree can be moved as a whole; a dsh-host or plugin copied out of it looks
# in $(PREFIX)/libexec/dsh-host, baked in here. AGENT_ARCHS="amd64 arm64"
# installs both agents.
PREFIX     ?= /usr/local
DESTDIR    ?=
LIBEXEC    := $(PREFIX)/libexec/dsh-host
install:
	$(MAKE) build LIBEXECDIR='$(LIBEXEC)'
	install -d '$(DESTDIR)$(PREFIX)/bin' '$(DESTDIR)$(LIBEXEC)/plugins'
	install -m 0755 $(BIN)/dsh-host '$(DESTDIR)$(PREFIX)/bin/dsh-host'
	@for p in $(PLUGINS); do \
		echo "install -m 0755 $(BIN)/plugins/dsh-executor-$$p '$(DESTDIR)$(LIBEXEC)/plugins/'"; \
		install -m 0755 $(BIN)/plugins/dsh-executor-$$p '$(DESTDIR)$(LIBEXEC)/plugins/' || exit 1; \
	done
	@for a in $(AGENT_ARCHS); do \
		echo "install -D -m 0755 $(BIN)/agent/linux-$$a/dsh-agent '$(DESTDIR)$(LIBEXEC)/agent/linux-$$a/dsh-agent'"; \
		install -D -m 0755 $(BIN)/agent/linux-$$a/dsh-agent "$(DESTDIR)$(LIBEXEC)/agent/linux-$$a/dsh-agent" || exit 1; \
	done

agents:
	$(MAKE) build AGENT_ARCHS="amd64 arm64"

# cross: everything still builds where bash-sandbox cannot confine (it
# fails closed there) and localexec cannot start processes yet.
cross:
	GOOS=darwin $(GO) build ./...
	GOOS=windows $(GO) build ./...

test: cross
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "not gofmt-ed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...
	cd examples/dash-exec && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	cd examples/mcp-embed && $(GO) vet ./... && $(GO) test -race -count=1 ./...

bench: build
	$(GO) run ./integration/bench -dsh-host $(BIN)/dsh-host -breakdown

# stress: soak one host (10,000 runs, 500 jobs: nothing may grow, nothing
# may be left), then run each fuzz target for FUZZTIME.
FUZZTIME ?= 20s
stress: build
	$(GO) run ./integration/stress -dsh-host $(CURDIR)/$(BIN)/dsh-host
	$(GO) test -run '^$$' -fuzz '^FuzzResolve$$' -fuzztime $(FUZZTIME) ./plugins/localexec
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeWire$$' -fuzztime $(FUZZTIME) ./pluginapi
	$(GO) test -run '^$$' -fuzz '^FuzzRequestWireRoundTrip$$' -fuzztime $(FUZZTIME) ./pluginapi
	$(GO) test -run '^$$' -fuzz '^FuzzParseExitStatus$$' -fuzztime $(FUZZTIME) ./pluginapi
	$(GO) test -run '^$$' -fuzz '^FuzzLoadSettingsFile$$' -fuzztime $(FUZZTIME) ./host

# mutate: mutation testing of the packages where a mutant that lives is a
# broken promise (integration/mutate says how); slow, not part of test.
# ONLY=PKG takes one of them (host, plugins/localexec, ...).
ONLY ?=
mutate: $(TOOLS)/gremlins
	$(GO) run ./integration/mutate -gremlins $(TOOLS)/gremlins $(if $(ONLY),-only $(ONLY)) $(if $(FILES),-files '$(FILES)')

$(TOOLS)/gremlins:
	GOBIN=$(TOOLS) $(GO) install github.com/go-gremlins/gremlins/cmd/gremlins@$(GREMLINS_VERSION)

# run: the demo, through the built-in default executor (bash-local): it
# builds dsh-host alone.
DEMO := echo "hello from bash-local: pid $$$$, in $$PWD"; uname -sr; echo "a line on stderr" >&2; exit 3
run: host
	@echo '$$ bin/dsh-host run -- '"'"'$(DEMO)'"'"
	@$(BIN)/dsh-host run -- '$(DEMO)'; echo "(dsh-host exited with status $$?)"

tools: $(TOOLS)/protoc-gen-go $(TOOLS)/protoc-gen-go-grpc

$(TOOLS)/protoc-gen-go:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)

$(TOOLS)/protoc-gen-go-grpc:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)

# have-protoc fails, saying what to install, where there is no protoc.
have-protoc:
	@command -v $(PROTOC) >/dev/null || { echo "$(PROTOC) is not installed: the generated code can be neither made nor checked without it (Debian: apt-get install protobuf-compiler)" >&2; exit 1; }

# proto regenerates the committed Go code from the .proto files.
proto: have-protoc tools
	PATH="$(TOOLS):$$PATH" $(PROTOC) -I $(PROTO_DIR) \
		--go_out=$(PROTO_DIR) --go_opt=paths=source_relative \
		--go-grpc_out=$(PROTO_DIR) --go-grpc_opt=paths=source_relative \
		$(patsubst $(PROTO_DIR)/%,%,$(PROTO_FILES))

# check-proto fails when the committed generated code differs from what the
# .proto files generate (the protoc version line aside), and when it cannot
# tell (no protoc, or protoc failed).
check-proto: have-protoc tools
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	PATH="$(TOOLS):$$PATH" $(PROTOC) -I $(PROTO_DIR) \
		--go_out=$$tmp --go_opt=paths=source_relative \
		--go-grpc_out=$$tmp --go-grpc_opt=paths=source_relative \
		$(patsubst $(PROTO_DIR)/%,%,$(PROTO_FILES)) || { echo "check-proto: $(PROTOC) failed" >&2; exit 1; }; \
	status=0; for f in $$(cd $$tmp && find . -name '*.go'); do \
		if ! diff -u -I '^// *protoc ' -I '^// - protoc ' $(PROTO_DIR)/$$f $$tmp/$$f; then status=1; fi; \
	done; \
	if [ $$status -ne 0 ]; then echo "check-proto: generated code drifted; run 'make proto' and commit"; exit 1; fi; \
	echo "check-proto: generated code matches $(PROTO_FILES)"

clean:
	rm -rf $(BIN) $(TOOLS)
