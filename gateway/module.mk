# gateway/: the daemon mosgw. Everything but main.c goes into libgwcore.a,
# which mosctl (catalog, history) and the tests link too. Every
# gateway/tests/test_NAME.c becomes the suite $(B)/tests/gateway_NAME, linked
# with the test rig objects in GWTEST_SRCS (scripted NCS peer, process control).

GWCORE_SRCS = $(filter-out gateway/main.c,$(wildcard gateway/*.c))
GWTEST_SRCS = $(filter-out gateway/tests/test_%.c,$(wildcard gateway/tests/*.c))
GWTEST_OBJS = $(GWTEST_SRCS:%.c=$(OBJ)/%.o) $(PGDB_OBJS)
LIBS_GATEWAY = $(LIBS_EVENT) $(LIBS_INIH) $(LIBS_STORE) $(LIBS_XML) $(LIBS_JSON) \
               $(LIBS_SYSTEMD) -lm

$(LIB_GWCORE): $(GWCORE_SRCS:%.c=$(OBJ)/%.o)
	$(call archive)

$(BIN)/mosgw: $(OBJ)/gateway/main.o $(LIB_GWCORE) $(LIB_QUEUE) $(LIB_STORE) $(LIB_MOSJSON) \
              $(LIB_MOSXML)
	$(call link,$(LIBS_GATEWAY))
PROGS += $(BIN)/mosgw

GATEWAY_TESTS = $(patsubst gateway/tests/test_%.c,$(B)/tests/gateway_%,$(wildcard gateway/tests/test_*.c))
$(GATEWAY_TESTS): $(B)/tests/gateway_%: $(OBJ)/gateway/tests/test_%.o $(GWTEST_OBJS) \
                  $(LIB_GWCORE) $(LIB_QUEUE) $(LIB_STORE) $(LIB_MOSJSON) $(LIB_MOSXML)
	$(call link,$(LIBS_GATEWAY) $(LIBS_JSON) $(LIBS_CMOCKA) -lpthread)
TEST_PROGS += $(GATEWAY_TESTS)
# The suites that also run against PostgreSQL (make check's second pass).
GATEWAY_PG_SUITES = catalog dbw events history msgid owner rostore search it_link \
                    it_publish it_ro it_history it_import it_window it_api \
                    it_apibatch it_hooktls it_events it_jobs it_jobcli \
                    it_page it_links it_watch it_cli it_crash it_failover \
                    it_limits it_tls it_log it_isync it_hostile it_profile3 \
                    it_interop it_evcli
PG_TEST_PROGS += $(GATEWAY_PG_SUITES:%=$(B)/tests/gateway_%)
