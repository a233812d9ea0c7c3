# tools/: mosmsg (codec on the command line), mosctl (operator CLI), fuzzing.

$(BIN)/mosmsg: $(OBJ)/tools/mosmsg.o $(LIB_MOSJSON) $(LIB_MOSXML)
	$(call link,$(LIBS_JSON) $(LIBS_XML))
PROGS += $(BIN)/mosmsg

# mosctl: one file per noun; `asset` and `ro` use the gateway's code.
MOSCTL_OBJS = $(OBJ)/tools/mosctl.o $(OBJ)/tools/mosctl_job.o \
              $(OBJ)/tools/mosctl_asset.o $(OBJ)/tools/mosctl_history.o \
              $(OBJ)/tools/mosctl_ro.o $(OBJ)/tools/mosctl_api.o \
              $(OBJ)/tools/mosctl_status.o $(OBJ)/tools/mosctl_jobapi.o \
              $(OBJ)/tools/mosctl_db.o $(OBJ)/tools/mosctl_worker.o \
              $(OBJ)/tools/mosctl_events.o
$(BIN)/mosctl: $(MOSCTL_OBJS) $(LIB_GWCORE) $(LIB_QUEUE) $(LIB_STORE) $(LIB_MOSJSON) \
               $(LIB_MOSXML)
	$(call link,$(LIBS_GATEWAY))
PROGS += $(BIN)/mosctl

include tools/fuzz/module.mk

# The Wireshark dissector, checked with tshark on fixtures/pcap/.
TEST_SCRIPTS += tools/wireshark/test.sh

# The throwaway PostgreSQL cluster of the tests (tools/pgtest.sh).
TEST_SCRIPTS += tools/pgtest-test.sh

# Test-only programs of the fault matrix (faults/): the chaos proxy and the
# SQLite VFS shim, loaded into mosgw and mosctl with LD_PRELOAD. Neither is
# installed or linked into mosgw. The shim is built without sanitizers: it
# is preloaded ahead of everything.
$(B)/tests/mosproxy: $(OBJ)/tools/mosproxy.o
	$(call link,$(LIBS_EVENT))

$(B)/tests/faultvfs.so: tools/faultvfs.c tools/faultvfs.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -I. $(WARN) $(CFLAGS) -fPIC -shared \
	    -o $@ tools/faultvfs.c $(LIBS_SQLITE) -lpthread
