# bench/module.mk - benchmark helper programs: bench/NAME.c -> $(B)/bench/NAME (no libpio).
# SPDX-License-Identifier: BSD-3-Clause
# tcp_pingpong is the plain-socket baseline of bench/pingpong.sh; the scripts
# themselves (bench/*.sh) run from `make bench` (bench/run-all.sh).
BENCH_PROGS := tcp_pingpong
BENCH_BINS  := $(BENCH_PROGS:%=$(B)/bench/%)
TEST_BINS   += $(BENCH_BINS)
OBJS        += $(BENCH_PROGS:%=$(B)/bench/%.o)

# the size syntax and data pattern are pio-perf's own (one parser for both)
$(BENCH_BINS): $(B)/bench/%: $(B)/bench/%.o $(B)/tools/pio-perf/perf_sizes.o
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^
