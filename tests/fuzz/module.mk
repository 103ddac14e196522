# tests/fuzz/module.mk - run the fuzz targets, and grow their corpora from
# real traffic. The targets themselves (FUZZ_BINS) come from the components'
# module.mk files; flags from common/wire/module.mk.
#
#   make fuzz [FUZZ_TIME=60] [FUZZ_TARGETS="wire pfs ..."]
#        build every target, run each FUZZ_TIME seconds from its committed
#        corpus (tests/fuzz/corpus/NAME), print runs, exec/s, coverage and
#        crashes per target, write $(B)/fuzz/results.csv; a crash input is
#        kept under tests/fuzz/crashes/NAME/ (commit it with the fix: `make
#        test` replays it for good). Exit 1 when a target crashed.
#   make fuzz-build      the targets only (tests/bats/fuzz.bats)
#   make fuzz-corpus     run the loopback and test-bed suites with
#        PIO_CAPTURE_DIR set (every decoder records its inputs), then merge
#        what they recorded into tests/fuzz/corpus/ (libFuzzer -merge=1:
#        only inputs that add coverage are kept).
FUZZ_TIME    ?= 60
FUZZ_TARGETS ?= $(patsubst $(B)/fuzz/fuzz_%,%,$(FUZZ_BINS))

.PHONY: fuzz fuzz-build fuzz-corpus
fuzz-build: $(FUZZ_BINS) $(B)/fuzz/fuzz_seeds

fuzz: fuzz-build
	@FUZZ_DIR=$(B)/fuzz FUZZ_TIME=$(FUZZ_TIME) tests/fuzz/run.sh $(FUZZ_TARGETS)

fuzz-corpus: fuzz-build all
	@FUZZ_DIR=$(B)/fuzz BUILD=$(B) tests/fuzz/corpus.sh $(FUZZ_TARGETS)
