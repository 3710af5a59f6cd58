# zinc — one binary, C11, warnings are errors.
#   make            build ./zinc
#   make test       build and run every test (last line "N passed, N failed, N skipped")
#   make test-asan  the same under ASan+UBSan
#   make fuzz       build the libFuzzer targets (fuzz/fuzz_*.c; scripts/fuzz-smoke.sh runs them)
#   make tools      build the Vulkan kernel timing tools (tools/vk-bench)
#   make load       build the load tool (tools/load: build/zinc-load)
#   make deps       install build/test dependencies (Debian, root)

CC      ?= cc
GLSLC   ?= $(CURDIR)/.deps/glslc-trixie/glslc
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
# Each module folder is on the include path: headers are included by name.
SRC_DIRS := $(sort $(dir $(wildcard src/*/*.c src/*/*.h)))
INC      := $(addprefix -I,$(SRC_DIRS:%/=%))
override CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter -Wno-format-truncation -pthread $(INC) -I$(BUILD)/gen
# PCRE2, libmicrohttpd and jansson are linked statically: a copied zinc runs on a machine
# without them (the GPU machines have libc, libcurl, libcrypto and gnutls, not these).
# zlib stays shared: it is in every base system (Priority: required; libcurl needs it too).
STATIC_LIBS := -Wl,-Bstatic -lpcre2-8 -lmicrohttpd -ljansson -Wl,-Bdynamic
LDLIBS  += -lm -lpthread -ldl $(STATIC_LIBS) -lgnutls -lcurl -lcrypto -lz
BUILD   ?= build

SRCS     := $(filter-out src/cli/main.c,$(wildcard src/*/*.c))
OBJS     := $(SRCS:src/%.c=$(BUILD)/obj/%.o)
SHADER_DIR := src/vulkan/shaders
SHADERS  := $(wildcard $(SHADER_DIR)/*.comp)
SPV      := $(SHADERS:$(SHADER_DIR)/%.comp=$(BUILD)/spv/%.spv)
# Header dependencies per object, written by the compiler (-MMD).
DEPFLAGS  = -MMD -MP
TESTS    := $(wildcard tests/test_*.c)
TEST_BIN := $(TESTS:tests/%.c=$(BUILD)/tests/%)

.PHONY: all test test-asan fuzz deps clean run bench check tools load
all: zinc

deps:
	bash scripts/deps.sh

zinc: $(BUILD)/zinc
	cp $< $@

$(BUILD)/zinc: $(BUILD)/obj/cli/main.o $(BUILD)/libzinc.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(BUILD)/libzinc.a: $(OBJS) $(BUILD)/obj/shaders_embed.o $(BUILD)/obj/web_embed.o $(BUILD)/obj/format/embedded_data.o
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/obj/%_avx2.o: src/%_avx2.c | $(BUILD)/gen/shaders_embed.h $(BUILD)/gen/web_embed.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -mavx2 -mfma -mf16c -c -o $@ $<

$(BUILD)/obj/%.o: src/%.c | $(BUILD)/gen/shaders_embed.h $(BUILD)/gen/web_embed.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c -o $@ $<

# Shaders: GLSL -> SPIR-V at build time, embedded with .incbin so nothing is
# read from the working directory at run time.
# The paged KV cache's block (positions) is limits.h's ZN_KV_BLOCK, handed
# to the shaders as a define (kvtab.glsl) so there is one number; so is
# ZN_VK_WG_SUBGROUPS (reduce.glsl).
KV_BLOCK := $(shell sed -n 's/^\#define ZN_KV_BLOCK  *\([0-9][0-9]*\).*/\1/p' src/base/limits.h 2>/dev/null)
WG_SUBGROUPS := $(shell sed -n 's/^\#define ZN_VK_WG_SUBGROUPS  *\([0-9][0-9]*\).*/\1/p' src/base/limits.h 2>/dev/null)
$(BUILD)/spv/%.spv: $(SHADER_DIR)/%.comp $(wildcard $(SHADER_DIR)/*.glsl) src/base/limits.h
	@[ -n "$(KV_BLOCK)" ] || { echo "Makefile: ZN_KV_BLOCK not found in src/base/limits.h" >&2; exit 1; }
	@[ -n "$(WG_SUBGROUPS)" ] || { echo "Makefile: ZN_VK_WG_SUBGROUPS not found in src/base/limits.h" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(GLSLC) --target-env=$(SPV_ENV) -O -DZN_KV_BLOCK=$(KV_BLOCK) -DZN_VK_WG_SUBGROUPS=$(WG_SUBGROUPS) -I$(SHADER_DIR) -o $@ $<

# GL_NV_cooperative_matrix2 needs SPIR-V 1.6; only devices with it load these.
SPV_ENV := vulkan1.2
$(BUILD)/spv/%_cm2.spv: SPV_ENV := vulkan1.3

$(BUILD)/gen/shaders_embed.h $(BUILD)/gen/shaders_embed.S &: $(SPV) scripts/embed_shaders.sh
	@mkdir -p $(BUILD)/gen
	bash scripts/embed_shaders.sh $(BUILD)/gen $(SPV)

$(BUILD)/obj/shaders_embed.o: $(BUILD)/gen/shaders_embed.S
	@mkdir -p $(dir $@)
	$(CC) -c -o $@ $<

# GGUF files built into the binary (src/format/embedded.h): the demo model.
$(BUILD)/obj/format/embedded_data.o: src/format/embedded_data.S models/zinc-demo-qwen35.gguf
	@mkdir -p $(dir $@)
	$(CC) -c -o $@ $<

# The web UI (src/server/web/): each file gzipped and embedded the same way
# (scripts/embed_web.sh); the folders are prerequisites too, so adding or
# removing a file repacks.
WEB_DIR   := src/server/web
WEB_FILES := $(sort $(shell find $(WEB_DIR) -type f 2>/dev/null))
$(BUILD)/gen/web_embed.h $(BUILD)/gen/web_embed.S &: $(WEB_FILES) $(sort $(dir $(WEB_FILES))) scripts/embed_web.sh
	@mkdir -p $(BUILD)/gen
	bash scripts/embed_web.sh $(BUILD)/gen $(WEB_DIR) $(WEB_FILES:$(WEB_DIR)/%=%)

$(BUILD)/obj/web_embed.o: $(BUILD)/gen/web_embed.S
	@mkdir -p $(dir $@)
	$(CC) -c -o $@ $<

$(BUILD)/tests/%: tests/%.c $(BUILD)/libzinc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -Itests -o $@ $< $(BUILD)/libzinc.a $(LDFLAGS) $(LDLIBS)

# tests/test_lsan.sh's probe: LeakSanitizer on in every build (the plain one too).
$(BUILD)/tests/lsan_probe: tests/lsan_probe.c $(BUILD)/libzinc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fsanitize=address -fno-omit-frame-pointer $(DEPFLAGS) -Itests -o $@ $< $(BUILD)/libzinc.a $(LDFLAGS) -fsanitize=address $(LDLIBS)

test: $(BUILD)/zinc $(TEST_BIN) $(BUILD)/demo-pack $(BUILD)/tests/lsan_probe $(BUILD)/gguf-edit $(BUILD)/zinc-load
	@bash tests/run.sh $(BUILD)

# The shell tests' fixture maker: edited copies of the shared GGUF files.
$(BUILD)/gguf-edit: tests/gguf_edit.c tests/gguf_edit.h $(BUILD)/libzinc.a
	$(CC) $(CFLAGS) -Itests -o $@ $< $(BUILD)/libzinc.a $(LDFLAGS) $(LDLIBS)

test-asan:
	$(MAKE) BUILD=build-asan OPT=-O1 CFLAGS='-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined' LDFLAGS='-fsanitize=address,undefined' test

# Packs the demo model's GGUF (tools/demo-model/README.md).
$(BUILD)/demo-pack: tools/demo-model/pack.c $(BUILD)/libzinc.a
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libzinc.a $(LDFLAGS) $(LDLIBS)

# The load tool (tools/load/): plain C and POSIX, linked statically so the binary can be
# copied to a machine without a compiler (tools/load/h200.sh).
load: $(BUILD)/zinc-load
$(BUILD)/zinc-load: tools/load/zinc_load.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(if $(findstring sanitize,$(CFLAGS)),$(LDFLAGS),-static) -o $@ $< -pthread

# Kernel timing tools for A/B runs on a GPU (tools/vk-bench/*.c -> build/vk-NAME).
VK_TOOLS := $(patsubst tools/vk-bench/%.c,$(BUILD)/vk-%,$(wildcard tools/vk-bench/*.c))
tools: $(VK_TOOLS)
$(BUILD)/vk-%: tools/vk-bench/%.c $(BUILD)/libzinc.a
	$(CC) $(CFLAGS) $(DEPFLAGS) -Itools/vk-bench -o $@ $< $(BUILD)/libzinc.a $(LDFLAGS) $(LDLIBS)

# libFuzzer targets (clang, ASan + UBSan) over only the sources each needs,
# compiled once into $(BUILD)/fuzz-obj; fuzz/fuzz.h describes their input
# layouts and scripts/fuzz-smoke.sh runs them. $(BUILD)/fuzz-replay/fuzz_X:
# the same target with fuzz/replay.c as main(), built with $(CC) and
# $(CFLAGS), so `make test` (and test-asan) replay the regression inputs in
# fuzz/regress/X without clang.
FUZZ_TARGETS := gguf model tokenizer jinja sampler request
# (embedded.c's table points into embedded_data.S: the built-in demo model)
FUZZ_SRCS_gguf := src/format/gguf.c src/format/qtypes.c src/base/status.c src/base/file.c src/format/embedded.c src/format/embedded_data.S
FUZZ_SRCS_model := $(FUZZ_SRCS_gguf) src/model/model.c $(wildcard src/model/graph*.c) $(wildcard src/cpu/*.c) \
                   src/format/quant.c src/format/quant_avx2.c src/engine/kv_type.c src/engine/kv_blocks.c
FUZZ_SRCS_tokenizer := $(FUZZ_SRCS_gguf) $(wildcard src/text/*.c)
FUZZ_SRCS_jinja := $(wildcard src/chat/*.c) src/text/ucd.c src/text/utf8.c src/base/status.c
FUZZ_SRCS_sampler := src/engine/sampler.c src/base/status.c
FUZZ_SRCS_request := src/server/oai.c src/server/oai_responses.c src/server/anthropic.c src/server/evbuf.c \
                     src/text/utf8.c src/engine/sampler.c src/base/status.c
FUZZ_LIBS_model := -lpthread
FUZZ_LIBS_tokenizer := -lpcre2-8
FUZZ_LIBS_request := -ljansson
# (warnings are the gcc build's business: clang's differ)
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -pthread $(INC) -Ifuzz \
               -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
$(foreach t,$(FUZZ_TARGETS),$(eval FUZZ_OBJS_$(t) := $(patsubst src/%.c,$(BUILD)/fuzz-obj/%.o,$(FUZZ_SRCS_$(t)))))
FUZZ_BIN := $(FUZZ_TARGETS:%=$(BUILD)/fuzz_%)
FUZZ_REPLAY := $(FUZZ_TARGETS:%=$(BUILD)/fuzz-replay/fuzz_%)
fuzz: $(FUZZ_BIN) $(BUILD)/make_seeds
$(BUILD)/fuzz-obj/%_vnni_avx2.o: src/%_vnni_avx2.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) $(DEPFLAGS) -mavx2 -mfma -mf16c -mavxvnni -Wno-unknown-pragmas -c -o $@ $<
$(BUILD)/fuzz-obj/%_avx2.o: src/%_avx2.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) $(DEPFLAGS) -mavx2 -mfma -mf16c -c -o $@ $<
$(BUILD)/fuzz-obj/%_avx512.o: src/%_avx512.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) $(DEPFLAGS) -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512vnni \
	  -Wno-unknown-pragmas -c -o $@ $<
$(BUILD)/fuzz-obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) $(DEPFLAGS) -c -o $@ $<
.SECONDEXPANSION:
$(FUZZ_BIN): $(BUILD)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz.h $$(FUZZ_OBJS_$$*)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJS_$*) -lm $(FUZZ_LIBS_$*)
$(FUZZ_REPLAY): $(BUILD)/fuzz-replay/fuzz_%: fuzz/fuzz_%.c fuzz/replay.c fuzz/fuzz.h $(BUILD)/libzinc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ifuzz -o $@ $< fuzz/replay.c $(BUILD)/libzinc.a $(LDFLAGS) $(LDLIBS)
$(BUILD)/make_seeds: fuzz/make_seeds.c fuzz/seeds_model.c fuzz/seeds_text.c fuzz/make_seeds.h fuzz/fuzz.h $(FUZZ_SRCS_gguf)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ifuzz -o $@ fuzz/make_seeds.c fuzz/seeds_model.c fuzz/seeds_text.c $(FUZZ_SRCS_gguf) -lm

clean:
	rm -rf build build-asan zinc

# The README's two commands, also as make targets (the scripts need no make:
# deps.sh installs it). check: deps, build, unit tests, sanitizer tests, fuzz
# smoke, as CI runs it; scripts/check.sh's last line is the tally, and it stays
# the last line of a plain `make check` when something failed: a failed recipe
# would add make's "*** [check] Error 1" after it. So check.sh runs as the
# remaking of an included makefile (a recipe that always succeeds and records
# the exit status); make then restarts, and after a failed run it turns on
# question mode (-q: exit status 1, nothing printed). With other goals beside
# it, or -n/-q, check is an ordinary recipe. run: the shipped demo model
# (models/zinc-demo-qwen35.gguf) writes a paragraph.
ifeq ($(MAKECMDGOALS)$(findstring n,$(firstword -$(MAKEFLAGS)))$(findstring q,$(firstword -$(MAKEFLAGS))),check)
ifeq ($(MAKE_RESTARTS),)
-include $(BUILD)/check-status.mk
$(BUILD)/check-status.mk: check-always
	@mkdir -p $(@D); bash scripts/check.sh; echo "CHECK_STATUS := $$?" > $@
check-always:
else
include $(BUILD)/check-status.mk
ifneq ($(CHECK_STATUS),0)
MAKEFLAGS += -q
endif
endif
check:
	@:
else
check:
	@bash scripts/check.sh
endif

run:
	@bash scripts/demo.sh

# The fuzz replay binaries, named here where FUZZ_REPLAY is defined (the test
# rule above is read before it, when the variable was still empty).
test: $(FUZZ_REPLAY)

-include $(OBJS:.o=.d) $(BUILD)/obj/cli/main.d $(TEST_BIN:=.d) $(BUILD)/tests/lsan_probe.d $(wildcard $(BUILD)/fuzz-obj/*/*.d)
