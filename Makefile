# sbxfs - build, test, benchmark, install.
#
#   make                 bin/sbxfs and bin/sbx
#   make check           install missing packages, build, run all tests
#   make check SANITIZE=1  the same under AddressSanitizer + UBSan
#   make stress         the long proofs: fsrand seeds, crashes, concurrent I/O
#   make fuzz            libFuzzer targets, FUZZ_SECONDS each (clang)
#   make bench           view vs native benchmarks (see docs/performance.md)
#   make demo            the README's tour: mount a demo view, use it, unmount
#   make format          apply the style (.clang-format) to every .c and .h
#   make format-check    fail on a file the style would change (CI runs it)
#   make install         PREFIX=/usr/local DESTDIR=
#   make clean

VERSION    := 0.1.0
PREFIX     ?= /usr/local
DESTDIR    ?=
# mount(8) looks for helpers in /sbin only: install with PREFIX=/usr (on
# Debian /usr/sbin is /sbin) or MOUNT_HELPER_DIR=/sbin for mount -t fuse.sbxfs.
MOUNT_HELPER_DIR ?= $(PREFIX)/sbin
CC         ?= cc
PKG_CONFIG ?= pkg-config

ifeq ($(SANITIZE),1)
VARIANT    := asan
SANFLAGS   := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SANDEFS    := -DSBX_ABORT_ON_BAD_CLOSE -DSBX_LOCK_CHECKS
BIN        := build/asan/bin
else
VARIANT    := release
SANFLAGS   :=
SANDEFS    :=
BIN        := bin
endif
OBJ        := build/$(VARIANT)

FUSE_CFLAGS := $(shell $(PKG_CONFIG) --cflags fuse3 2>/dev/null)
FUSE_LIBS   := $(shell $(PKG_CONFIG) --libs fuse3 2>/dev/null)
CHECK_LIBS  := $(shell $(PKG_CONFIG) --libs check 2>/dev/null)
# libpq is loaded when a PostgreSQL store is opened (store/libpq.h): only
# its header at build time.
STORE_LIBS  := $(shell $(PKG_CONFIG) --libs sqlite3 2>/dev/null)
PQ_CFLAGS   := $(shell $(PKG_CONFIG) --cflags libpq 2>/dev/null)
CRYPTO_LIBS := $(shell $(PKG_CONFIG) --libs libcrypto 2>/dev/null)
JSON_LIBS   := $(shell $(PKG_CONFIG) --libs jansson 2>/dev/null)
INIH_LIBS   := $(shell $(PKG_CONFIG) --libs inih 2>/dev/null)
SECCOMP_LIBS := $(shell $(PKG_CONFIG) --libs libseccomp 2>/dev/null)
PCRE_CFLAGS := $(shell $(PKG_CONFIG) --cflags libpcre2-8 2>/dev/null)
PCRE_LIBS   := $(shell $(PKG_CONFIG) --libs libpcre2-8 2>/dev/null)
# sbx serve's HTTP server (http/server.c).
MHD_CFLAGS  := $(shell $(PKG_CONFIG) --cflags libmicrohttpd 2>/dev/null)
MHD_LIBS    := $(shell $(PKG_CONFIG) --libs libmicrohttpd 2>/dev/null)

CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 \
           -DSBX_VERSION='"$(VERSION)"' -I. $(FUSE_CFLAGS) $(PQ_CFLAGS) $(PCRE_CFLAGS) $(MHD_CFLAGS) $(SANFLAGS) $(SANDEFS) -MMD -MP
# Every close() of ours is checked for double closes (common/fdcheck.c).
LDFLAGS += $(SANFLAGS) -Wl,--wrap=close

COMMON_SRC := common/clock.c common/fdcheck.c common/lockcheck.c common/log.c common/quote.c common/ids.c common/home.c common/proc.c common/spawn.c common/units.c common/walk.c common/fileops.c common/viewreg.c common/mounts.c common/utf8.c common/config.c common/base64.c \
              common/error.c common/progress.c
STORE_SRC  := store/store.c store/schema.c store/marks.c store/audit.c store/snapshot_rows.c store/blobs.c store/runs.c store/sandboxes.c store/origins.c store/journal.c store/where.c store/check.c store/backup.c store/lease.c store/db.c store/db_sqlite.c store/db_pg.c store/libpq.c store/writer.c store/snapshot.c store/secrets.c store/diff.c \
              store/summary.c store/lineage.c store/receipt.c store/follow.c store/compact.c
# The run engine (docs/architecture.md, "Layers"): runs' life, the views
# told, the documents, the journal read back for a run.
RUN_SRC    := run/overlay_review.c run/overlay_apply.c run/lookup.c run/runlog.c run/views.c run/scan.c run/lifecycle.c run/retain.c \
              run/own.c run/documents.c run/page.c run/windows.c run/undo.c \
              run/restore.c run/undo_plan.c run/undo_conflicts.c run/undo_log.c run/undo_names.c run/undo_journal.c run/undo_copy.c run/kept.c run/refusal.c \
              run/project_run.c run/project_undo.c
EXEC_SRC   := exec/env.c exec/output.c exec/runner.c exec/sandbox.c \
              exec/provider.c exec/session.c exec/request.c exec/identity.c exec/launch.c \
              exec/filter.c exec/cgroup.c exec/start.c exec/hostpath.c exec/guard.c \
              exec/watch.c exec/launcher.c exec/spawner.c
# sbx serve's HTTP server, below the services it serves (mcp/, aio/).
HTTP_SRC   := http/server.c
# The reference's sandbox and provisioner APIs (docs/aio.md): services of
# sbx serve, clients of the broker's.
AIO_SRC    := aio/aio.c aio/reply.c aio/sandboxes.c aio/deploy.c aio/provision.c aio/context.c \
              aio/shell.c aio/file.c
# The MCP server (docs/mcp.md): a client of the broker's.
MCP_SRC    := mcp/jsonrpc.c mcp/session.c mcp/tools.c mcp/stdio_transport.c mcp/http_transport.c
# The file tools (docs/tools.md): below exec/, mcp/ and cli/, above common/.
TOOL_SRC   := tool/tool.c tool/specs.c tool/args.c tool/as.c tool/path.c tool/beneath.c \
              tool/target.c tool/message.c tool/text.c tool/lines.c tool/read.c tool/write.c \
              tool/list.c tool/ignore.c tool/match.c tool/walk.c tool/search.c tool/glob.c \
              tool/grep.c tool/grepper.c tool/fs_specs.c tool/fs_path.c tool/fs_read.c tool/fs_write.c \
              tool/aio.c tool/aio_specs.c tool/aio_file.c tool/aio_list.c tool/aio_grep.c
# The broker itself (broker_int.h): only sbx runs it; the tests reach it
# through bin/sbx.
BROKER_SRC := exec/broker.c exec/transport.c exec/broker_ops.c exec/client.c exec/fdpass.c
FS_SRC     := fs/names.c fs/confine.c fs/inode.c fs/skills.c fs/view.c fs/ops.c fs/ops_change.c \
              fs/ops_entry.c fs/ops_file.c fs/ops_dir.c fs/ops_xattr.c fs/watch.c fs/channel.c \
              fs/overlay.c fs/ops_overlay.c \
              fs/gate.c fs/gate_request.c fs/stage.c fs/journal.c fs/runmarks.c fs/quota.c \
              fs/owner.c
# sbx: every file of cli/ (the table of commands in cli/sbx.c, the commands).
CLI_SRC    := $(wildcard cli/*.c)
TEST_SRC   := tests/check_main.c tests/harness.c tests/cmd.c \
              $(wildcard tests/unit/*.c) $(wildcard tests/integ/*.c)

obj = $(patsubst %.c,$(OBJ)/%.o,$(1))
# The store is a static library: a program links the parts it calls (the
# view daemon no summaries, diffs or receipts). Last on a link line. So
# is the run engine, before it: the tests link what they call of it.
STORE_LIB  := $(OBJ)/store/libsbxstore.a
RUN_LIB    := $(OBJ)/run/libsbxrun.a

all: $(BIN)/sbxfs $(BIN)/sbx $(BIN)/sbx-launcher

# A library pkg-config cannot find stops the build with its name, not
# with a compiler error about a missing header.
BUILD_LIBS := fuse3 sqlite3 libpq libcrypto jansson inih libseccomp libpcre2-8 libmicrohttpd
define need_libs
	@command -v $(PKG_CONFIG) >/dev/null || { echo "make: $(PKG_CONFIG) is not installed; on Debian, make deps (or make check) installs what the build needs" >&2; exit 1; }
	@missing=; for l in $(1); do $(PKG_CONFIG) --exists $$l || missing="$$missing $$l"; done; \
	if [ -n "$$missing" ]; then echo "make: pkg-config cannot find:$$missing; on Debian, make deps (or make check) installs them" >&2; exit 1; fi
endef

libs:
	$(call need_libs,$(BUILD_LIBS))

test-libs:
	$(call need_libs,$(BUILD_LIBS) check)

$(OBJ)/%.o: %.c | libs
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(OBJ)/tests/%.o: tests/%.c | test-libs
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(STORE_LIB): $(call obj,$(STORE_SRC))
	rm -f $@
	$(AR) rcs $@ $^

$(RUN_LIB): $(call obj,$(RUN_SRC))
	rm -f $@
	$(AR) rcs $@ $^

$(BIN)/sbxfs: $(call obj,fs/main.c $(FS_SRC) $(COMMON_SRC)) $(STORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(FUSE_LIBS) $(STORE_LIBS) $(CRYPTO_LIBS) $(JSON_LIBS) $(INIH_LIBS) -lpthread

$(BIN)/sbx: $(call obj,$(CLI_SRC) $(MCP_SRC) $(AIO_SRC) $(HTTP_SRC) $(BROKER_SRC) $(EXEC_SRC) $(TOOL_SRC) $(COMMON_SRC)) $(RUN_LIB) $(STORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(STORE_LIBS) $(CRYPTO_LIBS) $(JSON_LIBS) $(INIH_LIBS) $(SECCOMP_LIBS) $(PCRE_LIBS) $(MHD_LIBS) -lpthread

# The one-off launcher runs inside sandboxes (exec/launcher.h): libc
# alone, and never a sanitizer's runtime, which the seccomp filter and
# the namespace's init duties do not suit.
$(BIN)/sbx-launcher: exec/launcher_main.c exec/launcher_proto.h
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -I. -o $@ exec/launcher_main.c

$(OBJ)/tests/check_sbxfs: $(call obj,$(TEST_SRC) $(FS_SRC) $(COMMON_SRC) $(EXEC_SRC) $(TOOL_SRC)) $(RUN_LIB) $(STORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(FUSE_LIBS) $(STORE_LIBS) $(CRYPTO_LIBS) $(INIH_LIBS) $(JSON_LIBS) $(SECCOMP_LIBS) $(PCRE_LIBS) -lpthread

# libFuzzer targets (clang): each runs FUZZ_SECONDS on a copy of its
# checked-in corpus; a crash leaves build/fuzz/crash-* and fails.
FUZZ_SECONDS ?= 20
FUZZ_TARGETS := names paths classify config request
FUZZ_CFLAGS  := -g -O1 -std=gnu11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
                -I. $(FUZZ_CFLAGS_EXTRA) $(FUSE_CFLAGS)
FUZZ_SRC_names    := common/ids.c common/log.c common/quote.c fs/names.c fs/confine.c
FUZZ_SRC_paths    := store/snapshot.c store/secrets.c exec/hostpath.c exec/guard.c
FUZZ_SRC_classify := store/snapshot.c store/secrets.c exec/output.c exec/env.c common/utf8.c
FUZZ_SRC_config   := common/config.c common/ids.c
FUZZ_SRC_request  := exec/request.c exec/env.c common/ids.c common/clock.c

build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(wildcard */*.h common/*.c fs/*.c store/*.c run/*.c exec/*.c)
	@mkdir -p build/fuzz
	clang $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_SRC_$*) $(CRYPTO_LIBS) $(INIH_LIBS) $(JSON_LIBS)

fuzz: fuzz-deps $(addprefix build/fuzz/fuzz_,$(FUZZ_TARGETS))
	@for t in $(FUZZ_TARGETS); do \
		rm -rf build/fuzz/corpus-$$t && cp -r tests/fuzz/corpus/$$t build/fuzz/corpus-$$t && \
		echo "fuzz $$t: $(FUZZ_SECONDS) s" && \
		build/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=0 \
			-artifact_prefix=build/fuzz/crash-$$t- build/fuzz/corpus-$$t \
			2>build/fuzz/$$t.log || { tail -30 build/fuzz/$$t.log; exit 1; }; \
		grep -h "^#.*DONE" build/fuzz/$$t.log | tail -1; \
	done

deps:
	@mount-helpers/install-deps

test-deps:
	@mount-helpers/install-deps --tests

fuzz-deps:
	@mount-helpers/install-deps --fuzz

bench-deps:
	@mount-helpers/install-deps --bench

# Targets that install packages build in a second make: the pkg-config
# flags above were computed before the packages were there.
# No include goes up a layer (docs/architecture.md, "Layers").
layers:
	@tests/tools/layers

# Sanitized code runs two to three times slower, and each test's
# timeout (Check's, tests/run-tests) stretches with it. Of the suites
# run again on PostgreSQL, the sanitized run takes those whose daemons
# use it in ways of its own (leases, notifications); the store's code on
# both engines is unit_store's (docs/reliability.md).
ifeq ($(SANITIZE),1)
CHECK_ENV := CK_TIMEOUT_MULTIPLIER=3 SBX_TEST_PG_SUITES="view_hosts view_watch"
endif

check: test-deps layers
	@$(MAKE) --no-print-directory all $(OBJ)/tests/check_sbxfs
	@$(CHECK_ENV) SBX_BIN=$(CURDIR)/$(BIN) tests/run-tests $(CURDIR)/$(OBJ)/tests/check_sbxfs

stress: test-deps
	@$(MAKE) --no-print-directory all
	@SBX_BIN=$(CURDIR)/$(BIN) tests/stress

bench: bench-deps
	@$(MAKE) --no-print-directory all
	@SBX_BIN=$(CURDIR)/$(BIN) bench/run-bench
	@SBX_BIN=$(CURDIR)/$(BIN) bench/anchor-bench
	@SBX_BIN=$(CURDIR)/$(BIN) bench/snapshot-bench
	@SBX_BIN=$(CURDIR)/$(BIN) bench/journal-bench
	@SBX_BIN=$(CURDIR)/$(BIN) bench/watch-bench
	@SBX_BIN=$(CURDIR)/$(BIN) bench/broker-bench
	@SBX_BIN=$(CURDIR)/$(BIN) bench/try-bench

# The style is .clang-format's (clang-format 14, Debian 12's); CI checks
# it before the tests.
FORMAT_SRC = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find common fs store run tool cli exec tests bench -name '*.[ch]')

format: test-deps
	@clang-format -i $(FORMAT_SRC)

format-check: test-deps
	@clang-format --dry-run -Werror $(FORMAT_SRC) && echo "format-check: $(words $(FORMAT_SRC)) files in style"

demo: deps
	@$(MAKE) --no-print-directory all
	@SBX_BIN=$(CURDIR)/$(BIN) mount-helpers/demo

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MOUNT_HELPER_DIR) \
		$(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man8 \
		$(DESTDIR)$(PREFIX)/lib/systemd/system
	install -m 755 $(BIN)/sbxfs $(BIN)/sbx $(BIN)/sbx-launcher $(DESTDIR)$(PREFIX)/bin/
	sed 's|^sbxfs=\$${SBXFS:-}$$|sbxfs=$${SBXFS:-$(PREFIX)/bin/sbxfs}|' mount-helpers/mount.sbxfs \
		> $(DESTDIR)$(MOUNT_HELPER_DIR)/mount.sbxfs
	chmod 755 $(DESTDIR)$(MOUNT_HELPER_DIR)/mount.sbxfs
	ln -sf mount.sbxfs $(DESTDIR)$(MOUNT_HELPER_DIR)/mount.fuse.sbxfs
	sed 's|@PREFIX@|$(PREFIX)|g' mount-helpers/sbxfs@.service \
		> $(DESTDIR)$(PREFIX)/lib/systemd/system/sbxfs@.service
	install -m 644 docs/man/sbx.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 docs/man/sbxfs.8 $(DESTDIR)$(PREFIX)/share/man/man8/

clean:
	rm -rf build bin

.PHONY: all deps test-deps fuzz-deps bench-deps libs test-libs check stress bench demo format format-check layers install clean fuzz

-include $(shell find build -name '*.d' 2>/dev/null)
