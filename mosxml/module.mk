# mosxml/: the MOS codec (libmosxml.a, libxml2 only) and its JSON mapping
# (libmosjson.a, jansson). Every mosxml/tests/test_NAME.c becomes the suite
# $(B)/tests/mosxml_NAME.

MOSXML_SRCS  = mosxml/init.c mosxml/frame.c mosxml/time.c mosxml/msg.c \
               mosxml/input.c \
               mosxml/schema.c mosxml/parse.c mosxml/write.c
MOSJSON_SRCS = mosxml/json.c

$(LIB_MOSXML): $(MOSXML_SRCS:%.c=$(OBJ)/%.o)
	$(call archive)
$(LIB_MOSJSON): $(MOSJSON_SRCS:%.c=$(OBJ)/%.o)
	$(call archive)

# Every suite also links the common test code of mosxml/tests/util.c.
MOSXML_TESTS = $(patsubst mosxml/tests/test_%.c,$(B)/tests/mosxml_%,$(wildcard mosxml/tests/test_*.c))
$(MOSXML_TESTS): $(B)/tests/mosxml_%: $(OBJ)/mosxml/tests/test_%.o \
                 $(OBJ)/mosxml/tests/util.o $(LIB_MOSJSON) $(LIB_MOSXML)
	$(call link,$(LIBS_JSON) $(LIBS_XML) $(LIBS_CMOCKA))
TEST_PROGS += $(MOSXML_TESTS)
