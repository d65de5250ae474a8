// Compiles nothing of its own: its target builds tests/precompiled.hpp once for every test executable (tests/CMakeLists.txt).
