# conformance/: mosreplay (play, record, import captures) and the scenario
# suite. `make conformance` starts a fresh mosgw and plays every scenario of
# fixtures/scenarios/ against it; the same run is part of `make check`.

MOSREPLAY_SRCS = $(filter-out conformance/mosreplay.c,$(wildcard conformance/*.c))
MOSREPLAY_OBJS = $(MOSREPLAY_SRCS:%.c=$(OBJ)/%.o)

$(BIN)/mosreplay: $(OBJ)/conformance/mosreplay.o $(MOSREPLAY_OBJS) $(LIB_GWCORE) \
                  $(LIB_QUEUE) $(LIB_STORE) $(LIB_MOSJSON) $(LIB_MOSXML)
	$(call link,$(LIBS_GATEWAY) $(LIBS_JSON) $(LIBS_PCAP))
PROGS += $(BIN)/mosreplay

# The tests: conformance_scenarios (the suite against a fresh mosgw, a plain
# program whose last line is mosreplay's count), conformance_sofie (the suite
# against Sofie's library as a device, judged against the differences
# conformance/README.md lists) and one cmocka suite per
# conformance/tests/test_NAME.c. They link the gateway's test rig.
RTEST_OBJS = $(OBJ)/conformance/tests/rtest.o $(GWTEST_OBJS)
LIBS_REPLAY = $(LIBS_GATEWAY) $(LIBS_JSON) $(LIBS_PCAP)

CONFORMANCE_RUNS = $(B)/tests/conformance_scenarios $(B)/tests/conformance_sofie
$(CONFORMANCE_RUNS): $(B)/tests/conformance_%: $(OBJ)/conformance/tests/%.o \
    $(RTEST_OBJS) $(LIB_GWCORE) $(LIB_QUEUE) $(LIB_STORE) $(LIB_MOSJSON) $(LIB_MOSXML)
	$(call link,$(LIBS_GATEWAY) -lpthread)
TEST_PROGS += $(CONFORMANCE_RUNS)

CONFORMANCE_TESTS = $(patsubst conformance/tests/test_%.c,$(B)/tests/conformance_%,$(wildcard conformance/tests/test_*.c))
$(CONFORMANCE_TESTS): $(B)/tests/conformance_%: $(OBJ)/conformance/tests/test_%.o \
    $(RTEST_OBJS) $(MOSREPLAY_OBJS) $(LIB_GWCORE) $(LIB_QUEUE) $(LIB_STORE) $(LIB_MOSJSON) \
    $(LIB_MOSXML)
	$(call link,$(LIBS_REPLAY) $(LIBS_CMOCKA) -lpthread)
TEST_PROGS += $(CONFORMANCE_TESTS)

.PHONY: conformance conformance-sofie
conformance: $(BIN)/mosreplay $(BIN)/mosgw $(BIN)/mosctl $(B)/tests/conformance_scenarios
	@mkdir -p $(B)/tmp
	@$(TEST_ENV) $(B)/tests/conformance_scenarios
conformance-sofie: $(BIN)/mosreplay $(B)/tests/conformance_sofie
	@mkdir -p $(B)/tmp
	@$(TEST_ENV) $(B)/tests/conformance_sofie
