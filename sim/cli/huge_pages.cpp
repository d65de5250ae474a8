// The command line's memory: jemalloc (linked in place of glibc's malloc,
// see CMakeLists.txt) asks the kernel for transparent huge pages for the
// memory it hands out.
//
// Why: a simulation writes its task, edge and event tables into fresh
// memory, and each fresh 4 KiB page costs a page fault the first time it is
// written (about 10-15 us each on the development VM). The GPT-3 175B
// example's first what-if touches some 370 pages, so faults were most of its
// `sim_wall_s`; a 2 MiB huge page takes one fault. Larger runs gain too:
// fewer faults and fewer TLB misses over tables of gigabytes.
//
// jemalloc reads this string at start-up (its manual, "TUNING": the
// malloc_conf global variable); "thp:always" advises huge pages
// (madvise(MADV_HUGEPAGE)) on every mapping it makes, which a kernel whose
// transparent huge pages are set to "madvise" or "always" then backs with
// huge pages where it has them free. The MALLOC_CONF environment variable
// still overrides it.
extern "C" {
extern const char* malloc_conf;  // declared as jemalloc declares it
const char* malloc_conf = "thp:always";
}
