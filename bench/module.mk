# bench/: every bench/bench_NAME.c becomes $(B)/bench/bench_NAME, linked with
# all project libraries; bench/run.sh runs the parts in order.

BENCH_PROGS = $(patsubst bench/bench_%.c,$(B)/bench/bench_%,$(wildcard bench/bench_*.c))
# (the gateway's test rig, which some include, makes PostgreSQL databases)
$(BENCH_PROGS): $(B)/bench/bench_%: $(OBJ)/bench/bench_%.o $(PGDB_OBJS) \
                $(LIB_GWCORE) $(LIB_QUEUE) $(LIB_STORE) $(LIB_MOSJSON) \
                $(LIB_MOSXML)
	$(call link,$(LIBS_GATEWAY) $(LIBS_JSON) -lpthread)
