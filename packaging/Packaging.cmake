# Install rules for the desktop integration files and presets, and the CPack settings
# that turn an install into mixlab_<version>_<arch>.deb (tools/make_deb.sh drives it).
# Included once, at the end of the top-level CMakeLists.txt.
include(GNUInstallDirs)

set(_mixlab_pkg_dir ${PROJECT_SOURCE_DIR}/packaging)

# Presets: the app has them built in (qrc); the files are installed too so users can
# copy them as starting points and pass them to mixlab-cli --model.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/resources/models/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/mixlab/models
        FILES_MATCHING PATTERN "*.json")

if(MIXLAB_GUI_BUILT)
  install(FILES ${_mixlab_pkg_dir}/mixlab.desktop
          DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES ${_mixlab_pkg_dir}/mixlab.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
  install(FILES ${_mixlab_pkg_dir}/io.mixlab.MixLab.metainfo.xml
          DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
  # shared-mime-info reads share/mime/packages/*.xml: *.mixlab.json gets its own type so
  # file managers open experiments with the app (the .desktop file's MimeType).
  install(FILES ${_mixlab_pkg_dir}/mixlab-mime.xml
          DESTINATION ${CMAKE_INSTALL_DATADIR}/mime/packages RENAME mixlab.xml)
endif()

# The man page is gzipped at build time (-n: no name or timestamp inside, so the
# archive is reproducible; Debian policy wants man pages compressed); plain when gzip
# is missing.
find_program(MIXLAB_GZIP gzip)
if(MIXLAB_GZIP)
  set(_mixlab_man_gz ${CMAKE_BINARY_DIR}/packaging/mixlab-cli.1.gz)
  add_custom_command(OUTPUT ${_mixlab_man_gz}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/packaging
      COMMAND ${MIXLAB_GZIP} -9 -n -c ${_mixlab_pkg_dir}/mixlab-cli.1 > ${_mixlab_man_gz}
      DEPENDS ${_mixlab_pkg_dir}/mixlab-cli.1
      COMMENT "Compressing the mixlab-cli man page"
      VERBATIM)
  add_custom_target(mixlab_manpage ALL DEPENDS ${_mixlab_man_gz})
  install(FILES ${_mixlab_man_gz} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  install(FILES ${_mixlab_pkg_dir}/mixlab-cli.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()

# ---- CPack: one .deb ----
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mixlab)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "MixLab")
set(CPACK_PACKAGE_CONTACT "MixLab Lead <lead@mixlab.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "lab for mixed-precision neural network training experiments")
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_SOURCE_DIR}/dist)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)

set(CPACK_DEBIAN_PACKAGE_NAME mixlab)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://mixlab.invalid/")

# Versions are Debian 12's. The lists follow what the binaries actually link (readelf -d):
# the app needs Qt Core, Gui, Widgets, Charts and Svg (PrintSupport is linked but dropped
# by --as-needed: PDF export goes through QPdfWriter in Qt Gui), plus the xcb/offscreen
# platform plugins, which libqt6gui6 only recommends and without which the app cannot start.
set(_mixlab_deps
    "libc6 (>= 2.36)" "libstdc++6 (>= 12)" "libgcc-s1 (>= 3.4)" "libgomp1 (>= 12)"
    "zlib1g (>= 1:1.2.13)")
if(MIXLAB_GUI_BUILT)
  list(APPEND _mixlab_deps
       "libqt6core6 (>= 6.4.2)" "libqt6gui6 (>= 6.4.2)" "libqt6widgets6 (>= 6.4.2)"
       "libqt6charts6 (>= 6.4.2)" "libqt6svg6 (>= 6.4.2)" "qt6-qpa-plugins (>= 6.4.2)")
endif()
list(JOIN _mixlab_deps ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
# Lets the desktop pick up the new .desktop file, icon and MIME type without a re-login
# when the tools are present; nothing breaks without them.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "desktop-file-utils, shared-mime-info, hicolor-icon-theme, dataset-fashion-mnist")

# CPack puts the summary above this text itself.
# Debian 12 ships CUDA 11 and no cuDNN 9, so no Debian package can satisfy a CUDA 13
# build: the CUDA runtime is named in the description only, never in Depends/Recommends.
set(_mixlab_desc_common
"MixLab designs a network, trains it under a precision policy (fp32, tf32,
mixed_fp16 with dynamic loss scaling, mixed_bf16, fp16) and compares policies
side by side in lockstep: the Qt 6 desktop app mixlab and the headless
mixlab-cli (train, compare, explain, maxbatch, ceilings, summary, check).
Model presets are installed in /usr/share/mixlab/models.")
if(MIXLAB_WITH_CUDA)
  set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "${_mixlab_desc_common}
.
This build includes the CUDA backend and links NVIDIA's libraries dynamically:
the binaries do not start unless NVIDIA's cuBLASLt 13 (libcublasLt.so.13) and
cuDNN 9 (libcudnn.so.9) are installed, for instance from NVIDIA's apt
repository (libcublas-13-0, libcudnn9-cuda-13), and an NVIDIA driver for CUDA
13. Debian 12 does not package them. Without a GPU, --device auto uses the CPU
backend.")
else()
  set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "${_mixlab_desc_common}
.
This build has the CPU backend only (built without CUDA).")
endif()

include(CPack)
