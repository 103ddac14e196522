# Makefile - the one non-recursive build of PIO.
# SPDX-License-Identifier: BSD-3-Clause
#
# Each component adds its sources and targets in its own module.mk; this file
# owns flags, build folders, dependencies (-MMD), sanitizer builds, the
# optional parts and the user-facing targets. Objects go under
# build/<variant>/ mirroring the source tree, so `make SANITIZER=address`
# never mixes objects with the plain build.
#
#   make [-j2] [V=1] [SANITIZER=address|undefined|thread|address+undefined] [WERROR=1]
#        [WITH_VIZ=0|1] [WITH_FORTRAN=0|1] [WITH_UCX=0|1] [CC=...] [CXX=...] [FC=...] [VTK_DIR=...]
#   make test | demo | demo-viz | bench | deps | format-check | clean
#   make programs | install | uninstall  [PREFIX=/usr/local] [DESTDIR=...] (mk/install.mk)
#   make fuzz [FUZZ_TIME=60] | fuzz-corpus (tests/fuzz/module.mk) | soak [DURATION=1800]
#
# Optional parts, each on by default (a build never drops a part silently: a
# missing dependency stops it with the switch to turn off): WITH_VIZ
# (pio-vizd, VTK and libmicrohttpd), WITH_FORTRAN (module pio, libpiof.a, the
# Fortran examples and tests; needs FC), WITH_UCX (the "rdma" transport and
# one-sided windows, libucp). With all three off, libpio, piod and the tools
# need ZeroMQ, libsodium and xxHash (piod also libcrypto for sealing, and the
# file service serial HDF5). CC, CXX and FC come from the environment (or the
# command line); make's built-in defaults become gcc, g++ and gfortran.
# -Werror only with WERROR=1; `make test` (what CI runs) sets it.
#
# `make test` (what CI runs) also builds the unit tests, piod and the tools
# once more with ASan+UBSan (build/asan-ubsan) and runs the unit tests and
# the loopback suites again from there (SAN_PASS_FILTER; SAN_PASS=0 skips
# it). Under SANITIZER=... the whole run already is sanitized: no second pass.

.DEFAULT_GOAL := all
SHELL := /bin/bash

V       ?= 0
SANITIZER ?=

# The optional parts (above); each switch is 0 or 1.
WITH_VIZ     ?= 1
WITH_FORTRAN ?= 1
WITH_UCX     ?= 1
# -Werror only when asked for; `make test` asks (CI), and passes it on to
# every make the tests run (exported), so their builds match this one.
ifneq ($(filter test,$(MAKECMDGOALS)),)
  WERROR ?= 1
endif
WERROR ?= 0
export WERROR
$(foreach w,WITH_VIZ WITH_FORTRAN WITH_UCX WERROR,$(if $(filter-out 0 1,$($(w))),\
  $(error $(w)=$($(w)): give 0 or 1)))

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

# Compilers: from the environment or the command line; make's built-in
# defaults (cc, g++, f77) become gcc, g++ and gfortran.
ifeq ($(origin CC),default)
  CC := gcc
endif
ifeq ($(origin CXX),default)
  CXX := g++
endif
ifeq ($(origin FC),default)
  FC := gfortran
endif
OPT ?= -O2

# External libraries, through pkg-config only.
PKG_DEPS := libzmq libsodium libxxhash $(if $(filter 1,$(WITH_UCX)),ucx)
pkg = $(shell pkg-config $(1) $(2) 2>/dev/null)
# json-c: the JSON the commands write (common/cli_json.c). Only the
# commands link it (CLI_JSON_OBJ, JSONC_LIBS), not libpio: not in PKG_DEPS.
JSONC_LIBS := $(call pkg,--libs,json-c)
CLI_JSON_OBJ = $(B)/common/cli_json.o
# need_pkg SWITCH,MODULES,DEBIAN PACKAGES: stop the build when a switch's
# pkg-config modules are missing (only when that part is built at all)
need_pkg = $(if $(shell pkg-config --exists $(2) 2>/dev/null || echo no),\
  $(error $(1)=1 needs $(2) (pkg-config): install $(3), or build with $(1)=0))
# Goals that build nothing here (test, demo, ... install their dependencies
# first and build in a second make): no dependency is checked or probed for
# them, so that `make test` on a new machine reaches `make deps`.
NOBUILD_GOALS := clean deps format format-check test demo demo-viz bench soak uninstall
BUILDING := $(filter-out $(NOBUILD_GOALS),$(or $(MAKECMDGOALS),all))
ifneq ($(BUILDING),)
  ifeq ($(shell pkg-config --exists json-c 2>/dev/null || echo no),no)
    $(error the commands need json-c (pkg-config json-c): install libjson-c-dev (make deps))
  endif
  ifeq ($(WITH_UCX),1)
    $(call need_pkg,WITH_UCX,ucx,libucx-dev)
  endif
  ifeq ($(WITH_VIZ),1)
    $(call need_pkg,WITH_VIZ,libmicrohttpd,libmicrohttpd-dev)
  endif
  ifeq ($(WITH_FORTRAN),1)
    ifeq ($(shell command -v $(firstword $(FC))),)
      $(error WITH_FORTRAN=1 needs a Fortran compiler: FC=$(FC) is not found; install gfortran, \
        give FC=..., or build with WITH_FORTRAN=0)
    endif
  endif
endif

WERR     := $(if $(filter 1,$(WERROR)),-Werror)
WARN     := -Wall -Wextra $(WERR)
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
CFLAGS   := -std=c11 $(WARN) $(OPT) -g -fPIC -pthread $(SANFLAGS) $(call pkg,--cflags,$(PKG_DEPS) json-c) $(EXTRA_CFLAGS)
LDFLAGS  := -pthread $(SANFLAGS) $(EXTRA_LDFLAGS)
LDLIBS   := $(call pkg,--libs,$(PKG_DEPS)) -lrt

ifeq ($(V),1)
  Q :=
  msg :=
else
  Q := @
  msg = @printf '  %-6s %s\n' $(1) $(2);
endif

# Rebuild everything when the flags change (Redis' .make-settings; the file
# is written after the fragments are read: which VTK viz/module.mk found
# counts too).
SETTINGS := $(B)/.make-settings

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
PC_FILES :=          # pkg-config templates (NAME.pc.in), installed as NAME.pc (mk/install.mk)

include libpio/module.mk
include common/wire/module.mk
# the optional parts (WITH_FORTRAN, WITH_VIZ): their fragments are simply not read
ifeq ($(WITH_FORTRAN),1)
include bindings/fortran/module.mk
endif
include piod/module.mk
include tools/module.mk
include tools/pcp/module.mk
include pfs/module.mk
include anco/module.mk
ifeq ($(WITH_VIZ),1)
include viz/module.mk
endif
include tests/module.mk
include docs/module.mk
# optional fragments: present when their component exists
include $(wildcard tests/conformance/module.mk examples/module.mk bench/module.mk tests/fuzz/module.mk)
ifeq ($(WITH_FORTRAN),1)
include $(wildcard examples/fortran/module.mk)
endif
include mk/install.mk

SETTINGS_NOW := CC=$(CC) CFLAGS=$(CFLAGS) LDFLAGS=$(LDFLAGS) CPPFLAGS=$(CPPFLAGS) \
  CXX=$(CXX) FC=$(FC) WITH=$(WITH_VIZ)$(WITH_FORTRAN)$(WITH_UCX) VTK=$(VTK_SOURCE) \
  INC=$(foreach v,$(filter INC_%,$(.VARIABLES)),$(v):$($(v)))
$(shell mkdir -p $(B); [ -f $(SETTINGS) ] && [ "$$(cat $(SETTINGS))" = "$(SETTINGS_NOW)" ] || echo "$(SETTINGS_NOW)" > $(SETTINGS))

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

.PHONY: all deps test demo demo-viz bench clean format format-check check-root
all: $(PROGRAMS) $(UNIT_TESTS) $(TEST_BINS) $(MAN_ROFF)

deps:
	@mk/deps.sh

# the pkg-config modules a program that links libpio.a needs (tests use it)
.PHONY: pkg-deps pkg-libs
pkg-deps:
	@echo $(PKG_DEPS)
pkg-libs:
	@echo $(LIBPIO_LIBS)

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

FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' '*.cc' '*.cpp' 2>/dev/null)
format:
	clang-format -i $(FORMAT_SRCS)
format-check:
	@clang-format --dry-run --Werror $(FORMAT_SRCS) && echo "format-check: $(words $(FORMAT_SRCS)) files clean"

clean:
	rm -rf build

.SECONDARY:
-include $(OBJS:.o=.d)
