# common/wire/module.mk - fuzz targets for the decoders (make fuzz).
# SPDX-License-Identifier: BSD-3-Clause
#
# Every decoder that reads bytes from outside has a libFuzzer + ASan target,
# built with clang, never as part of `all`. This file owns the common flags
# and libpio's targets; each component adds its own to FUZZ_BINS in its
# module.mk (tools/pcp, viz, pfs, pfs/gas, piod). tests/fuzz/module.mk runs
# them (`make fuzz`, `make fuzz-corpus`).
#   $(B)/fuzz/fuzz_wire     pio_wire_decode/peek: every P_*, H_*, C_* frame
#   $(B)/fuzz/fuzz_fstream  frames out of a byte stream (pio_fin), then decoded
#   $(B)/fuzz/fuzz_win      the window control messages (winctl.h)
#   $(B)/fuzz/fuzz_seeds    writes a valid frame of every type into a directory
#                           (synthetic seeds): $(B)/fuzz/fuzz_seeds CORPUS_DIR
# The sources are compiled directly (not the gcc objects of libpio.a), so the
# whole decoder carries libFuzzer's coverage instrumentation; capture.c comes
# along (the decoders call pio_capture; off unless PIO_CAPTURE_DIR is set).
FUZZ_CC      ?= clang
FUZZ_CFLAGS  := -O1 -g -std=c11 -D_GNU_SOURCE $(INC_tests) -Wall -Wextra $(WERR) \
                $(call pkg,--cflags,libxxhash)
FUZZ_LIBS    := $(call pkg,--libs,libxxhash)
FUZZ_CAPTURE := common/capture.c
FUZZ_COMMON  := common/wire/wire.c common/error.c common/types.c $(FUZZ_CAPTURE)
FUZZ_HDRS    := common/wire/wire.h libpio/pio.h common/err.h common/types.h common/capture.h $(PUB_HDRS)
FUZZ_BINS    := $(B)/fuzz/fuzz_wire $(B)/fuzz/fuzz_fstream $(B)/fuzz/fuzz_win

$(B)/fuzz/fuzz_wire: common/wire/fuzz_wire.c $(FUZZ_COMMON) $(FUZZ_HDRS) common/wire/module.mk
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)$(FUZZ_CC) -fsanitize=fuzzer,address $(FUZZ_CFLAGS) -o $@ \
	  common/wire/fuzz_wire.c $(FUZZ_COMMON) $(FUZZ_LIBS)

$(B)/fuzz/fuzz_fstream: common/fuzz_fstream.c common/fstream.c common/fstream.h $(FUZZ_COMMON) \
  $(FUZZ_HDRS) common/wire/module.mk
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)$(FUZZ_CC) -fsanitize=fuzzer,address $(FUZZ_CFLAGS) -o $@ \
	  common/fuzz_fstream.c common/fstream.c $(FUZZ_COMMON) $(FUZZ_LIBS)

$(B)/fuzz/fuzz_win: libpio/fuzz_win.c libpio/winctl.c libpio/winctl.h $(FUZZ_CAPTURE) \
  common/wire/module.mk
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)$(FUZZ_CC) -fsanitize=fuzzer,address $(FUZZ_CFLAGS) -o $@ \
	  libpio/fuzz_win.c libpio/winctl.c $(FUZZ_CAPTURE) $(FUZZ_LIBS)

$(B)/fuzz/fuzz_seeds: common/wire/fuzz_seeds.c $(FUZZ_COMMON) $(FUZZ_HDRS) common/wire/module.mk
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)$(FUZZ_CC) -fsanitize=address $(FUZZ_CFLAGS) -o $@ \
	  common/wire/fuzz_seeds.c $(FUZZ_COMMON) $(FUZZ_LIBS)
