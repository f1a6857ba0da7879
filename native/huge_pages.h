// Memory for large tables probed at random (an LM's n-gram tables, lm.h; the exact A*'s state index,
// states and nodes, exact.cpp and statespace.h): an allocator whose
// blocks of 2 MiB and more are 2 MiB-aligned and advised MADV_HUGEPAGE (Linux), so that the
// kernel backs them with transparent huge pages where it allows them ("madvise" mode, the common
// default). A probe into a table of gigabytes then rarely misses the TLB: measured on the
// issue-23 model's 1.3 GB of LM tables, a random load costs ~30% less latency (a page walk per
// probe is gone; under virtualisation that walk is two-dimensional). Advice only: where the
// kernel refuses, or elsewhere than Linux, the memory is the same, in 4 KiB pages.
//
// Smaller blocks come from operator new, as std::allocator's do. Stateless: every instance is
// equal, so containers using it swap and move buffers as with std::allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace fstdecode {

template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t kHuge = std::size_t{1} << 21;  // x86-64's and arm64's 2 MiB page

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHuge) return static_cast<T*>(::operator new(bytes));
    const std::size_t rounded = (bytes + kHuge - 1) & ~(kHuge - 1);  // aligned_alloc's size rule
    void* p = std::aligned_alloc(kHuge, rounded);
    if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    ::madvise(p, rounded, MADV_HUGEPAGE);  // advice only: a failure changes nothing but speed
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) < kHuge) {
      ::operator delete(p);
    } else {
      std::free(p);
    }
  }
};

template <class T, class U>
bool operator==(const HugePageAllocator<T>&, const HugePageAllocator<U>&) {
  return true;
}
template <class T, class U>
bool operator!=(const HugePageAllocator<T>&, const HugePageAllocator<U>&) {
  return false;
}

}  // namespace fstdecode
