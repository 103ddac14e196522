# Makefile - the one non-recursive build of PIO.
# SPDX-License-Identifier: BSD-3-Clause
#
# Each component adds its sources and targets in its own module.mk; this file
# owns flags, build folders, dependencies (-MMD), sanitizer builds and the
# user-facing targets. Objects go under build/<variant>/ mirroring the source
# tree, so `make SANITIZER=address` never mixes objects with the plain build.
#
#   make [-j2] [V=1] [SANITIZER=address|undefined|thread|address+undefined]
#   make test | demo | demo-viz | bench | deps | install PREFIX=... | format-check | clean
#   make fuzz [FUZZ_TIME=60] | fuzz-corpus (tests/fuzz/module.mk) | soak [DURATION=1800]
#
# `make test` (what CI runs) also builds the unit tests, piod and the tools
# once more with ASan+UBSan (build/asan-ubsan) and runs the unit tests and
# the loopback suites again from there (SAN_PASS_FILTER; SAN_PASS=0 skips
# it). Under SANITIZER=... the whole run already is sanitized: no second pass.

.DEFAULT_GOAL := all
SHELL := /bin/bash

PREFIX  ?= /usr/local
DESTDIR ?=
V       ?= 0
SANITIZER ?=

ifeq ($(SANITIZER),)
  VARIANT := default
  SANFLAGS :=
else ifeq ($(SANITIZER),address)
  VARIANT := asan
  SANFLAGS := -fsanitize=address -fno-omit-frame-pointer
else ifeq ($(SANITIZER),undefined)
  VARIANT := ubsan
  SANFLAGS := -fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else ifeq ($(SANITIZER),thread)
  VARIANT := tsan
  SANFLAGS := -fsanitize=thread
else ifeq ($(SANITIZER),address+undefined)
  VARIANT := asan-ubsan
  SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else
  $(error unknown SANITIZER '$(SANITIZER)': use address, undefined, thread or address+undefined)
endif

B := build/$(VARIANT)

CC  ?= cc
ifeq ($(origin CC),default)
  CC := gcc
endif
CXX := g++
FC  := gfortran
OPT ?= -O2

# External libraries, through pkg-config only.
PKG_DEPS := libzmq libsodium libxxhash ucx
pkg = $(shell pkg-config $(1) $(2) 2>/dev/null)

WARN     := -Wall -Wextra -Werror
CPPFLAGS := -D_GNU_SOURCE -MMD -MP

# Include paths by layer (docs/architecture.md, "Layers"). A source file sees
# its own folder and what its component may use, nothing else, so including
# another layer's private header stops the build (tests/bats/build.bats
# compiles a throw-away file to prove it; `make inc-check`). The public
# header is copied to $(B)/include and libpio's second tier (pio_svc.h) to
# $(B)/include-svc, so that a path can hold them without the rest of libpio/.
#   common/     the shared base: errors, clock, parsing, pools, frame
#               streams, types, capture, memtrim, tsan, interposition, and
#               the wire formats (common/wire/) piod, libpio and the servers
#               share
#   transport/  the stream and one-sided transports: the shared base only
#   libpio/ piod/   the transports and the shared base
#   pfs/ anco/ viz/ tools/   clients: pio.h, pio_svc.h and the shared base
#   examples/ bindings/      pio.h (and the generated Fortran glue) only
#   bench/      clients, plus pio-perf's measuring code and anco's API
#   tests/      white box: everything, spelled from the top (piod/log.h)
PUB_INC  := $(B)/include
SVC_INC  := $(B)/include-svc
PUB_HDRS := $(PUB_INC)/pio.h $(SVC_INC)/pio_svc.h
INC_common    := -Icommon -I$(PUB_INC)
INC_transport := -Itransport $(INC_common)
INC_libpio    := -Ilibpio $(INC_transport)
INC_piod      := -Ipiod $(INC_transport)
INC_client    := $(INC_common) -I$(SVC_INC)
INC_pfs       := -Ipfs $(INC_client)
INC_anco      := -Ianco $(INC_client)
INC_viz       := -Iviz $(INC_client)
INC_tools     := $(INC_client)
INC_bench     := $(INC_client) -Itools/pio-perf -Ianco
INC_examples  := -I$(PUB_INC)
INC_bindings  := -I$(PUB_INC)
INC_tests     := -I. -Icommon -Itransport -Ilibpio -Ipiod -Ipfs -Ianco -I$(PUB_INC)
# inc - the include path of source file $(1), by its top folder
inc = $(INC_$(firstword $(subst /, ,$(1))))
CFLAGS   := -std=c11 $(WARN) $(OPT) -g -fPIC -pthread $(SANFLAGS) $(call pkg,--cflags,$(PKG_DEPS)) $(EXTRA_CFLAGS)
LDFLAGS  := -pthread $(SANFLAGS) $(EXTRA_LDFLAGS)
LDLIBS   := $(call pkg,--libs,$(PKG_DEPS)) -lrt

ifeq ($(V),1)
  Q :=
  msg :=
else
  Q := @
  msg = @printf '  %-6s %s\n' $(1) $(2);
endif

# Rebuild everything when the flags change (Redis' .make-settings).
SETTINGS := $(B)/.make-settings
SETTINGS_NOW := CC=$(CC) CFLAGS=$(CFLAGS) LDFLAGS=$(LDFLAGS) CPPFLAGS=$(CPPFLAGS) \
  INC=$(foreach v,$(filter INC_%,$(.VARIABLES)),$(v):$($(v)))
$(shell mkdir -p $(B); [ -f $(SETTINGS) ] && [ "$$(cat $(SETTINGS))" = "$(SETTINGS_NOW)" ] || echo "$(SETTINGS_NOW)" > $(SETTINGS))

# Filled in by the module.mk fragments.
OBJS :=
BINS :=          # commands, installed under bin/
SBINS :=         # daemons, installed under sbin/
UNIT_TESTS :=    # cmocka binaries run by tests/run
TEST_BINS :=     # helper programs the tests use
MANS :=          # Markdown man pages (docs/man/NAME.SECTION.md)
INSTALL_LIBS :=      # more libraries installed under lib/ (libpiof.a)
INSTALL_INCLUDES :=  # more files installed under include/ (pio.mod)
INSTALL_SOS :=       # shared objects installed under lib/ as they are (libpgas.so)
INSTALL_VERSIONED_SOS := # shared libraries installed as NAME.so.VERSION with links (libpfs.so)

include libpio/module.mk
include common/wire/module.mk
include bindings/fortran/module.mk
include piod/module.mk
include tools/module.mk
include tools/pcp/module.mk
include pfs/module.mk
include anco/module.mk
include viz/module.mk
include tests/module.mk
include docs/module.mk
# optional fragments: present when their component exists
include $(wildcard tests/conformance/module.mk examples/module.mk examples/fortran/module.mk \
  bench/module.mk tests/fuzz/module.mk)

$(B)/%.o: %.c $(SETTINGS) | $(PUB_HDRS)
	@mkdir -p $(@D)
	$(call msg,CC,$<)$(CC) $(CPPFLAGS) $(call inc,$<) $(CFLAGS) -c -o $@ $<

$(PUB_INC)/%.h: libpio/%.h
	@mkdir -p $(@D)
	$(call msg,CP,$@)cp $< $@
$(SVC_INC)/%.h: libpio/%.h
	@mkdir -p $(@D)
	$(call msg,CP,$@)cp $< $@

# `make inc-check SRC=pfs/x.c PROBE=/tmp/probe.c`: compile PROBE (syntax
# only) with the include path that SRC's component gets. tests/bats/build.bats
# uses it to show that a forbidden include stops the build.
.PHONY: inc-check
inc-check: $(PUB_HDRS)
	$(Q)$(CC) $(CPPFLAGS) $(call inc,$(SRC)) $(CFLAGS) -fsyntax-only -o /dev/null $(PROBE)

.PHONY: all deps test demo demo-viz bench install uninstall clean format format-check check-root
all: $(LIBPIO_A) $(LIBPIO_SO) $(INSTALL_LIBS) $(INSTALL_SOS) $(INSTALL_VERSIONED_SOS) $(INSTALL_INCLUDES) $(BINS) $(SBINS) $(UNIT_TESTS) \
  $(TEST_BINS) $(MAN_ROFF)

deps:
	@mk/deps.sh

# The second pass of `make test`: what it builds and which cases it runs.
SAN_PASS        ?= 1
SAN_PASS_FILTER ?= ^(unit/|bats/(pio_loopback|pio_errors|pio_paths|piod_cli|pio_seal|hostile)$$)
SAN_SUBSET      := $(UNIT_TESTS) $(PIOD_BIN) $(B)/bin/pio-info $(B)/bin/pcp $(B)/sbin/pio-files \
                   $(PROG_SRCS:%.c=$(B)/%)
.PHONY: san-subset
san-subset: $(SAN_SUBSET)

# test and demo install what is missing, build, then run.
test:
	@mk/deps.sh
	@$(MAKE) --no-print-directory -j2 all
ifeq ($(SANITIZER)$(SAN_PASS),1)
	@$(MAKE) --no-print-directory -j2 SANITIZER=address+undefined B=build/asan-ubsan san-subset
	@BUILD=$(B) PIO_SAN_BUILD=build/asan-ubsan PIO_SAN_FILTER='$(SAN_PASS_FILTER)' tests/run
else
	@BUILD=$(B) tests/run
endif

demo:
	@mk/deps.sh
	@$(MAKE) --no-print-directory -j2 all
	@BUILD=$(B) examples/demo.sh

demo-viz:
	@mk/deps.sh
	@$(MAKE) --no-print-directory -j2 all
	@BUILD=$(B) examples/demo-viz.sh

bench:
	@mk/deps.sh
	@$(MAKE) --no-print-directory -j2 all OPT=-O3
	@BUILD=$(B) bench/run-all.sh; rc=$$?; \
	  python3 bench/report.py bench/results/summary.txt docs/performance.md || rc=1; exit $$rc

# make soak [DURATION=1800]: all clients at once on the test bed with random
# link cuts, every byte checked, throughput and daemon memory over time
# (bench/soak.sh; never part of make test).
DURATION ?= 1800
.PHONY: soak
soak:
	@mk/deps.sh
	@$(MAKE) --no-print-directory -j2 all
	@BUILD=$(B) SOAK_DURATION=$(DURATION) bench/soak.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/sbin
	install -m 644 $(LIBPIO_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBPIO_SO) $(DESTDIR)$(PREFIX)/lib/libpio.so.$(PIO_VERSION)
	ln -sf libpio.so.$(PIO_VERSION) $(DESTDIR)$(PREFIX)/lib/libpio.so.$(PIO_SOVERSION)
	ln -sf libpio.so.$(PIO_SOVERSION) $(DESTDIR)$(PREFIX)/lib/libpio.so
	install -m 644 libpio/pio.h $(INSTALL_INCLUDES) $(DESTDIR)$(PREFIX)/include/
	$(if $(strip $(INSTALL_LIBS)),install -m 644 $(INSTALL_LIBS) $(DESTDIR)$(PREFIX)/lib/)
	$(if $(strip $(INSTALL_SOS)),install -m 755 $(INSTALL_SOS) $(DESTDIR)$(PREFIX)/lib/)
	@for so in $(INSTALL_VERSIONED_SOS); do n=$${so##*/}; \
	  install -m 755 $$so $(DESTDIR)$(PREFIX)/lib/$$n.$(PIO_VERSION) && \
	  ln -sf $$n.$(PIO_VERSION) $(DESTDIR)$(PREFIX)/lib/$$n.$(PIO_SOVERSION) && \
	  ln -sf $$n.$(PIO_SOVERSION) $(DESTDIR)$(PREFIX)/lib/$$n; done
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@VERSION@|$(PIO_VERSION)|; s|@REQUIRES@|$(PKG_DEPS)|' \
	  libpio/pio.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/pio.pc
	$(if $(strip $(BINS)),install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/)
	$(if $(strip $(SBINS)),install -m 755 $(SBINS) $(DESTDIR)$(PREFIX)/sbin/)
	@for m in $(MAN_ROFF); do s=$${m##*.}; install -d $(DESTDIR)$(PREFIX)/share/man/man$$s; \
	  install -m 644 $$m $(DESTDIR)$(PREFIX)/share/man/man$$s/; done

FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' '*.cc' '*.cpp' 2>/dev/null)
format:
	clang-format -i $(FORMAT_SRCS)
format-check:
	@clang-format --dry-run --Werror $(FORMAT_SRCS) && echo "format-check: $(words $(FORMAT_SRCS)) files clean"

clean:
	rm -rf build

.SECONDARY:
-include $(OBJS:.o=.d)
