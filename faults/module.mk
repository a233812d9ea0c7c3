# faults/: the reliability matrix against the real mosgw. `make check` runs
# its quick subset (a few seconds a row); `make faults` every row at full
# size, with the table also written to $(B)/faults.md; `make soak
# DURATION=S [SEED=N]` (default 60 s, seed from the clock, printed) the long
# mixed run. The runner starts the chaos proxy and preloads the VFS shim
# from its own directory.

FAULTS_OBJS = $(patsubst %.c,$(OBJ)/%.o,$(wildcard faults/*.c))
FAULTS_AUX  = $(B)/tests/mosproxy $(B)/tests/faultvfs.so
DURATION   ?= 60

$(B)/tests/faults: $(FAULTS_OBJS) $(GWTEST_OBJS) $(LIB_GWCORE) $(LIB_QUEUE) $(LIB_STORE) $(LIB_MOSJSON) \
                   $(LIB_MOSXML) | $(FAULTS_AUX)
	$(call link,$(LIBS_GATEWAY) $(LIBS_CMOCKA) -lpthread)
TEST_PROGS += $(B)/tests/faults

.PHONY: faults soak
faults: all $(B)/tests/faults $(FAULTS_AUX)
	@mkdir -p $(B)/tmp
	@$(TEST_ENV) $(B)/tests/faults --all --md $(B)/faults.md

soak: all $(B)/tests/faults $(FAULTS_AUX)
	@mkdir -p $(B)/tmp
	@$(TEST_ENV) $(B)/tests/faults --soak $(DURATION) $(if $(SEED),--seed $(SEED))
