# tdslc: a compiler for the .tdsl tensor language.
#   make            build build/tdslc and the runtime
#   make check      install dependencies if missing, build, run every test (plain and
#                   under ASan+UBSan); ends with "N passed, M failed"
#   make check-gpu  the cuda backend on an NVIDIA GPU against the CPU backend
#   make bench-gpu  the cuda backend against PyTorch on the same GPU (bench/gpu-run.sh:
#                   both on a lent GPU machine)
#   make demo       build and train the half-moons sample
#   make install PREFIX=/usr/local DESTDIR=
CC      ?= gcc
# The -include of dependency files below would otherwise make the first .o the default goal.
.DEFAULT_GOAL := all
PREFIX  ?= /usr/local
# The Python package goes where Debian's python3 looks under PREFIX (for /usr/local:
# on its default path; elsewhere add PYDIR to PYTHONPATH). `pip install ./python` also works.
PYTHON  ?= /usr/bin/python3
PYDIR   ?= $(PREFIX)/lib/$(shell $(PYTHON) -c 'import sys; print("python%d.%d" % sys.version_info[:2])' 2>/dev/null || echo python3)/dist-packages
B       := build
CFLAGS  ?= -O2 -g
WFLAGS  := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter
CPPFLAGS_ALL := -Isrc -I$(B)/gen -Iruntime -Ibackends/gccjit
LDLIBS  := -lgccjit -ldl -lm -lcjson -lpthread
# The CUDA backend compiles kernels with NVRTC when the toolkit is there; without it,
# tdslc still builds and --backend=cuda reports that it is unavailable.
CUDA_HOME ?= /usr/local/cuda
ifneq ($(wildcard $(CUDA_HOME)/include/nvrtc.h),)
CPPFLAGS_ALL += -DTDSL_HAVE_NVRTC -isystem $(CUDA_HOME)/include -Ibackends/cuda
LDLIBS  += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lnvrtc
else
CPPFLAGS_ALL += -Ibackends/cuda
endif

SRC      := $(sort $(wildcard src/*.c) $(wildcard backends/gccjit/*.c) $(wildcard backends/cuda/*.c) $(wildcard runtime/*.c))
RE_SRC   := $(wildcard grammar/*.re)
Y_SRC    := $(wildcard grammar/*.y)
GEN_C    := $(patsubst grammar/%.re,$(B)/gen/%.c,$(RE_SRC)) $(patsubst grammar/%.y,$(B)/gen/%.tab.c,$(Y_SRC))
GEN_H    := $(patsubst grammar/%.y,$(B)/gen/%.tab.h,$(Y_SRC))
RT_SRC   := $(wildcard runtime/*.c)
UNIT_SRC := $(wildcard testsuite/unit/test_*.c)

# One object tree per flavour: plain and sanitized.
define flavour
$(1)_OBJ := $$(patsubst %.c,$(B)/$(1)/%.o,$$(SRC)) $$(patsubst $(B)/gen/%.c,$(B)/$(1)/gen/%.o,$$(GEN_C))
$(1)_LIB := $$(filter-out $(B)/$(1)/src/main.o,$$($(1)_OBJ))
$(B)/$(1)/%.o: %.c $$(GEN_H) | $(B)/gen
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CPPFLAGS_ALL) $$(WFLAGS) $(2) -MMD -MP -c $$< -o $$@
$(B)/$(1)/gen/%.o: $(B)/gen/%.c $$(GEN_H)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CPPFLAGS_ALL) $$(WFLAGS) -Wno-unused-function -Wno-sign-compare $(2) -MMD -MP -c $$< -o $$@
-include $$(patsubst %.o,%.d,$$($(1)_OBJ))
endef

$(eval $(call flavour,rel,$(CFLAGS)))
SANFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
$(eval $(call flavour,asan,$$(SANFLAGS)))

all: $(B)/tdslc $(B)/libtdslrt.so $(B)/libtdslrt.a

$(B)/gen:
	@mkdir -p $@

$(B)/gen/%.c: grammar/%.re $(GEN_H) | $(B)/gen
	re2c -W --no-generation-date -o $@ $<

$(B)/gen/%.tab.c $(B)/gen/%.tab.h: grammar/%.y | $(B)/gen
	bison -Wall -Werror --defines=$(B)/gen/$*.tab.h -o $(B)/gen/$*.tab.c $<

$(B)/tdslc: $(rel_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(B)/asan/tdslc: $(asan_OBJ)
	$(CC) -fsanitize=address,undefined -o $@ $^ $(LDLIBS)

# The runtime: what compiled models and host programs link. It never includes compiler headers.
RT_OBJ := $(patsubst runtime/%.c,$(B)/rt/%.o,$(RT_SRC))
$(B)/rt/%.o: runtime/%.c $(wildcard runtime/*.h)
	@mkdir -p $(dir $@)
	$(CC) -Iruntime $(WFLAGS) $(CFLAGS) -fPIC -c $< -o $@
# Checkpoints (runtime/checkpoint.c) parse their JSON header with cJSON; a static host
# that never calls tdsl_save/tdsl_load does not pull that object in.
$(B)/libtdslrt.so: $(RT_OBJ)
	$(CC) -shared -o $@ $^ -ldl -lm -lcjson
$(B)/libtdslrt.a: $(RT_OBJ)
	ar rcs $@ $^

# C unit tests link the compiler's objects (without main).
UNIT_BIN := $(patsubst testsuite/unit/%.c,$(B)/unit/%,$(UNIT_SRC))
UNIT_ASAN_BIN := $(patsubst testsuite/unit/%.c,$(B)/unit-asan/%,$(UNIT_SRC))
$(B)/unit/%: testsuite/unit/%.c $(rel_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(WFLAGS) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(B)/unit-asan/%: testsuite/unit/%.c $(asan_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(WFLAGS) -O1 -g -fsanitize=address,undefined -o $@ $^ $(LDLIBS)

# Fuzzing the front end (libFuzzer, clang): `make fuzz` runs for FUZZ_TIME seconds;
# `make check` runs a short smoke over the seed corpus (testsuite/run-all.sh).
FUZZ_CC   ?= clang
FUZZ_TIME ?= 600
FUZZ_SPEC := $(B)/gen/spec.c $(B)/gen/spec.tab.c src/spec_print.c
FUZZ_SRC  := testsuite/fuzz/fuzz_parse.c src/arena.c src/diag.c src/ast_print.c src/ast_ndlit.c \
             $(B)/gen/lexer.c $(B)/gen/parser.tab.c $(FUZZ_SPEC)
$(B)/fuzz/fuzz_parse: $(FUZZ_SRC) $(GEN_H) $(wildcard src/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS_ALL) -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -o $@ $(FUZZ_SRC)
# `make fuzz` runs every fuzzer for FUZZ_TIME seconds each: the front end's and the
# runtime's libFuzzer harnesses and the whole-pipeline fuzzer (testsuite/fuzz/pipeline.py: generated and
# mutated programs through every stage of the ASan+UBSan compiler; FUZZ_SEED to repeat).
fuzz: fuzz-parse fuzz-meta fuzz-load fuzz-pipeline
# The runtime's trust boundaries, each a libFuzzer harness over the runtime alone: its
# metadata parser (model files may be hostile) and its file readers (checkpoints,
# tdsl_load; arrays, tdsl_load_file).
RT_FUZZ := $(B)/fuzz/fuzz_meta $(B)/fuzz/fuzz_load
$(RT_FUZZ): $(B)/fuzz/%: testsuite/fuzz/%.c $(RT_SRC) runtime/tdsl.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -Iruntime -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -o $@ $< $(RT_SRC) -ldl -lm -lcjson
fuzz-meta: $(B)/fuzz/fuzz_meta
	@mkdir -p $(B)/fuzz/meta_new
	$(B)/fuzz/fuzz_meta -max_total_time=$(FUZZ_TIME) -timeout=10 -max_len=4096 -artifact_prefix=$(B)/fuzz/ \
	  $(B)/fuzz/meta_new testsuite/fuzz/meta_corpus
fuzz-load: $(B)/fuzz/fuzz_load
	@mkdir -p $(B)/fuzz/load_new
	$(B)/fuzz/fuzz_load -max_total_time=$(FUZZ_TIME) -timeout=10 -max_len=4096 -dict=testsuite/fuzz/load.dict \
	  -artifact_prefix=$(B)/fuzz/ $(B)/fuzz/load_new testsuite/fuzz/load_corpus
fuzz-pipeline: $(B)/asan/tdslc
	/usr/bin/python3 testsuite/fuzz/pipeline.py --tdslc $(B)/asan/tdslc --time $(FUZZ_TIME) $(if $(FUZZ_SEED),--seed $(FUZZ_SEED))
fuzz-parse: $(B)/fuzz/fuzz_parse
	@mkdir -p $(B)/fuzz/new
	$(B)/fuzz/fuzz_parse -max_total_time=$(FUZZ_TIME) -timeout=10 -max_len=8192 -dict=testsuite/fuzz/tdsl.dict \
	  -artifact_prefix=$(B)/fuzz/ $(B)/fuzz/new testsuite/fuzz/corpus

# The runtime under threads (testsuite/runtime/stress.c): one model used by several
# threads at once through every kind of entry point, closed while in use, forked after
# use, opened twice, run through its --emit-header routines while the thread count
# changes; under ThreadSanitizer (the model as its --emit-c rendering, instrumented too)
# and ASan+UBSan. About 5 s; testsuite/run-all.sh runs it.
RTS := $(B)/rt-stress
RTS_BIN := $(RTS)/stress.so $(RTS)/stress-tsan.so $(RTS)/host-tsan $(RTS)/host-asan $(RTS)/host-plain
$(RTS)/stress.so: testsuite/runtime/stress.tdsl $(B)/tdslc
	@mkdir -p $(RTS)
	$(B)/tdslc $< -o $@
# the same model linked into the hosts, with its header (the direct part)
$(RTS)/stress.o $(RTS)/stress.h &: testsuite/runtime/stress.tdsl $(B)/tdslc
	@mkdir -p $(RTS)
	$(B)/tdslc -c --emit-header=$(RTS)/stress.h -o $(RTS)/stress.o $<
$(RTS)/stress-tsan.so: testsuite/runtime/stress.tdsl $(B)/tdslc
	@mkdir -p $(RTS)
	$(B)/tdslc --emit-c $< > $(RTS)/stress.c
	$(CC) -std=c11 -O1 -g -fsanitize=thread -shared -fPIC -w -o $@ $(RTS)/stress.c -lm
$(RTS)/host-tsan: testsuite/runtime/stress.c $(RTS)/stress.o $(RT_SRC) $(wildcard runtime/*.h)
	$(CC) -Iruntime -I$(RTS) $(WFLAGS) -O1 -g -fsanitize=thread -o $@ $< $(RTS)/stress.o $(RT_SRC) -ldl -lm -lcjson -lpthread
$(RTS)/host-asan: testsuite/runtime/stress.c $(RTS)/stress.o $(RT_SRC) $(wildcard runtime/*.h)
	$(CC) -Iruntime -I$(RTS) $(WFLAGS) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -o $@ $< \
	  $(RTS)/stress.o $(RT_SRC) -ldl -lm -lcjson -lpthread
$(RTS)/host-plain: testsuite/runtime/stress.c $(RTS)/stress.o $(RT_SRC) $(wildcard runtime/*.h)
	$(CC) -Iruntime -I$(RTS) $(WFLAGS) -O1 -g -o $@ $< $(RTS)/stress.o $(RT_SRC) -ldl -lm -lcjson -lpthread
check-runtime-threads: $(RTS_BIN)
	sh testsuite/runtime/threads.sh $(RTS)

deps: $(B)/.deps-ok
$(B)/.deps-ok: scripts/deps.sh
	@mkdir -p $(B)
	sh scripts/deps.sh
	@touch $@

check: deps check-layers
	$(MAKE) all $(B)/asan/tdslc $(UNIT_BIN) $(UNIT_ASAN_BIN) $(B)/fuzz/fuzz_parse $(B)/fuzz/fuzz_meta $(B)/fuzz/fuzz_load \
	  $(RTS_BIN)
	sh testsuite/run-all.sh

# Every #include "..." stays within the layer rules of HACKING.md ("Layers").
check-layers:
	python3 scripts/check-layers.py .

# On a machine with an NVIDIA GPU: every conformance values case and the moons sample on
# both backends (says so and succeeds without a GPU).
check-gpu: all $(B)/unit/test_cuda_emulate
	B=$(B) sh testsuite/cuda/check-gpu.sh

conformance: all
	../shared/conformance/run --tdslc $(B)/tdslc

# install-files copies what is built and builds nothing: the lit tests of the install
# (lit/backend/install*.test) run it while other tests run build/tdslc. Through `install`
# they rebuilt the tree whenever a source was newer than the build (a merge during `make
# check`): two tests' makes then raced on the same objects, and build/tdslc was missing
# or half-linked under the tests running it, failing whichever ran then (run-print.tdsl).
install: all
	@$(MAKE) --no-print-directory install-files

install-files:
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(PREFIX)/share/tdsl $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/man/man7 $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(B)/tdslc $(DESTDIR)$(PREFIX)/bin/tdslc
	install -m 644 $(B)/libtdslrt.so $(B)/libtdslrt.a $(DESTDIR)$(PREFIX)/lib/
	install -m 644 runtime/tdsl.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 lib/*.tdsl $(DESTDIR)$(PREFIX)/share/tdsl/
	install -m 644 man/tdslc.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 man/tdsl.7 $(DESTDIR)$(PREFIX)/share/man/man7/
	sed 's|@PREFIX@|$(PREFIX)|g' runtime/tdsl.mk.in > $(DESTDIR)$(PREFIX)/share/tdsl/tdsl.mk
	sed 's|@PREFIX@|$(PREFIX)|g' runtime/tdsl.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/tdsl.pc
	install -d $(DESTDIR)$(PYDIR)/tdsl
	install -m 644 python/tdsl/*.py $(DESTDIR)$(PYDIR)/tdsl/
	printf 'TDSLC = "%s"\nLIBRARY = "%s"\n' $(PREFIX)/bin/tdslc $(PREFIX)/lib/libtdslrt.so > $(DESTDIR)$(PYDIR)/tdsl/_config.py

# Benchmarks (never part of check). bench/cpu.py: scheduled code vs OpenBLAS, torch,
# memcpy (1 thread), interleaved same-run ratios, 7 rounds (bench/RESULTS-cpu.md).
bench-cpu: all
	/usr/bin/python3 bench/cpu.py $(B)/tdslc 7
# The naive loop nests (no schedule) vs plain C -O3 vs numpy.
$(B)/bench/bench: bench/bench.c $(rel_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) -Itestsuite/unit $(WFLAGS) -O3 -march=native -o $@ $^ $(LDLIBS)
bench-loops: $(B)/bench/bench
	/usr/bin/python3 bench/run.py $(B)/bench/bench

# The demo: dependencies, the compiler, a local install (build/prefix), then the moons
# and micrograd samples built from their two-line Makefiles against that install.
DEMO_PREFIX := $(CURDIR)/$(B)/prefix
demo: deps
	$(MAKE) all
	$(MAKE) install PREFIX=$(DEMO_PREFIX)
	rm -rf $(B)/demo && mkdir -p $(B)/demo && cp -r samples/moons samples/micrograd $(B)/demo/
	PKG_CONFIG_PATH=$(DEMO_PREFIX)/lib/pkgconfig $(MAKE) -C $(B)/demo/micrograd
	cd $(B)/demo/micrograd && ./micrograd
	PKG_CONFIG_PATH=$(DEMO_PREFIX)/lib/pkgconfig $(MAKE) -C $(B)/demo/moons
	cd $(B)/demo/moons && ./moons

# tdslc --backend=cuda vs PyTorch on the same GPU (bench/gpu.sh; says so without a GPU).
bench-gpu: all
	sh bench/gpu.sh

# Training-step benchmarks: MLPs, tdslc vs PyTorch eager vs hand-written C (bench/train.sh);
# a transformer block, tdslc vs PyTorch eager (bench/transformer.py).
bench-train: all
	sh bench/train.sh
	/usr/bin/python3 bench/transformer.py $(B)/tdslc 7
# Compile-time table: moons and deep MLPs (bench/compile_time.sh, bench/gen_mlp.py).
bench-compile: all
	sh bench/compile_time.sh
# `make bench`: every CPU benchmark above (bench-gpu needs a GPU machine).
bench: bench-cpu bench-train bench-compile

clean:
	rm -rf $(B)

.PHONY: all install-files check check-layers check-gpu deps conformance install clean demo bench bench-cpu bench-loops bench-train bench-gpu bench-compile fuzz fuzz-parse fuzz-meta fuzz-load fuzz-pipeline check-runtime-threads
.SECONDARY:
