//===- GradientCheckTest.cpp - autodiff against finite differences --------===//
//
// For every differentiable op: rtx-autodiff's gradient, executed by the
// reference executor, equals central finite differences of the forward
// program, in float64. Each case is `loss = sum(op(params) * r)` with a fixed
// random `r`, so every output element weighs in.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"
#include "rtx/Dialect/RTX/Transforms/Passes.h"
#include "rtx/Executor/Executor.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using rtxrt::Tensor;

namespace {

struct GradientCase {
  const char *name;
  /// Ops defining `%y` from `rtx.param`s; all floats are f64.
  const char *body;
  /// The type of %y.
  const char *resultType;
};

/// Wraps a case into `loss = sum(y * r)`.
std::string makeProgram(const GradientCase &c) {
  std::string type = c.resultType;
  // tensor<3x4xf64> has rank 2: one 'x' per dimension.
  int rank = std::count(type.begin(), type.end(), 'x');
  std::string dims;
  for (int d = 0; d < rank; ++d)
    dims += (d ? ", " : "") + std::to_string(d);
  return std::string("func.func @f() -> tensor<f64> {\n") + c.body +
         "\n  %loss_weights = rtx.input \"r\" : " + type +
         "\n  %weighted = rtx.mul %y, %loss_weights : " + type +
         "\n  %loss = rtx.reduce sum %weighted dims [" + dims + "] : " + type +
         " -> tensor<f64>\n  return %loss : tensor<f64>\n}\n";
}

class GradientCheck : public ::testing::TestWithParam<GradientCase> {
protected:
  GradientCheck() {
    context.getOrLoadDialect<rtx::RTXDialect>();
    context.getOrLoadDialect<func::FuncDialect>();
  }
  MLIRContext context;
};

TEST_P(GradientCheck, MatchesCentralDifferences) {
  const GradientCase &c = GetParam();
  std::string program = makeProgram(c);
  OwningOpRef<ModuleOp> forward = parseSourceString<ModuleOp>(program, &context);
  ASSERT_TRUE(forward) << program;
  OwningOpRef<ModuleOp> joint = forward->clone();
  PassManager pm(&context);
  pm.addNestedPass<func::FuncOp>(rtx::createRTXAutodiff());
  ASSERT_TRUE(succeeded(pm.run(*joint)));

  rtx::ExecutorOptions options;
  options.randomInputs = true;
  options.seed = 7;
  rtx::ExecutionResult analytic = rtx::execute(*joint, options);
  auto function = rtx::findEntry(*joint, "");

  // The parameters' initial values, to perturb one element at a time: read
  // through a copy of the program that returns them.
  std::vector<std::pair<std::string, Tensor>> params;
  for (auto param : rtx::findEntry(*forward, "").getOps<rtx::ParamOp>())
    params.push_back({param.getName().str(), Tensor()});
  {
    OwningOpRef<ModuleOp> probe = forward->clone();
    auto f = rtx::findEntry(*probe, "");
    SmallVector<Value> results;
    for (auto param : f.getOps<rtx::ParamOp>())
      results.push_back(param.getResult());
    auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
    ret->setOperands(results);
    f.setFunctionType(FunctionType::get(&context, {},
                                        ValueRange(results).getTypes()));
    rtx::ExecutionResult initial = rtx::execute(*probe, options);
    for (size_t i = 0; i < params.size(); ++i)
      params[i].second = initial.results[i];
  }

  const double h = 1e-6;
  for (size_t p = 0; p < params.size(); ++p) {
    // rtx-autodiff returns one gradient per parameter after the loss.
    Tensor grad = analytic.results[1 + p];
    ASSERT_EQ(function.getResultAttrOfType<StringAttr>(1 + p, "rtx.grad_of")
                  .getValue(),
              params[p].first);
    double diff2 = 0, ref2 = 0;
    for (int64_t i = 0; i < params[p].second.numel(); ++i) {
      double at[2];
      for (int s = 0; s < 2; ++s) {
        options.paramValues.clear();
        for (auto &[name, value] : params)
          options.paramValues[name] = value.clone();
        Tensor &perturbed = options.paramValues[params[p].first];
        perturbed.setFromDouble(i, perturbed.getAsDouble(i) + (s ? h : -h));
        at[s] = rtx::execute(*forward, options).results[0].getAsDouble(0);
      }
      double numeric = (at[1] - at[0]) / (2 * h);
      double got = grad.getAsDouble(i);
      ASSERT_TRUE(std::isfinite(got)) << "parameter " << params[p].first;
      diff2 += (got - numeric) * (got - numeric);
      ref2 += numeric * numeric;
    }
    double rel = std::sqrt(diff2 / std::max(ref2, 1e-300));
    EXPECT_LE(rel, 1e-6) << c.name << ": gradient of " << params[p].first
                         << " differs from finite differences by " << rel;
  }
}

#define P(name, shape, init)                                                   \
  "  %" name " = rtx.param \"" name "\" " init " : tensor<" shape "xf64>\n"
#define N "normal(0.0, 1.0)"

const GradientCase cases[] = {
    {"matmul", P("a", "3x5", N) P("b", "5x4", N)
     "  %y = rtx.matmul %a, %b : tensor<3x5xf64>, tensor<5x4xf64> -> tensor<3x4xf64>",
     "tensor<3x4xf64>"},
    {"matmul_transposed", P("a", "5x3", N) P("b", "4x5", N)
     "  %y = rtx.matmul %a, %b transpose_lhs transpose_rhs : tensor<5x3xf64>, tensor<4x5xf64> -> tensor<3x4xf64>",
     "tensor<3x4xf64>"},
    {"matmul_transpose_lhs", P("a", "5x3", N) P("b", "5x4", N)
     "  %y = rtx.matmul %a, %b transpose_lhs : tensor<5x3xf64>, tensor<5x4xf64> -> tensor<3x4xf64>",
     "tensor<3x4xf64>"},
    {"matmul_transpose_rhs", P("a", "3x5", N) P("b", "4x5", N)
     "  %y = rtx.matmul %a, %b transpose_rhs : tensor<3x5xf64>, tensor<4x5xf64> -> tensor<3x4xf64>",
     "tensor<3x4xf64>"},
    {"batch_matmul", P("a", "2x3x5", N) P("b", "2x4x5", N)
     "  %y = rtx.batch_matmul %a, %b transpose_rhs : tensor<2x3x5xf64>, tensor<2x4x5xf64> -> tensor<2x3x4xf64>",
     "tensor<2x3x4xf64>"},
    {"linear_bias", P("x", "2x3x5", N) P("w", "4x5", N) P("b", "4", N)
     "  %y = rtx.linear %x, %w, %b : tensor<2x3x5xf64>, tensor<4x5xf64>, tensor<4xf64> -> tensor<2x3x4xf64>",
     "tensor<2x3x4xf64>"},
    {"add_sub_mul_div", P("a", "7", N) P("b", "7", "uniform(1.0, 2.0)")
     "  %s = rtx.add %a, %b : tensor<7xf64>\n"
     "  %d = rtx.sub %s, %b : tensor<7xf64>\n"
     "  %m = rtx.mul %d, %a : tensor<7xf64>\n"
     "  %y = rtx.div %m, %b : tensor<7xf64>",
     "tensor<7xf64>"},
    {"maximum_minimum", P("a", "13", N) P("b", "13", N)
     "  %x = rtx.maximum %a, %b : tensor<13xf64>\n"
     "  %n = rtx.minimum %a, %b : tensor<13xf64>\n"
     "  %y = rtx.mul %x, %n : tensor<13xf64>",
     "tensor<13xf64>"},
    {"neg_exp_log_sqrt_rsqrt", P("a", "7", N)
     "  %e = rtx.exp %a : tensor<7xf64>\n"
     "  %s = rtx.sqrt %e : tensor<7xf64>\n"
     "  %r = rtx.rsqrt %e : tensor<7xf64>\n"
     "  %l = rtx.log %s : tensor<7xf64>\n"
     "  %m = rtx.mul %r, %l : tensor<7xf64>\n"
     "  %y = rtx.neg %m : tensor<7xf64>",
     "tensor<7xf64>"},
    {"tanh_sigmoid_relu_silu", P("a", "13", N)
     "  %t = rtx.tanh %a : tensor<13xf64>\n"
     "  %s = rtx.sigmoid %a : tensor<13xf64>\n"
     "  %r = rtx.relu %a : tensor<13xf64>\n"
     "  %u = rtx.silu %a : tensor<13xf64>\n"
     "  %ts = rtx.add %t, %s : tensor<13xf64>\n"
     "  %ru = rtx.mul %r, %u : tensor<13xf64>\n"
     "  %y = rtx.add %ts, %ru : tensor<13xf64>",
     "tensor<13xf64>"},
    {"swiglu", P("g", "13", N) P("u", "13", N)
     "  %y = rtx.swiglu %g, %u : tensor<13xf64>",
     "tensor<13xf64>"},
    {"gelu_exact_and_tanh", P("a", "13", N)
     "  %g = rtx.gelu %a : tensor<13xf64>\n"
     "  %t = rtx.gelu %a approximate : tensor<13xf64>\n"
     "  %y = rtx.mul %g, %t : tensor<13xf64>",
     "tensor<13xf64>"},
    {"where_masked_fill", P("a", "7", N) P("b", "7", N)
     "  %c = rtx.compare gt, %a, %b : tensor<7xf64> -> tensor<7xi1>\n"
     "  %w = rtx.where %c, %a, %b : tensor<7xi1>, tensor<7xf64>\n"
     "  %y = rtx.masked_fill %w, %c, 2.5 : tensor<7xf64>, tensor<7xi1>",
     "tensor<7xf64>"},
    {"dropout", P("a", "5x13", N)
     "  %y = rtx.dropout %a rate 0.3 seed 11 : tensor<5x13xf64>",
     "tensor<5x13xf64>"},
    {"layernorm", P("x", "3x7", N) P("g", "7", N) P("b", "7", N)
     "  %y = rtx.layernorm %x, %g, %b eps 1.0e-05 : tensor<3x7xf64>, tensor<7xf64>, tensor<7xf64>",
     "tensor<3x7xf64>"},
    {"rmsnorm", P("x", "3x7", N) P("g", "7", N)
     "  %y = rtx.rmsnorm %x, %g eps 1.0e-06 : tensor<3x7xf64>, tensor<7xf64>",
     "tensor<3x7xf64>"},
    {"softmax", P("x", "3x7", N)
     "  %y = rtx.softmax %x dim 0 : tensor<3x7xf64>",
     "tensor<3x7xf64>"},
    {"rope", P("x", "1x2x5x6", N)
     "  %y = rtx.rope %x theta 1.0e+04 : tensor<1x2x5x6xf64>",
     "tensor<1x2x5x6xf64>"},
    {"attention_grouped_causal", P("q", "1x4x5x3", N) P("k", "1x2x5x3", N) P("v", "1x2x5x3", N)
     "  %y = rtx.attention %q, %k, %v causal : tensor<1x4x5x3xf64>, tensor<1x2x5x3xf64>, tensor<1x2x5x3xf64> -> tensor<1x4x5x3xf64>",
     "tensor<1x4x5x3xf64>"},
    {"attention_cross", P("q", "2x2x3x4", N) P("k", "2x2x7x4", N) P("v", "2x2x7x4", N)
     "  %y = rtx.attention %q, %k, %v scale 0.3 : tensor<2x2x3x4xf64>, tensor<2x2x7x4xf64>, tensor<2x2x7x4xf64> -> tensor<2x2x3x4xf64>",
     "tensor<2x2x3x4xf64>"},
    {"embedding", P("t", "11x3", N)
     "  %ids = rtx.input \"ids\" : tensor<2x7xi32>\n"
     "  %y = rtx.embedding %t, %ids : tensor<11x3xf64>, tensor<2x7xi32> -> tensor<2x7x3xf64>",
     "tensor<2x7x3xf64>"},
    {"cross_entropy", P("z", "7x5", N)
     "  %labels = rtx.input \"labels\" : tensor<7xi32>\n"
     "  %ce = rtx.cross_entropy %z, %labels ignore_index 1 : tensor<7x5xf64>, tensor<7xi32> -> tensor<f64>\n"
     "  %y = rtx.reshape %ce : tensor<f64> -> tensor<1xf64>",
     "tensor<1xf64>"},
    {"reshape_transpose", P("x", "2x3x4", N)
     "  %r = rtx.reshape %x : tensor<2x3x4xf64> -> tensor<6x4xf64>\n"
     "  %y = rtx.transpose %r [1, 0] : tensor<6x4xf64> -> tensor<4x6xf64>",
     "tensor<4x6xf64>"},
    {"slice_split_concat", P("x", "5x7", N)
     "  %s = rtx.slice %x [1:4, 2:7] : tensor<5x7xf64> -> tensor<3x5xf64>\n"
     "  %a, %b = rtx.split %s dim 1 : tensor<3x5xf64> -> tensor<3x2xf64>, tensor<3x3xf64>\n"
     "  %e = rtx.exp %a : tensor<3x2xf64>\n"
     "  %y = rtx.concat %b, %e, %b dim 1 : tensor<3x3xf64>, tensor<3x2xf64>, tensor<3x3xf64> -> tensor<3x8xf64>",
     "tensor<3x8xf64>"},
    {"broadcast", P("x", "3x1", N)
     "  %y = rtx.broadcast %x dims [1, 2] : tensor<3x1xf64> -> tensor<2x3x5xf64>",
     "tensor<2x3x5xf64>"},
    {"reduce_sum_mean_max", P("x", "3x5", N)
     "  %s = rtx.reduce sum %x dims [1] : tensor<3x5xf64> -> tensor<3xf64>\n"
     "  %m = rtx.reduce mean %x dims [0] keepdim : tensor<3x5xf64> -> tensor<1x5xf64>\n"
     "  %x2 = rtx.reduce max %x dims [0] : tensor<3x5xf64> -> tensor<5xf64>\n"
     "  %ms = rtx.reshape %m : tensor<1x5xf64> -> tensor<5xf64>\n"
     "  %p = rtx.mul %ms, %x2 : tensor<5xf64>\n"
     "  %ps = rtx.reduce sum %p dims [0] : tensor<5xf64> -> tensor<f64>\n"
     "  %pb = rtx.broadcast %ps dims [] : tensor<f64> -> tensor<3xf64>\n"
     "  %y = rtx.mul %s, %pb : tensor<3xf64>",
     "tensor<3xf64>"},
};

INSTANTIATE_TEST_SUITE_P(EveryDifferentiableOp, GradientCheck,
                         ::testing::ValuesIn(cases),
                         [](const auto &info) { return info.param.name; });

} // namespace
