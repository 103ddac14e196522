# libpio/wire/module.mk - fuzz targets for the wire decoders (make fuzz).
# SPDX-License-Identifier: BSD-3-Clause
#
# `make fuzz` builds, with clang, never as part of `all`:
#   $(B)/fuzz/fuzz_wire   libFuzzer + ASan target for pio_wire_decode/peek:
#                         $(B)/fuzz/fuzz_wire -max_total_time=60 CORPUS_DIR
#   $(B)/fuzz/fuzz_seeds  writes a valid frame of every type into a directory
#                         (the seed corpus): $(B)/fuzz/fuzz_seeds CORPUS_DIR
# The sources are compiled directly (not the gcc objects of libpio.a), so the
# whole decoder carries libFuzzer's coverage instrumentation.
FUZZ_CC     ?= clang
FUZZ_CFLAGS := -O1 -g -std=c11 -D_GNU_SOURCE -Ilibpio -I. -Wall -Wextra -Werror \
               $(call pkg,--cflags,libxxhash)
FUZZ_LIBS   := $(call pkg,--libs,libxxhash)
FUZZ_COMMON := libpio/wire/wire.c libpio/error.c libpio/types.c
FUZZ_HDRS   := libpio/wire/wire.h libpio/pio.h libpio/err.h libpio/types.h

.PHONY: fuzz
fuzz: $(B)/fuzz/fuzz_wire $(B)/fuzz/fuzz_seeds

$(B)/fuzz/fuzz_wire: libpio/wire/fuzz_wire.c $(FUZZ_COMMON) $(FUZZ_HDRS) libpio/wire/module.mk
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)$(FUZZ_CC) -fsanitize=fuzzer,address $(FUZZ_CFLAGS) -o $@ \
	  libpio/wire/fuzz_wire.c $(FUZZ_COMMON) $(FUZZ_LIBS)

$(B)/fuzz/fuzz_seeds: libpio/wire/fuzz_seeds.c $(FUZZ_COMMON) $(FUZZ_HDRS) libpio/wire/module.mk
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)$(FUZZ_CC) -fsanitize=address $(FUZZ_CFLAGS) -o $@ \
	  libpio/wire/fuzz_seeds.c $(FUZZ_COMMON) $(FUZZ_LIBS)
