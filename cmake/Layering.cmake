# The layering check: every library links exactly the libraries whose headers its files include,
# and a file that includes a header of a library its target does not link fails the build of the
# binaries (cmake/layering_check.cmake says what to do). Two target properties say what links cannot:
# XPUPERF_LINKED_FOR_OBJECTS (links kept for an object library's registrars, whose headers nothing
# includes) and XPUPERF_LOADED_INTO (a plug-in's binary, whose exported symbols it uses). Include paths alone cannot enforce this
# (every target sees src/), so the rule is checked from the targets' own sources and links.
#
# xpuperf_layering_check() runs at the end of the top-level CMakeLists.txt, once every target
# exists: it writes what the check needs (each target's kind, sources, headers and direct links) to
# layering_manifest.cmake, and adds the target xpuperf_layering, which reruns the check whenever a
# source or header changes.

# Every directory the configure added, recursively.
function(xpuperf_layering_directories dir out)
  set(all ${dir})
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    xpuperf_layering_directories(${sub} below)
    list(APPEND all ${below})
  endforeach()
  set(${out} ${all} PARENT_SCOPE)
endfunction()

function(xpuperf_layering_check)
  xpuperf_layering_directories(${CMAKE_SOURCE_DIR} dirs)
  set(targets "")
  foreach(dir IN LISTS dirs)
    get_property(in_dir DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t IN LISTS in_dir)
      get_target_property(kind ${t} TYPE)
      if(kind MATCHES "^(STATIC_LIBRARY|OBJECT_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|EXECUTABLE)$")
        list(APPEND targets ${t})
      endif()
    endforeach()
  endforeach()

  set(manifest "# Written by cmake/Layering.cmake at configure time; read by cmake/layering_check.cmake.\n")
  string(APPEND manifest "set(LAYER_ROOT \"${CMAKE_SOURCE_DIR}\")\nset(LAYER_TARGETS \"${targets}\")\n")
  set(all_files "")
  foreach(t IN LISTS targets)
    get_target_property(kind ${t} TYPE)
    get_target_property(source_dir ${t} SOURCE_DIR)
    get_target_property(sources ${t} SOURCES)
    set(files "")
    foreach(s IN LISTS sources)
      if(s MATCHES "^\\$<" OR NOT s MATCHES "\\.(cpp|cu|c|h)$")
        continue()  # generated objects ($<TARGET_OBJECTS:...>) and non-C++ files
      endif()
      cmake_path(ABSOLUTE_PATH s BASE_DIRECTORY ${source_dir} NORMALIZE OUTPUT_VARIABLE path)
      cmake_path(RELATIVE_PATH path BASE_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE relative)
      list(APPEND files ${relative})
      list(APPEND all_files ${path})
    endforeach()
    get_target_property(links ${t} LINK_LIBRARIES)
    set(ours "")
    foreach(l IN LISTS links)
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" l "${l}")
      if(l IN_LIST targets AND NOT l IN_LIST ours)
        list(APPEND ours ${l})
      endif()
    endforeach()
    get_target_property(exempt ${t} XPUPERF_LINKED_FOR_OBJECTS)
    if(NOT exempt)
      set(exempt "")
    endif()
    get_target_property(host ${t} XPUPERF_LOADED_INTO)
    if(NOT host)
      set(host "")
    endif()
    string(APPEND manifest "set(LAYER_KIND_${t} ${kind})\nset(LAYER_SOURCES_${t} \"${files}\")\n"
                           "set(LAYER_LINKS_${t} \"${ours}\")\nset(LAYER_LINKED_FOR_OBJECTS_${t} \"${exempt}\")\n"
                           "set(LAYER_LOADED_INTO_${t} \"${host}\")\n")
  endforeach()
  set(manifest_file ${CMAKE_BINARY_DIR}/layering_manifest.cmake)
  file(WRITE ${manifest_file}.new "${manifest}")
  file(COPY_FILE ${manifest_file}.new ${manifest_file} ONLY_IF_DIFFERENT)

  file(GLOB_RECURSE headers CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/xpuperf/*.h)
  set(stamp ${CMAKE_BINARY_DIR}/layering.stamp)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DMANIFEST=${manifest_file} -P ${CMAKE_SOURCE_DIR}/cmake/layering_check.cmake
    COMMAND ${CMAKE_COMMAND} -E touch ${stamp}
    DEPENDS ${manifest_file} ${CMAKE_SOURCE_DIR}/cmake/layering_check.cmake ${all_files} ${headers}
    COMMENT "Checking that every target links the libraries whose headers it includes"
    VERBATIM)
  add_custom_target(xpuperf_layering DEPENDS ${stamp})
  foreach(binary xpuperf xpuperf-torch)
    if(TARGET ${binary})
      add_dependencies(${binary} xpuperf_layering)
    endif()
  endforeach()
endfunction()
