# tuner: build, test, install.  `make`, `make test`, `make SANITIZE=address,undefined test`,
# `make STATIC_DEPS=1`, `make install PREFIX=... DESTDIR=...`, `make style`, `make fuzz` (the
# expression parser), `make fuzz-import` (the importer), `make fuzz-config` (the YAML loaders),
# `make test-gpu`, `make man` (after editing docs/tuner.1.scd).

CC       ?= cc
CUDA     ?= /usr/local/cuda
PREFIX   ?= /usr/local
DESTDIR  ?=
CFLAGS   ?= -g -O2
SANITIZE ?=
STATIC_DEPS ?=

# libpq's header only: the library is loaded with dlopen when a postgresql:// database is used.
PQ_CFLAGS ?= $(shell pkg-config --cflags libpq 2>/dev/null || echo -I/usr/include/postgresql)

comma := ,
BUILD ?= build$(if $(SANITIZE),-$(subst $(comma),-,$(SANITIZE)))$(if $(STATIC_DEPS),-static)

BASE_CFLAGS = -std=c11 -D_DEFAULT_SOURCE -D_GNU_SOURCE -Wall -Wextra -pedantic \
	      -Wshadow -Wstrict-prototypes -Wno-unused-parameter \
	      -Iinclude -I$(CUDA)/include $(PQ_CFLAGS) -MMD -MP \
	      -DTUNER_CUDA_HOME='"$(CUDA)"' -DTUNER_DATADIR='"$(PREFIX)/share/tuner"'
ifneq ($(SANITIZE),)
BASE_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_LDFLAGS  = -fsanitize=$(SANITIZE)
endif

ifeq ($(STATIC_DEPS),)
DEP_LIBS = -lyaml -lsqlite3 -ljansson -lz
else
DEP_LIBS = -Wl,-Bstatic -lyaml -lsqlite3 -ljansson -lz -Wl,-Bdynamic
endif
LIBS = $(DEP_LIBS) -L$(CUDA)/lib64 -lnvrtc -Wl,-rpath,$(CUDA)/lib64 -ldl -lpthread -lm

SRC      = $(wildcard tuner/*.c)
LIB_SRC  = $(filter-out tuner/main.c,$(SRC))
LIB_OBJ  = $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/support-src.o
MAIN_OBJ = $(BUILD)/obj/tuner/main.o
UNIT_SRC = $(wildcard tests/unit/test_*.c)
UNIT_BIN = $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
GPU_SRC  = $(wildcard tests/gpu/test_*.c)
GPU_BIN  = $(GPU_SRC:tests/gpu/%.c=$(BUILD)/tests/gpu-%)

# Tests build with -Werror.
TEST_CFLAGS = $(CFLAGS) $(BASE_CFLAGS) -Werror

.PHONY: test-tsan all test check test-gpu install uninstall man style style-check lint fuzz fuzz-import \
	fuzz-config clean deps lint-cppcheck
all: $(BUILD)/tuner

$(BUILD)/tuner: $(MAIN_OBJ) $(BUILD)/libtuner.a
	$(CC) $(CFLAGS) $(SAN_LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/libtuner.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# The worker's support kernels travel inside the binary.
$(BUILD)/gen/support-src.c: kernels/support/tuner_support.cu scripts/embed-text
	@mkdir -p $(dir $@)
	scripts/embed-text tuner_support_source $< > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -c -o $@ $<

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) $(if $(TESTING),-Werror) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libtuner.a
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -Itests -o $@ $< $(BUILD)/libtuner.a $(LIBS) -lcmocka $(SAN_LDFLAGS)

$(BUILD)/tests/gpu-%: tests/gpu/%.c $(BUILD)/libtuner.a
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -Itests -o $@ $< $(BUILD)/libtuner.a $(LIBS) $(SAN_LDFLAGS)

# The tests compile the whole tree with -Werror.
test check:
	$(MAKE) TESTING=1 $(BUILD)/tuner $(UNIT_BIN)
	BUILD=$(BUILD) tests/run.sh

# The threaded paths (the GPU stage, the compile pool, serve's lanes) under ThreadSanitizer: the
# CLI tests that drive them with the fake worker. The unit tests that crash compile children on
# purpose are left out: TSan does not follow a forked child's deliberate fault.
TSAN_TESTS = t0050 t0052 t0060 t0065 t0110 t0112
test-tsan:
	$(MAKE) SANITIZE=thread TESTING=1 build-thread/tuner
	TESTS="$(TSAN_TESTS)" BUILD=build-thread TSAN_OPTIONS="halt_on_error=1 exitcode=66" tests/run.sh

test-gpu:
	$(MAKE) TESTING=1 $(BUILD)/tuner $(GPU_BIN)
	BUILD=$(BUILD) tests/gpu/run.sh

# The binary finds its data as ../share/tuner beside itself, so the tree installed here works
# wherever it is copied (and whatever PREFIX the objects were built with).
MANDIR        = $(PREFIX)/share/man/man1
COMPLETIONDIR = $(PREFIX)/share/bash-completion/completions
install: $(BUILD)/tuner
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/tuner $(DESTDIR)$(MANDIR) \
		$(DESTDIR)$(COMPLETIONDIR)
	install -m 755 $(BUILD)/tuner $(DESTDIR)$(PREFIX)/bin/tuner
	cp -R kernels configs db $(DESTDIR)$(PREFIX)/share/tuner/
	install -m 644 docs/tuner.1 $(DESTDIR)$(MANDIR)/tuner.1
	install -m 644 contrib/completion/tuner.bash $(DESTDIR)$(COMPLETIONDIR)/tuner

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/tuner $(DESTDIR)$(MANDIR)/tuner.1 $(DESTDIR)$(COMPLETIONDIR)/tuner
	rm -rf $(DESTDIR)$(PREFIX)/share/tuner

# The man page is committed beside its source (scdoc is not needed to install); dated by the
# source's last commit, so regenerating an unchanged source changes nothing.
man:
	epoch=$$(git log -1 --format=%ct -- docs/tuner.1.scd 2>/dev/null); \
	SOURCE_DATE_EPOCH=$${epoch:-$$(date +%s)} scdoc <docs/tuner.1.scd >docs/tuner.1

STYLE_FILES = $(wildcard tuner/*.c include/tuner/*.h tests/unit/*.c tests/gpu/*.c fuzz/*.c)
style:
	clang-format -i $(STYLE_FILES)

style-check:
	clang-format --dry-run --Werror $(STYLE_FILES)

# cppcheck, and clang-tidy's static analyzer (the checks in .clang-tidy) over each source with the
# build's flags, one stamp per file so that make -j runs them side by side (minutes on one core:
# CI runs make -j2 lint). A stamp is redone when its source, a header of include/tuner,
# .clang-tidy or this file changes.
CLANG_TIDY  ?= clang-tidy
TIDY_FLAGS   = $(filter-out -MMD -MP,$(BASE_CFLAGS))
TIDY_STAMPS  = $(SRC:%.c=$(BUILD)/tidy/%.ok)
lint: lint-cppcheck $(TIDY_STAMPS)

lint-cppcheck:
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr \
		--suppress=missingIncludeSystem -Iinclude tuner

$(BUILD)/tidy/%.ok: %.c $(wildcard include/tuner/*.h) .clang-tidy Makefile
	@mkdir -p $(dir $@)
	$(CLANG_TIDY) --quiet $< -- $(TIDY_FLAGS)
	@touch $@

# Fuzz the expression parser with libFuzzer (clang); corpus in fuzz/corpus/expr.
FUZZ_TIME ?= 60
# New inputs go to $(BUILD)/fuzz-corpus (libFuzzer writes to its first directory); the committed
# seed corpus in fuzz/corpus/expr is only read. Crashes land in fuzz/findings/.
fuzz: $(BUILD)/fuzz-expr
	mkdir -p fuzz/findings $(BUILD)/fuzz-corpus
	$(BUILD)/fuzz-expr -max_total_time=$(FUZZ_TIME) -artifact_prefix=fuzz/findings/ \
		$(BUILD)/fuzz-corpus fuzz/corpus/expr

$(BUILD)/fuzz-expr: fuzz/expr_fuzz.c tuner/expr.c tuner/common.c
	@mkdir -p $(dir $@)
	clang -g -O1 -std=c11 -D_DEFAULT_SOURCE -Iinclude -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ $^

# Fuzz the importer (fuzz/import_fuzz.c: Python values, restrictions, whole T1, T4 and cache
# files); seed corpus in fuzz/corpus/import, new inputs in $(BUILD)/fuzz-corpus-import. An input
# that takes over 10 s is a hang: no file of a few KiB should.
FUZZ_IMPORT_SRC = tuner/import.c tuner/import-python.c tuner/expr.c tuner/common.c
fuzz-import: $(BUILD)/fuzz-import
	mkdir -p fuzz/findings $(BUILD)/fuzz-corpus-import
	$(BUILD)/fuzz-import -max_total_time=$(FUZZ_TIME) -timeout=10 \
		-artifact_prefix=fuzz/findings/import- $(BUILD)/fuzz-corpus-import fuzz/corpus/import

# What the importer uses and the fuzzer never reaches (the database, the config written) comes
# from libtuner.a uninstrumented: the archive gives only what the sources above leave undefined.
$(BUILD)/fuzz-import: fuzz/import_fuzz.c $(FUZZ_IMPORT_SRC) $(BUILD)/libtuner.a
	@mkdir -p $(dir $@)
	clang -g -O1 -std=c11 -D_DEFAULT_SOURCE -D_GNU_SOURCE -Iinclude -I$(CUDA)/include \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $@ \
		fuzz/import_fuzz.c $(FUZZ_IMPORT_SRC) $(BUILD)/libtuner.a $(LIBS)

# Fuzz the YAML loaders (fuzz/config_fuzz.c: a sidecar alone, a job over a fixed sidecar, a
# problem file under a fixed sidecar); seed corpus in fuzz/corpus/config, new inputs in
# $(BUILD)/fuzz-corpus-config. An input that takes over 10 s is a hang: the loaders refuse a file
# over 4 MiB, and the fuzzer's inputs are a few KiB. stdin is /dev/null, so that no read can wait.
FUZZ_CONFIG_SRC = tuner/config.c tuner/family.c tuner/yaml-src.c tuner/problem.c tuner/expr.c \
	tuner/space.c tuner/template.c tuner/arch.c tuner/common.c
fuzz-config: $(BUILD)/fuzz-config
	mkdir -p fuzz/findings $(BUILD)/fuzz-corpus-config
	$(BUILD)/fuzz-config -max_total_time=$(FUZZ_TIME) -timeout=10 \
		-artifact_prefix=fuzz/findings/config- $(BUILD)/fuzz-corpus-config \
		fuzz/corpus/config </dev/null

# The rest of the library (the search strategies' names, the compiler's version) comes from
# libtuner.a uninstrumented, as for fuzz-import.
$(BUILD)/fuzz-config: fuzz/config_fuzz.c $(FUZZ_CONFIG_SRC) $(BUILD)/libtuner.a
	@mkdir -p $(dir $@)
	clang -g -O1 -std=c11 -D_DEFAULT_SOURCE -D_GNU_SOURCE -Iinclude -I$(CUDA)/include \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $@ \
		fuzz/config_fuzz.c $(FUZZ_CONFIG_SRC) $(BUILD)/libtuner.a $(LIBS)

deps:
	scripts/install-deps

clean:
	rm -rf build build-*

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
