# viz/module.mk - the visualization receiver pio-vizd (C++17 with VTK 9);
# read only with WITH_VIZ=1 (the Makefile).
# (The simulation's side, libpio/feed.c, and the protocol both sides speak,
# common/wire/viz_proto.c, are in libpio.)
# SPDX-License-Identifier: BSD-3-Clause
#
# Where VTK comes from, the first that applies:
#   VTK_DIR=DIR   the folder of VTK's CMake package (vtk-config.cmake), as
#                 CMake's find_package takes it (any VTK 9 build);
#   pkg-config    a VTK installed with a pkg-config file named $(VTK_PC);
#   ParaView's    the VTK that Debian's paraview-dev ships beside paraview
#                 (/usr/lib/<arch>/cmake/paraview-*/vtk), where installed;
#   Debian's      libvtk9-dev (/usr/lib/<arch>/cmake/vtk-9.*).
# A CMake package is read by CMake itself (mk/vtk/CMakeLists.txt, configured
# once into $(B)/vtk.mk): include folders and each module's library by its
# full path, with a run path where the library lies outside the linker's own
# folders (ParaView's). Which VTK was taken is in $(B)/.make-settings, so a
# change rebuilds. pio-vizd links VTK (which brings its HDF5),
# libmicrohttpd and libzmq; never PIO's parallel HDF5.
VTK_PC   ?= vtk
VTK_MODS := CommonCore CommonDataModel CommonExecutionModel CommonMisc IOXML IOXMLParser IOImage \
            FiltersCore FiltersGeneral FiltersGeometry ImagingCore RenderingCore \
            RenderingOpenGL2 RenderingFreeType RenderingAnnotation InteractionStyle
VTK_MK   := $(B)/vtk.mk
ifneq ($(VTK_DIR),)
  VTK_CMAKE := $(VTK_DIR)
else ifeq ($(shell pkg-config --exists $(VTK_PC) 2>/dev/null && echo y),y)
  VTK_CMAKE :=
  VTK_CXXFLAGS := $(patsubst -I%,-isystem %,$(call pkg,--cflags,$(VTK_PC)))
  VTK_LIBS := $(call pkg,--libs,$(VTK_PC))
  VTK_SOURCE := pkg-config:$(VTK_PC)
else
  VTK_CMAKE := $(firstword $(wildcard /usr/lib/*/cmake/paraview-*/vtk /usr/lib/cmake/paraview-*/vtk) \
    $(wildcard /usr/lib/*/cmake/vtk-9.* /usr/lib/cmake/vtk-9.* /usr/local/lib/cmake/vtk-9.*))
endif
ifneq ($(VTK_CMAKE),)
  VTK_SOURCE := cmake:$(VTK_CMAKE)
  ifneq ($(BUILDING),)
    include $(VTK_MK)
  endif
endif
# VTK_MISSING stops a viz build (only one), with what to do
VTK_MISSING := $(if $(VTK_SOURCE),,WITH_VIZ=1 needs VTK 9: install libvtk9-dev (or paraview-dev \
  where ParaView is installed; make deps does), give VTK_DIR=<folder of vtk-config.cmake>, or \
  build with WITH_VIZ=0)

$(VTK_MK): mk/vtk/CMakeLists.txt viz/module.mk $(SETTINGS)
	@rm -rf $(@D)/vtk-probe && mkdir -p $(@D)/vtk-probe
	$(call msg,VTK,$(VTK_CMAKE))cmake -S mk/vtk -B $(@D)/vtk-probe -DPIO_VTK_DIR='$(VTK_CMAKE)' \
	  -DPIO_VTK_MODULES='$(subst $(eval) ,;,$(VTK_MODS))' -DOUT=$(abspath $@.tmp) \
	  >$(@D)/vtk-probe.log 2>&1 || { tail -n 20 $(@D)/vtk-probe.log >&2; \
	  echo "VTK not usable from $(VTK_CMAKE) (log: $(@D)/vtk-probe.log); give VTK_DIR, or" \
	  "build with WITH_VIZ=0" >&2; exit 1; }
	@mv $@.tmp $@

VIZ_CXXFLAGS := -std=c++17 $(WARN) $(OPT) -g -pthread $(SANFLAGS) $(VTK_CXXFLAGS) \
                $(INC_viz) $(call pkg,--cflags,libzmq libmicrohttpd)
VIZ_LIBS := $(VTK_LIBS) $(call pkg,--libs,libmicrohttpd libzmq)

VIZD_SRCS := $(wildcard viz/*.cpp)
VIZD_OBJS := $(VIZD_SRCS:%.cpp=$(B)/%.o)
VIZD      := $(B)/bin/pio-vizd
BINS      += $(VIZD)
OBJS      += $(VIZD_OBJS)

$(B)/viz/%.o: viz/%.cpp viz/vizd.h viz/outputs.h $(SETTINGS) | $(PUB_HDRS)
	$(if $(VTK_MISSING),$(error $(VTK_MISSING)))@mkdir -p $(@D)
	$(call msg,CXX,$<)$(CXX) $(VIZ_CXXFLAGS) -MMD -MP -c -o $@ $<

$(VIZD): $(VIZD_OBJS) $(CLI_JSON_OBJ) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CXX) $(LDFLAGS) -o $@ $^ $(VIZ_LIBS) $(LDLIBS) $(JSONC_LIBS)

# The outputs' test program (tests/bats/viz_outputs.bats): viz/test/NAME.cpp
# -> $(B)/viz/test/NAME, linked with the outputs it drives (PNG frames, live
# page, event feed) but not with pio-vizd's main.
VIZ_TEST_SRCS := $(wildcard viz/test/*.cpp)
VIZ_TEST_BINS := $(VIZ_TEST_SRCS:%.cpp=$(B)/%)
VIZ_OUT_OBJS  := $(B)/viz/out_png.o $(B)/viz/http.o $(B)/viz/pub.o
TEST_BINS     += $(VIZ_TEST_BINS)
OBJS          += $(VIZ_TEST_SRCS:%.cpp=$(B)/%.o)

$(VIZ_TEST_BINS): $(B)/viz/test/%: $(B)/viz/test/%.o $(VIZ_OUT_OBJS) $(CLI_JSON_OBJ)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CXX) $(LDFLAGS) -o $@ $^ $(VIZ_LIBS) $(LDLIBS) $(JSONC_LIBS)

# `make fuzz`: $(B)/fuzz/fuzz_viz, libFuzzer + ASan over the feed's decoders
# (FUZZ_CC, FUZZ_CFLAGS, FUZZ_LIBS from common/wire/module.mk).
FUZZ_BINS += $(B)/fuzz/fuzz_viz
$(B)/fuzz/fuzz_viz: viz/fuzz_viz.c common/wire/viz_proto.c common/wire/viz_proto.h viz/module.mk \
  $(FUZZ_CAPTURE)
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)$(FUZZ_CC) -fsanitize=fuzzer,address $(FUZZ_CFLAGS) -o $@ \
	  viz/fuzz_viz.c common/wire/viz_proto.c $(FUZZ_CAPTURE) $(FUZZ_LIBS)
