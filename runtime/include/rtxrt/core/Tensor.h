//===- Tensor.h - a dense host tensor ---------------------------*- C++ -*-===//
//
// The runtime's tensor: a shape, an element type and a reference-counted
// row-major buffer. Copies share the buffer (like a view); clone() copies.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_TENSOR_H
#define RTXRT_TENSOR_H

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtxrt {

/// Where a tensor's buffer lives. Gpu tensors are made and used only by the
/// GPU runtime (rtxrt/device/Gpu.h); host code that reads elements (data(),
/// getAsDouble(), clone(), to()) throws an Error for them instead of
/// dereferencing device memory.
enum class Device { Host, Gpu };

/// Element types of the rtx dialect. bf16 and f16 are stored as 16-bit
/// patterns; kernels compute them in f32 and round to nearest even.
enum class DType { F32, F64, BF16, F16, I1, I32, I64 };

/// Bytes per element (i1 is stored as one byte, 0 or 1).
size_t dtypeSize(DType dtype);
/// "f32", "f64", "bf16", "f16", "i1", "i32", "i64".
const char *dtypeName(DType dtype);
bool isFloat(DType dtype);

using Shape = std::vector<int64_t>;

/// Number of elements of a shape (1 for rank 0). Throws Error naming the
/// shape when the count overflows int64 (a zero dimension makes it 0).
int64_t numElements(const Shape &shape);
/// Bytes of a tensor of `shape` and `dtype`, the size every allocation
/// takes. Throws Error naming the shape when a dimension is negative or the
/// element count or the byte size overflows int64 (`what` begins it).
int64_t tensorBytes(const Shape &shape, DType dtype,
                    const char *what = "Tensor");
/// "[4, 8]" for diagnostics.
std::string shapeToString(const Shape &shape);

/// An error in the runtime (bad shape, bad file, bad index). Messages name the
/// tensor or op involved.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class Tensor {
public:
  Tensor() = default;
  /// A zero-filled tensor.
  Tensor(Shape shape, DType dtype);

  const Shape &shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t d) const { return shape_.at(d); }
  int64_t numel() const { return numElements(shape_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool onGpu() const { return device_ == Device::Gpu; }
  size_t nbytes() const { return numel() * dtypeSize(dtype_); }
  bool defined() const { return static_cast<bool>(buffer_); }

  /// 64-byte aligned; never null for a defined tensor, even with 0 elements.
  void *raw() { return buffer_.get(); }
  const void *raw() const { return buffer_.get(); }
  /// Typed access; throws Error when T does not match the dtype.
  template <typename T> T *data();
  template <typename T> const T *data() const;

  /// A deep copy.
  Tensor clone() const;
  /// Same buffer, another shape with the same number of elements.
  Tensor reshaped(Shape shape) const;

  /// Element i (row-major) as double, whatever the dtype.
  double getAsDouble(int64_t i) const;
  /// Sets element i from a double (rounded for bf16/f16, truncated for ints).
  void setFromDouble(int64_t i, double value);

  /// This tensor converted to another dtype.
  Tensor to(DType dtype) const;

  static Tensor scalar(double value, DType dtype = DType::F32);
  /// A tensor whose contents are undefined, for kernels that write every
  /// element (saves the zero fill of the constructor).
  static Tensor uninitialized(Shape shape, DType dtype);
  /// A tensor over an existing buffer of at least nbytes() bytes (the GPU
  /// runtime's device allocations, or a view of another tensor's buffer).
  static Tensor wrap(Shape shape, DType dtype,
                     std::shared_ptr<unsigned char> buffer, Device device);
  /// The buffer itself, shared (to make views with wrap()).
  const std::shared_ptr<unsigned char> &buffer() const { return buffer_; }
  static Tensor fromVector(const std::vector<float> &values, Shape shape);
  static Tensor fromVector(const std::vector<double> &values, Shape shape);
  static Tensor fromVector(const std::vector<int32_t> &values, Shape shape);

private:
  Shape shape_;
  DType dtype_ = DType::F32;
  Device device_ = Device::Host;
  /// Allocated by Tensor.cpp (aligned, huge pages for large buffers: fresh
  /// pages are the main cost of large elementwise kernels otherwise).
  std::shared_ptr<unsigned char> buffer_;
};

/// bf16 / f16 conversions (round to nearest even).
uint16_t floatToBF16(float value);
float bf16ToFloat(uint16_t bits);
uint16_t floatToF16(float value);
float f16ToFloat(uint16_t bits);

} // namespace rtxrt

#endif // RTXRT_TENSOR_H
