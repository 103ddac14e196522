# piod/module.mk - the daemon. Everything but main.c also goes into an
# internal archive (libpiod.a) that the unit tests link.
# the seal (common/seal*.c) lives in common/ for libpio's direct lane too
SEAL_SRCS := common/seal.c common/seal_evp.c common/seal_imb.c common/seal_list_piod.c
PIOD_SRCS := $(filter-out piod/main.c piod/fuzz_%.c,$(wildcard piod/*.c)) $(SEAL_SRCS)
PIOD_OBJS := $(PIOD_SRCS:%.c=$(B)/%.o)
LIBPIOD_A := $(B)/lib/libpiod.a
PIOD_BIN  := $(B)/sbin/piod
SBINS += $(PIOD_BIN)
OBJS  += $(PIOD_OBJS) $(B)/piod/main.o

$(LIBPIOD_A): $(PIOD_OBJS)
	@mkdir -p $(@D)
	$(call msg,AR,$@)rm -f $@ && ar rcs $@ $^

# Sealing (common/seal*.c): libcrypto always; intel-ipsec-mb, AES-GCM's
# fastest backend on x86-64, where it is installed (mk/deps.sh installs it
# on amd64).
PIOD_IMB := $(if $(wildcard /usr/include/intel-ipsec-mb.h),1)
PIOD_CRYPTO_LIBS := $(call pkg,--libs,libcrypto) $(if $(PIOD_IMB),-lIPSec_MB)
$(B)/common/seal_imb.o: CPPFLAGS += $(if $(PIOD_IMB),-DPIO_HAVE_IMB)
$(PIOD_BIN): LDLIBS += $(PIOD_CRYPTO_LIBS)

$(PIOD_BIN): $(B)/piod/main.o $(LIBPIOD_A) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# `make fuzz`: $(B)/fuzz/fuzz_config (piod.conf, and the other parsers of
# configuration text) and $(B)/fuzz/fuzz_relay (the relay header); flags
# from common/wire/module.mk. Their sources are kept out of PIOD_SRCS.
FUZZ_BINS += $(B)/fuzz/fuzz_config $(B)/fuzz/fuzz_relay
$(B)/fuzz/fuzz_config: piod/fuzz_config.c piod/config.c piod/config_check.c piod/config.h \
  piod/config_int.h common/parse.c $(FUZZ_CAPTURE) piod/module.mk
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)$(FUZZ_CC) -fsanitize=fuzzer,address $(FUZZ_CFLAGS) -o $@ \
	  piod/fuzz_config.c piod/config.c piod/config_check.c common/parse.c $(FUZZ_CAPTURE) \
	  $(FUZZ_LIBS)
$(B)/fuzz/fuzz_relay: piod/fuzz_relay.c piod/relayhdr.c piod/relayhdr.h $(FUZZ_CAPTURE) \
  piod/module.mk
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)$(FUZZ_CC) -fsanitize=fuzzer,address $(FUZZ_CFLAGS) -o $@ \
	  piod/fuzz_relay.c piod/relayhdr.c $(FUZZ_CAPTURE) $(FUZZ_LIBS)
