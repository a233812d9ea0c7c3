# store/: the storage interface (store.h) and its backends (libmosstore.a).
# Every store/tests/test_NAME.c becomes the suite $(B)/tests/store_NAME.

STORE_SRCS = $(wildcard store/*.c)

$(LIB_STORE): $(STORE_SRCS:%.c=$(OBJ)/%.o)
	$(call archive)

# PGDB_OBJS: the tests' private PostgreSQL databases (store/tests/pgdb.h),
# linked into every suite that runs on PostgreSQL.
PGDB_OBJS = $(OBJ)/store/tests/pgdb.o
STORE_TESTS = $(patsubst store/tests/test_%.c,$(B)/tests/store_%,$(wildcard store/tests/test_*.c))
$(STORE_TESTS): $(B)/tests/store_%: $(OBJ)/store/tests/test_%.o $(PGDB_OBJS) \
                $(LIB_STORE)
	$(call link,$(LIBS_STORE) $(LIBS_CMOCKA))
TEST_PROGS += $(STORE_TESTS)
