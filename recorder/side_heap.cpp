#include "recorder/side_heap.h"

#include <sys/mman.h>
#include <unistd.h>

#include <new>

namespace acc::recorder {
namespace {

size_t pageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

size_t pageRounded(size_t bytes) { return (bytes + pageSize() - 1) / pageSize() * pageSize(); }

}  // namespace

void* PageResource::do_allocate(size_t bytes, size_t alignment) {
  // mmap's pages are aligned to the page; pools never ask for more.
  if (alignment > pageSize()) throw std::bad_alloc();
  void* p = mmap(nullptr, pageRounded(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

void PageResource::do_deallocate(void* p, size_t bytes, size_t /*alignment*/) { munmap(p, pageRounded(bytes)); }

}  // namespace acc::recorder
