// Counts heap allocations in a test binary, to check that hot paths allocate nothing in steady state.
// Link tests/support/alloc_counter.cpp into the test executable: it replaces the global operator new.
#pragma once

#include <cstdint>

namespace fabemu::test {

// False under AddressSanitizer, which owns operator new (replacing it would hide ASan's checks): tests
// that count must skip then, saying so.
bool counting_allocations();
// Allocations made by this process so far.
uint64_t allocations();

}  // namespace fabemu::test
