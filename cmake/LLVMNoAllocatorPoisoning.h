/* Force-included (-include) into rtx's sources by RTX_SANITIZE=address; see
 * cmake/RTXSanitize.cmake for why. LLVM's headers (llvm/Support/Compiler.h)
 * include <sanitizer/asan_interface.h> under ASan and call
 * __asan_poison_memory_region / __asan_unpoison_memory_region from inline
 * allocator code (BumpPtrAllocator). Declaring them first, then defining
 * same-named macros, makes those inline calls no-ops, so rtx's instrumented
 * copies behave like the uninstrumented ones inside libMLIR.so. */
#ifndef RTX_LLVM_NO_ALLOCATOR_POISONING_H
#define RTX_LLVM_NO_ALLOCATOR_POISONING_H
#if defined(__has_include)
#if __has_include(<sanitizer/asan_interface.h>)
#include <sanitizer/asan_interface.h>
#undef ASAN_POISON_MEMORY_REGION
#undef ASAN_UNPOISON_MEMORY_REGION
#define __asan_poison_memory_region(addr, size) ((void)(addr), (void)(size))
#define __asan_unpoison_memory_region(addr, size) ((void)(addr), (void)(size))
#define ASAN_POISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#define ASAN_UNPOISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#endif
#endif
#endif
