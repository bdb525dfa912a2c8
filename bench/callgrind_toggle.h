// CALLGRIND_TOGGLE_COLLECT for the fixed-count instruction drivers (ingest_instructions,
// route_instructions, plan_instructions): callgrind counts only between two toggles when run
// with --collect-atstart=no; without the valgrind headers the toggle compiles to nothing.
#pragma once

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#endif
