# mosgw — plain GNU make. `make` builds everything into bin/; `make check` runs
# every test suite and ends with one line "N passed, N failed".
#
# Each module adds its sources, programs and tests from its own module.mk.

PREFIX  ?= /usr/local
DESTDIR ?=
CC      ?= cc
CFLAGS  ?= -O2 -g
B       ?= build/default
BIN     ?= bin
SAN     ?=

# What the programs link with; the test suites also need cmocka. A goal
# that builds and installs only the programs (`make`, `make install`, the
# Debian package) asks for the first list alone.
PROG_PKGS = libxml-2.0 sqlite3 libpq libevent libevent_openssl openssl jansson inih \
            libpcap libsystemd
TEST_PKGS = cmocka
PKGS = $(PROG_PKGS) $(TEST_PKGS)
ifeq ($(filter-out all install uninstall,$(or $(MAKECMDGOALS),all)),)
NEED_PKGS = $(PROG_PKGS)
else
NEED_PKGS = $(PKGS)
endif

# A fresh machine lacks some -dev packages: install them before anything else.
ifeq ($(filter clean distclean help,$(MAKECMDGOALS)),)
ifneq ($(shell pkg-config --exists $(NEED_PKGS) 2>/dev/null && echo ok),ok)
$(info mosgw: build dependencies missing; running tools/deps.sh)
DEPS_STATUS := $(shell sh tools/deps.sh 1>&2; echo $$?)
ifneq ($(DEPS_STATUS),0)
$(error tools/deps.sh failed: install the packages it names, then run make again)
endif
endif
endif

WARN = -Wall -Wextra -Werror -Wformat=2 -Wshadow -Wpointer-arith -Wcast-qual \
       -Wwrite-strings -Wstrict-prototypes -Wmissing-prototypes \
       -Wmissing-declarations -Wundef -Wvla -Wno-missing-field-initializers

ifneq ($(SAN),)
SANFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
endif

pc_cflags = $(shell pkg-config --cflags $(1) 2>/dev/null)
pc_libs   = $(shell pkg-config --libs $(1) 2>/dev/null)

ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -I. $(WARN) $(call pc_cflags,$(PROG_PKGS)) \
             $(call pc_cflags,$(TEST_PKGS)) \
             $(SANFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(SANFLAGS) $(LDFLAGS)

LIBS_XML     = $(call pc_libs,libxml-2.0)
LIBS_SQLITE  = $(call pc_libs,sqlite3)
# What the storage backends (store/) link with.
LIBS_STORE   = $(LIBS_SQLITE) $(call pc_libs,libpq)
LIBS_EVENT   = $(call pc_libs,libevent libevent_openssl openssl) -lpthread
LIBS_JSON    = $(call pc_libs,jansson)
LIBS_INIH    = $(call pc_libs,inih)
LIBS_CMOCKA  = $(call pc_libs,cmocka)
LIBS_PCAP    = $(call pc_libs,libpcap)
LIBS_SYSTEMD = $(call pc_libs,libsystemd)

OBJ = $(B)/obj
LIB_MOSXML  = $(B)/libmosxml.a
LIB_MOSJSON = $(B)/libmosjson.a
LIB_STORE  = $(B)/libmosstore.a
LIB_QUEUE  = $(B)/libmosqueue.a
LIB_GWCORE = $(B)/libgwcore.a

# Filled in by the module fragments. PG_TEST_PROGS: suites that `make check`
# runs a second time against PostgreSQL (MOSGW_DB_DRIVER=postgresql).
PROGS        :=
TEST_PROGS   :=
TEST_SCRIPTS :=
PG_TEST_PROGS :=
BENCH_PROGS  :=
CLEAN_EXTRA  :=

.PHONY: all check run bench asan valgrind fuzz lint install uninstall clean help tests
all:

include mosxml/module.mk
include store/module.mk
include queue/module.mk
include gateway/module.mk
include tools/module.mk
include faults/module.mk
include conformance/module.mk
include bench/module.mk
include man/module.mk
include packaging/module.mk

all: $(PROGS)
tests: $(TEST_PROGS)

$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# $(call link,LIBS): link the objects and archives among the prerequisites.
define link
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o %.a,$^) $(1)
endef

# $(call archive): a static library from the objects among the prerequisites.
define archive
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $(filter %.o,$^)
endef

# Tests find the programs, the sources and the shared examples through these.
TEST_ENV = MOSGW_BIN=$(abspath $(BIN)) MOSGW_TOP=$(CURDIR) \
           MOSGW_SHARED=$(abspath ../shared) MOSGW_TMP=$(abspath $(B))/tmp

# One throwaway PostgreSQL cluster for the whole run (tools/pgtest.sh), unless
# MOSGW_PG_DSN names a server already.
check: all $(TEST_PROGS)
	@mkdir -p $(B)/tmp
	@$(TEST_ENV) sh tools/run-tests.sh $(TEST_PROGS) $(TEST_SCRIPTS) \
	    --pg $(PG_TEST_PROGS)

asan:
	$(MAKE) B=build/asan BIN=build/asan/bin SAN=1 CFLAGS="-O1 -g" check

# The unit suites under valgrind (memcheck). The integration suites run the
# daemon with sub-second timers that valgrind's slowdown would break; the
# daemon is covered by `make asan` instead.
VALGRIND = valgrind -q --error-exitcode=99 --leak-check=full \
           --errors-for-leak-kinds=definite --track-origins=yes
valgrind: all $(TEST_PROGS)
	@command -v valgrind >/dev/null || { echo "make valgrind needs valgrind" \
	    "(apt-get install valgrind)" >&2; exit 1; }
	@mkdir -p $(B)/tmp
	@$(TEST_ENV) MOSGW_WRAP="$(VALGRIND)" sh tools/run-tests.sh \
	    $(filter-out $(B)/tests/gateway_it_%,$(TEST_PROGS))

# Quiet: the build says nothing unless it fails (V=1 shows every command).
run:
	@$(MAKE) --no-print-directory $(if $(V),,-s) all
	@sh tools/run.sh

bench: all $(BENCH_PROGS)
	@$(TEST_ENV) sh bench/run.sh

lint:
	sh tools/lint.sh

# The daemon goes to sbin (its page is in section 8), the tools to bin; the
# service's configuration and an empty API tokens file to
# SYSCONFDIR/mosgw, each only where none is there yet (an operator's file is
# never replaced). Nothing of the tests is built or installed.
BINDIR     ?= $(PREFIX)/bin
SBINDIR    ?= $(PREFIX)/sbin
MANDIR     ?= $(PREFIX)/share/man
DOCDIR     ?= $(PREFIX)/share/doc/mosgw
SYSCONFDIR ?= $(PREFIX)/etc
TOOLS = $(filter-out $(BIN)/mosgw,$(PROGS))
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
	    $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DOCDIR)/examples \
	    $(DESTDIR)$(SYSCONFDIR)/mosgw
	install -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)/
	install -m 755 $(BIN)/mosgw $(DESTDIR)$(SBINDIR)/
	install -m 644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(MAN5) $(DESTDIR)$(MANDIR)/man5/
	install -m 644 $(MAN8) $(DESTDIR)$(MANDIR)/man8/
	install -m 644 $(EXAMPLES) $(DESTDIR)$(DOCDIR)/examples/
	[ -e $(DESTDIR)$(SYSCONFDIR)/mosgw/mosgw.ini ] || \
	    install -m 644 packaging/mosgw.ini $(DESTDIR)$(SYSCONFDIR)/mosgw/
	[ -e $(DESTDIR)$(SYSCONFDIR)/mosgw/api-tokens ] || \
	    install -m 600 packaging/api-tokens $(DESTDIR)$(SYSCONFDIR)/mosgw/

# The configuration stays (as a package's would until purged).
uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(TOOLS))) \
	    $(DESTDIR)$(SBINDIR)/mosgw
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MAN1))) \
	    $(addprefix $(DESTDIR)$(MANDIR)/man5/,$(notdir $(MAN5))) \
	    $(addprefix $(DESTDIR)$(MANDIR)/man8/,$(notdir $(MAN8)))
	rm -rf $(DESTDIR)$(DOCDIR)

clean:
	rm -rf build bin $(CLEAN_EXTRA)

help:
	@echo "targets: all check conformance run bench faults soak asan valgrind fuzz lint install uninstall clean"

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)
