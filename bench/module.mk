# bench/module.mk - benchmark helper programs: bench/NAME.c -> $(B)/bench/NAME.
# SPDX-License-Identifier: BSD-3-Clause
# tcp_pingpong is the plain-socket baseline of bench/pingpong.sh (no libpio);
# skew is the sender/receiver of bench/skew.sh (linked with libpio). The
# scripts themselves (bench/*.sh) run from `make bench` (bench/run-all.sh).
BENCH_PROGS := tcp_pingpong
BENCH_BINS  := $(BENCH_PROGS:%=$(B)/bench/%)
TEST_BINS   += $(BENCH_BINS) $(B)/bench/skew
OBJS        += $(BENCH_PROGS:%=$(B)/bench/%.o) $(B)/bench/skew.o

# the size syntax and data pattern are pio-perf's own (one parser for both)
$(BENCH_BINS): $(B)/bench/%: $(B)/bench/%.o $(B)/tools/pio-perf/perf_sizes.o
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^

$(B)/bench/skew: $(B)/bench/skew.o $(LIBPIO_A)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $< $(LIBPIO_A) $(LDLIBS)
