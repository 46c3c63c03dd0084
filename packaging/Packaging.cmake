# Install rules for the desktop integration files and presets, and the CPack settings
# that turn an install into mixlab_<version>_<arch>.deb (packaging/make_deb.sh drives it).
# Included once, at the end of the top-level CMakeLists.txt.
include(GNUInstallDirs)

set(_mixlab_pkg_dir ${PROJECT_SOURCE_DIR}/packaging)

# Presets: the app has them built in (qrc); the files are installed too so users can
# copy them as starting points and pass them to mixlab-cli --model.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/resources/models/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/mixlab/models
        FILES_MATCHING PATTERN "*.json")

if(MIXLAB_WITH_GUI)
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

# Man pages and the changelog are gzipped at build time (-n: no name or timestamp inside,
# so the archive is reproducible; Debian policy wants them compressed); plain when gzip is
# missing. mixlab.1 only when the app is built.
set(_mixlab_man_pages mixlab-cli.1)
if(MIXLAB_WITH_GUI)
  list(APPEND _mixlab_man_pages mixlab.1)
endif()
set(_mixlab_docdir ${CMAKE_INSTALL_DATADIR}/doc/mixlab)
find_program(MIXLAB_GZIP gzip)
if(MIXLAB_GZIP)
  set(_mixlab_gz_outputs)
  foreach(page IN LISTS _mixlab_man_pages)
    set(_gz ${CMAKE_BINARY_DIR}/packaging/${page}.gz)
    add_custom_command(OUTPUT ${_gz}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/packaging
        COMMAND ${MIXLAB_GZIP} -9 -n -c ${_mixlab_pkg_dir}/${page} > ${_gz}
        DEPENDS ${_mixlab_pkg_dir}/${page}
        COMMENT "Compressing the ${page} man page"
        VERBATIM)
    list(APPEND _mixlab_gz_outputs ${_gz})
    install(FILES ${_gz} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  endforeach()
  # A native package's changelog is /usr/share/doc/<package>/changelog.gz.
  set(_changelog_gz ${CMAKE_BINARY_DIR}/packaging/changelog.gz)
  add_custom_command(OUTPUT ${_changelog_gz}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/packaging
      COMMAND ${MIXLAB_GZIP} -9 -n -c ${PROJECT_SOURCE_DIR}/CHANGELOG.md > ${_changelog_gz}
      DEPENDS ${PROJECT_SOURCE_DIR}/CHANGELOG.md
      COMMENT "Compressing the changelog"
      VERBATIM)
  list(APPEND _mixlab_gz_outputs ${_changelog_gz})
  add_custom_target(mixlab_manpage ALL DEPENDS ${_mixlab_gz_outputs})
  install(FILES ${_changelog_gz} DESTINATION ${_mixlab_docdir})
else()
  foreach(page IN LISTS _mixlab_man_pages)
    install(FILES ${_mixlab_pkg_dir}/${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  endforeach()
  install(FILES ${PROJECT_SOURCE_DIR}/CHANGELOG.md DESTINATION ${_mixlab_docdir} RENAME changelog)
endif()
# Debian's machine-readable copyright file (the MIT licence of LICENSE).
install(FILES ${_mixlab_pkg_dir}/copyright DESTINATION ${_mixlab_docdir})

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
    "zlib1g (>= 1:1.2.13)" "libzip4 (>= 1.7.3)" "libhdf5-103-1 (>= 1.10.8)")
if(MIXLAB_WITH_GUI)
  list(APPEND _mixlab_deps
       "libqt6core6 (>= 6.4.2)" "libqt6gui6 (>= 6.4.2)" "libqt6widgets6 (>= 6.4.2)"
       "libqt6charts6 (>= 6.4.2)" "libqt6svg6 (>= 6.4.2)" "qt6-qpa-plugins (>= 6.4.2)")
endif()
list(JOIN _mixlab_deps ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
# Lets the desktop pick up the new .desktop file, icon and MIME type without a re-login
# when the tools are present; nothing breaks without them.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "desktop-file-utils, shared-mime-info, hicolor-icon-theme, dataset-fashion-mnist")

# NVIDIA's libraries are Recommends, never Depends: the CUDA backend is a module loaded at
# run time (core/src/backends/cuda_module.cpp), so without them both programs start and train on
# the CPU, saying once what is missing. The names are those of NVIDIA's CUDA apt
# repository for Debian 12: cuBLAS and
# cuBLASLt 13 come in one package per CUDA minor version (libcublas-13-0, -13-1, ...; all
# give libcublas.so.13), cuDNN 9 built for CUDA 13 is libcudnn9-cuda-13. Debian itself
# has neither, so on a plain Debian system apt skips them without complaint.
if(MIXLAB_WITH_CUDA)
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
      "libcublas-13-0 | libcublas-13-1 | libcublas-13-2 | libcublas-13-3, libcudnn9-cuda-13")
endif()

# CPack puts the summary above this text itself.
set(_mixlab_desc_common
"MixLab designs a network, trains it under a precision policy (fp32, tf32,
mixed_fp16 with dynamic loss scaling, mixed_bf16, fp16, mixed_fp8) and compares policies
side by side in lockstep: the Qt 6 desktop app mixlab and the headless
mixlab-cli (train, compare, explain, maxbatch, ceilings, summary, check, corpus).
Model presets are installed in /usr/share/mixlab/models.")
if(MIXLAB_WITH_CUDA)
  set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "${_mixlab_desc_common}
.
The CUDA backend (/usr/lib/mixlab/libmixlab_cuda.so) is loaded at run time.
It needs NVIDIA's cuBLAS 13 and cuDNN 9 for CUDA 13 (recommended: packages
libcublas-13-0 and libcudnn9-cuda-13 from NVIDIA's CUDA repository) and an
NVIDIA driver for CUDA 13. Without them, or without a GPU, both programs
train on the CPU backend and say why.")
else()
  set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "${_mixlab_desc_common}
.
This build has the CPU backend only (built without CUDA).")
endif()

include(CPack)
