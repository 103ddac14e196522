# viz/module.mk - the visualization receiver pio-vizd (C++17 with VTK 9.1).
# (The simulation's side, libpio/feed.c, and the protocol both sides speak,
# common/wire/viz_proto.c, are in libpio.)
# SPDX-License-Identifier: BSD-3-Clause
#
# VTK has no pkg-config file on Debian: its headers are in VTK_INC and its
# libraries are named libvtkNAME-9.1. pio-vizd links VTK (which brings the
# serial HDF5), libmicrohttpd and libzmq; never parallel HDF5.
CXX      ?= g++
VTK_VER  := 9.1
VTK_INC  := /usr/include/vtk-$(VTK_VER)
VTK_MODS := CommonCore CommonDataModel CommonExecutionModel CommonMisc IOXML IOXMLParser IOImage \
            FiltersCore FiltersGeneral FiltersGeometry ImagingCore RenderingCore \
            RenderingOpenGL2 RenderingFreeType RenderingAnnotation InteractionStyle
VTK_LIBS := $(VTK_MODS:%=-lvtk%-$(VTK_VER))
VIZ_CXXFLAGS := -std=c++17 $(WARN) $(OPT) -g -pthread $(SANFLAGS) -isystem $(VTK_INC) \
                $(INC_viz) $(call pkg,--cflags,libzmq libmicrohttpd)
VIZ_LIBS := $(VTK_LIBS) $(call pkg,--libs,libmicrohttpd libzmq)

VIZD_SRCS := $(wildcard viz/*.cpp)
VIZD_OBJS := $(VIZD_SRCS:%.cpp=$(B)/%.o)
VIZD      := $(B)/bin/pio-vizd
BINS      += $(VIZD)
OBJS      += $(VIZD_OBJS)

$(B)/viz/%.o: viz/%.cpp viz/vizd.h viz/outputs.h $(SETTINGS) | $(PUB_HDRS)
	@mkdir -p $(@D)
	$(call msg,CXX,$<)$(CXX) $(VIZ_CXXFLAGS) -MMD -MP -c -o $@ $<

$(VIZD): $(VIZD_OBJS) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CXX) $(LDFLAGS) -o $@ $^ $(VIZ_LIBS) $(LDLIBS)

# The outputs' test program (tests/bats/viz_outputs.bats): viz/test/NAME.cpp
# -> $(B)/viz/test/NAME, linked with the outputs it drives (PNG frames, live
# page, event feed) but not with pio-vizd's main.
VIZ_TEST_SRCS := $(wildcard viz/test/*.cpp)
VIZ_TEST_BINS := $(VIZ_TEST_SRCS:%.cpp=$(B)/%)
VIZ_OUT_OBJS  := $(B)/viz/out_png.o $(B)/viz/http.o $(B)/viz/pub.o
TEST_BINS     += $(VIZ_TEST_BINS)
OBJS          += $(VIZ_TEST_SRCS:%.cpp=$(B)/%.o)

$(VIZ_TEST_BINS): $(B)/viz/test/%: $(B)/viz/test/%.o $(VIZ_OUT_OBJS)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CXX) $(LDFLAGS) -o $@ $^ $(VIZ_LIBS) $(LDLIBS)

# `make fuzz`: $(B)/fuzz/fuzz_viz, libFuzzer + ASan over the feed's decoders
# (FUZZ_CC, FUZZ_CFLAGS, FUZZ_LIBS from common/wire/module.mk).
FUZZ_BINS += $(B)/fuzz/fuzz_viz
$(B)/fuzz/fuzz_viz: viz/fuzz_viz.c common/wire/viz_proto.c common/wire/viz_proto.h viz/module.mk \
  $(FUZZ_CAPTURE)
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)$(FUZZ_CC) -fsanitize=fuzzer,address $(FUZZ_CFLAGS) -o $@ \
	  viz/fuzz_viz.c common/wire/viz_proto.c $(FUZZ_CAPTURE) $(FUZZ_LIBS)
