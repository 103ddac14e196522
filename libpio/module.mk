# libpio/module.mk - the client library (static and shared).
PIO_VERSION   := 0.1.0
PIO_SOVERSION := 0

# libpio.a and libpio.so carry the layers below libpio too (the shared
# base and the transports): a program links one library. Each layer's
# sources are compiled with that layer's include path (Makefile, inc).
LIBPIO_SRCS := libpio/pio.c libpio/version.c libpio/reader.c libpio/sendrecv.c libpio/lane.c libpio/win.c libpio/winctl.c libpio/info.c \
               libpio/file.c libpio/feed.c
BASE_SRCS   := common/memtrim.c common/cli.c common/capture.c common/fstream.c common/error.c common/types.c \
               common/parse.c common/pool.c common/wire/wire.c common/wire/pcp_proto.c \
               common/wire/viz_proto.c common/sdnotify.c common/seal.c common/seal_imb.c \
               common/seal_sodium.c common/seal_list_lib.c
# The rdma transport (UCX) is linked, and registered (transport/registry.c,
# PIO_HAVE_UCX), only with WITH_UCX=1.
TRANSPORT_SRCS := transport/registry.c transport/addr.c transport/tcp/tcp.c \
               $(if $(filter 1,$(WITH_UCX)),transport/rdma/ucx.c transport/rdma/rma.c transport/rdma/stream.c)
# Direct lanes seal with intel-ipsec-mb's AES-GCM where it is installed (as
# piod does), else with libsodium (common/seal_list_lib.c).
# LIBPIO_LIBS: what libpio.a needs beyond the pkg-config modules of PKG_DEPS
# (`make pkg-libs` prints it; pio.pc's Libs.private carries it).
LIBPIO_IMB  := $(if $(wildcard /usr/include/intel-ipsec-mb.h),1)
LIBPIO_LIBS := $(if $(LIBPIO_IMB),-lIPSec_MB)
LDLIBS += $(LIBPIO_LIBS)
LIBPIO_OBJS := $(patsubst %.c,$(B)/%.o,$(LIBPIO_SRCS) $(BASE_SRCS) $(TRANSPORT_SRCS))
LIBPIO_A    := $(B)/lib/libpio.a
LIBPIO_SO   := $(B)/lib/libpio.so
OBJS += $(LIBPIO_OBJS)
PC_FILES += libpio/pio.pc.in
$(B)/transport/registry.o: CPPFLAGS += $(if $(filter 1,$(WITH_UCX)),-DPIO_HAVE_UCX)

$(LIBPIO_A): $(LIBPIO_OBJS)
	@mkdir -p $(@D)
	$(call msg,AR,$@)rm -f $@ && ar rcs $@ $^

# Only the API of pio.h leaves libpio.so: its objects are built with hidden
# visibility (pio.h declares its functions default) and the export list
# names PIO_* alone (tests/bats/build.bats checks it with nm -D).
$(LIBPIO_OBJS): CFLAGS += -fvisibility=hidden
$(LIBPIO_SO): $(LIBPIO_OBJS) libpio/libpio.map
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) -shared -Wl,-soname,libpio.so.$(PIO_SOVERSION) \
	  -Wl,--version-script=libpio/libpio.map $(LDFLAGS) -o $@ $(LIBPIO_OBJS) $(LDLIBS)
# the soname beside it, so that what links libpio.so in the tree (the Python
# package's extension, say) finds it by its run path, as installed
LIBPIO_SONAME := $(B)/lib/libpio.so.$(PIO_SOVERSION)
$(LIBPIO_SONAME): $(LIBPIO_SO)
	$(Q)ln -sf libpio.so $@
INSTALL_INCLUDES += libpio/pio_mpi.h
