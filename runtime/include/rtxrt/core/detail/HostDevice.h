//===- HostDevice.h - functions for host and device code --------*- C++ -*-===//
//
// RTXRT_HOST_DEVICE marks a function that CPU code, the portable GPU bodies
// and the fast CUDA kernels all call, so each formula is written once.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_DETAIL_HOSTDEVICE_H
#define RTXRT_DETAIL_HOSTDEVICE_H

#if defined(__CUDACC__)
#define RTXRT_HOST_DEVICE __host__ __device__
#else
#define RTXRT_HOST_DEVICE
#endif

#endif // RTXRT_DETAIL_HOSTDEVICE_H
