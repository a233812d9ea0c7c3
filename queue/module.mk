# queue/: the durable job queue (libmosqueue.a, on store/). Every
# queue/tests/test_NAME.c becomes the suite $(B)/tests/queue_NAME, linked
# with the shared test rig (queue/tests/*.c without the test_ prefix).

QUEUE_SRCS = $(wildcard queue/*.c)

$(LIB_QUEUE): $(QUEUE_SRCS:%.c=$(OBJ)/%.o)
	$(call archive)

QUEUE_TEST_RIG = $(filter-out queue/tests/test_%.c,$(wildcard queue/tests/*.c))
QUEUE_TESTS = $(patsubst queue/tests/test_%.c,$(B)/tests/queue_%,$(wildcard queue/tests/test_*.c))
$(QUEUE_TESTS): $(B)/tests/queue_%: $(OBJ)/queue/tests/test_%.o \
                $(QUEUE_TEST_RIG:%.c=$(OBJ)/%.o) $(PGDB_OBJS) $(LIB_QUEUE) \
                $(LIB_STORE)
	$(call link,$(LIBS_STORE) $(LIBS_CMOCKA) -lpthread)
TEST_PROGS += $(QUEUE_TESTS)
# The same suites again on PostgreSQL (make check's second pass).
PG_TEST_PROGS += $(QUEUE_TESTS)
