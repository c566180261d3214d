#include "tests/support/alloc_counter.h"
#include "tests/support/sanitizers.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

// AddressSanitizer brings its own operator new; replacing it would hide ASan's checks, so the count is
// only taken in builds without ASan (the test says so when it skips).
#define FABEMU_COUNT_ALLOCATIONS (!FABEMU_ASAN)

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

#if FABEMU_COUNT_ALLOCATIONS
namespace {
void* counted_alloc(std::size_t n, std::size_t align) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  void* p = nullptr;
  if (align <= alignof(std::max_align_t)) {
    p = std::malloc(n == 0 ? 1 : n);
  } else if (posix_memalign(&p, align, n == 0 ? align : n) != 0) {
    p = nullptr;
  }
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
// Out of line: when GCC inlines a replaced operator delete it sees free() on memory from operator new
// and warns (-Wmismatched-new-delete) although the pair is ours and matches.
[[gnu::noinline]] void counted_free(void* p) noexcept { std::free(p); }
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n, 0); }
void* operator new[](std::size_t n) { return counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a)); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
#endif

namespace fabemu::test {
bool counting_allocations() { return FABEMU_COUNT_ALLOCATIONS != 0; }
uint64_t allocations() { return g_allocations.load(std::memory_order_relaxed); }
}  // namespace fabemu::test
