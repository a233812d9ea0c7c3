# tools/fuzz: libFuzzer targets for the framer (fuzz_frame), the parser and
# writer (fuzz_mos), the check of verbatim-XML fragments (fuzz_fragment) and
# a whole gateway session without a socket (fuzz_session), and regress, the
# plain driver that replays their seeds and corpora with the ordinary
# compiler in `make check`.
#
# `make fuzz` builds the targets with clang-14 (libFuzzer, ASan, UBSan) into
# $(B)/fuzz and runs each for FUZZ_TIME seconds (default 60); see
# tools/fuzz/run.sh.

FUZZ_TARGETS = fuzz_frame fuzz_mos fuzz_fragment fuzz_session

$(B)/tests/fuzz_regress: $(OBJ)/tools/fuzz/regress.o $(LIB_GWCORE) $(LIB_QUEUE) $(LIB_STORE) \
                         $(LIB_MOSJSON) $(LIB_MOSXML)
	$(call link,$(LIBS_JSON) $(LIBS_GATEWAY))
TEST_PROGS += $(B)/tests/fuzz_regress

# The clang build keeps its own objects: nothing mixes with the gcc build.
# Warnings show but do not stop it (the gcc build is where they are errors).
# FUZZ_SANITIZE picks the sanitizers (default address,undefined); another
# set (e.g. undefined, several times faster than with ASan) builds into its
# own directory. FUZZ_TRACE_CMP=0 leaves out libFuzzer's comparison hooks
# (they guide mutations past magic values, at three to six times the cost
# of an execution): for long runs from a grown corpus and the dictionaries.
FUZZ_CC      ?= clang-14
FUZZ_SANITIZE ?= address,undefined
FUZZ_TRACE_CMP ?= 1
FUZZ_COMMA   := ,
FUZZ_DIR      = $(B)/fuzz$(if $(filter-out address$(FUZZ_COMMA)undefined,$(FUZZ_SANITIZE)),-$(subst $(FUZZ_COMMA),-,$(FUZZ_SANITIZE)))$(if $(filter 0,$(FUZZ_TRACE_CMP)),-nocmp)
FUZZ_SAN      = -fsanitize=$(FUZZ_SANITIZE) -fno-sanitize-recover=undefined \
                -fno-omit-frame-pointer \
                $(if $(filter 0,$(FUZZ_TRACE_CMP)),-fno-sanitize-coverage=trace-cmp)
FUZZ_CFLAGS   = -std=c11 -D_GNU_SOURCE -I. $(filter-out -Werror,$(WARN)) \
                $(call pc_cflags,$(PKGS)) -g -O1 $(FUZZ_SAN)
FUZZ_LIB_OBJS = $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(MOSXML_SRCS) $(MOSJSON_SRCS))
# fuzz_session links the daemon's own sources (all but main.c) and the queue.
FUZZ_GW_OBJS  = $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(GWCORE_SRCS) $(QUEUE_SRCS) \
                $(STORE_SRCS))
FUZZ_PROGS    = $(addprefix $(FUZZ_DIR)/,$(FUZZ_TARGETS))
# Built with the sanitizers but without coverage: the harnesses (their
# checks are not what is fuzzed) and, for every target but fuzz_frame, the
# framer, a byte-by-byte scanner that fuzz_frame covers and that otherwise
# took a quarter of fuzz_mos's and fuzz_session's time in comparison hooks.
FUZZ_NOCOV    = $(FUZZ_DIR)/nocov
FUZZ_FRAMER   = $(FUZZ_DIR)/obj/mosxml/frame.o

.PHONY: fuzz-toolchain
fuzz-toolchain:
	@sh tools/deps.sh fuzz && command -v $(FUZZ_CC) >/dev/null 2>&1 || { \
	    echo "make fuzz needs $(FUZZ_CC) with libFuzzer (clang-14," \
	    "libclang-rt-14-dev), or set FUZZ_CC" >&2; exit 1; }

$(FUZZ_DIR)/obj/%.o: %.c | fuzz-toolchain
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

$(FUZZ_NOCOV)/%.o: %.c | fuzz-toolchain
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<

$(FUZZ_PROGS): $(FUZZ_DIR)/%: $(FUZZ_NOCOV)/tools/fuzz/%.o $(FUZZ_LIB_OBJS) \
               $(FUZZ_NOCOV)/mosxml/frame.o
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $(filter %.o,$(if \
	    $(filter fuzz_frame,$*),$(filter-out $(FUZZ_NOCOV)/mosxml/%,$^),$(filter-out $(FUZZ_FRAMER),$^))) \
	    $(LIBS_JSON) $(LIBS_XML) $(if $(filter $(FUZZ_GW_OBJS),$^),$(LIBS_GATEWAY))
$(FUZZ_DIR)/fuzz_session: $(FUZZ_GW_OBJS)

fuzz: $(FUZZ_PROGS) $(B)/tests/fuzz_regress
	@FUZZ_DIR=$(FUZZ_DIR) REGRESS=$(B)/tests/fuzz_regress $(TEST_ENV) \
	    sh tools/fuzz/run.sh $(FUZZ_TARGETS)

-include $(shell find $(FUZZ_DIR)/obj $(FUZZ_NOCOV) -name '*.d' 2>/dev/null)
