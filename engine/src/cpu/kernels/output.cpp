#include "cpu/kernels/output.h"

#include <memory>

namespace onnxscope::cpu {
namespace {

// Heap bytes left uninitialised (the kernel writes all of them).
class RawBuffer final : public Buffer {
 public:
  explicit RawBuffer(size_t n) : p_(new std::byte[n]), n_(n) {}
  const std::byte* data() const override { return p_.get(); }
  std::size_t size() const override { return n_; }
  std::byte* mutable_data() override { return p_.get(); }

 private:
  std::unique_ptr<std::byte[]> p_;
  size_t n_;
};

}  // namespace

Tensor& uninitialized_output(KernelContext& ctx, size_t i, DataType type, const Shape& shape) {
  auto count = checked_element_count(shape);
  auto bytes = count ? storage_bytes(type, *count) : std::nullopt;
  if (!bytes || type == DataType::String || *bytes > ctx.max_tensor_bytes())
    ctx.fail("output " + std::to_string(i) + " of shape " + shape_to_string(shape) + " is larger than the limit of " +
             std::to_string(ctx.max_tensor_bytes()) + " bytes");
  ctx.output(i) = Value(Tensor::from_buffer(type, shape, std::make_shared<RawBuffer>(static_cast<size_t>(*bytes))));
  return ctx.output(i).tensor();
}

}  // namespace onnxscope::cpu
