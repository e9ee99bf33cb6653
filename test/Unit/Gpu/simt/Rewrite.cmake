# Copies runtime/lib's GPU sources (and the headers they include) to OUT and
# rewrites them for rtxrt-gpu-simt-tests:
#   - the FAST files (fast/*.cu): kernel<<<grid, block, 0, stream>>>(args)
#     becomes simLaunch(kernel, SimConfig(grid, block, 0, stream), args), and
#     check(cudaGetLastError(), what) becomes simCheck(what) (SimtShim.h);
#   - fast/DeviceReduce.h: its CUDA-only guard is lifted;
#   - the DISPATCH files (the shared kernels that call fast ones): their
#     `#if defined(__CUDACC__)` call sites are enabled and ask the kernel
#     path directly (gpu::useFastKernels() is false outside CUDA).
# Usage: cmake -DLIB=<runtime/lib> -DOUT=<dir> -DFAST="a;b" -DDISPATCH="c;d"
#        -P Rewrite.cmake
foreach(dir gpu common kernels)
  file(COPY ${LIB}/${dir} DESTINATION ${OUT} FILES_MATCHING
       PATTERN "*.h" PATTERN "*.cu")
endforeach()

function(rewrite path)
  file(READ ${OUT}/gpu/${path} text)
  foreach(pair IN LISTS ARGN)
    string(REPLACE "=>" ";" pair "${pair}")
    list(GET pair 0 from)
    list(GET pair 1 to)
    string(REGEX REPLACE "${from}" "${to}" text "${text}")
  endforeach()
  file(WRITE ${OUT}/gpu/${path} "${text}")
endfunction()

foreach(file IN LISTS FAST)
  rewrite(${file}
    "([A-Za-z0-9_:<>]+)[ \n]*<<<[ \n]*=>simLaunch(\\1, SimConfig("
    ">>>\\(=>), "
    "gd::check\\(cudaGetLastError\\(\\),=>simCheck(")
endforeach()
rewrite(fast/DeviceReduce.h "#if !defined\\(__CUDACC__\\)=>#if 0")
foreach(file IN LISTS DISPATCH)
  rewrite(${file}
    "#if defined\\(__CUDACC__\\)=>#if 1"
    "gpu::useFastKernels\\(\\)=>(gpu::kernelPath() == gpu::KernelPath::Fast)")
endforeach()
