//===- KernelBindingTest.cpp - the ops' kernel bindings vs the kernels ----===//
//
// Every kernel binding (KernelOpInterface) in real train steps resolves to a
// registered runtime kernel of matching arity and parameter kinds, and the
// resolver refuses bindings that name no kernel or pass the wrong arguments.
// The train steps: the example models (GPT-2, Llama, ViT, MLP) through
// rtx-autodiff and rtx-optimizer, and GPT-2 through rtx-distribute on
// tp=2, whose vocab-parallel loss and embedding bind the rank-dependent
// arguments.
//
//===----------------------------------------------------------------------===//

#include "rtx/Target/KernelBinding.h"
#include "rtx/Dialect/RTX/IR/RTXDialect.h"
#include "rtx/Dialect/RTX/Transforms/Passes.h"
#include "rtx/Pipelines/Pipelines.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSet.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

class KernelBinding : public ::testing::Test {
protected:
  KernelBinding() {
    context.getOrLoadDialect<rtx::RTXDialect>();
    context.getOrLoadDialect<func::FuncDialect>();
  }

  OwningOpRef<ModuleOp> load(const std::string &example) {
    return parseSourceFile<ModuleOp>(
        std::string(RTX_EXAMPLES_DIR) + "/" + example, &context);
  }

  /// Resolves every binding in `module`; returns the ops' names.
  llvm::StringSet<> resolveAll(ModuleOp module) {
    llvm::StringSet<> seen;
    module.walk([&](rtx::KernelOpInterface op) {
      std::string error;
      rtx::KernelCall call = op.getKernelCall();
      EXPECT_NE(rtx::resolveKernel(call, op->getNumResults(), error), nullptr)
          << op->getName().getStringRef().str() << ": " << error;
      seen.insert(op->getName().getStringRef());
    });
    return seen;
  }

  MLIRContext context;
};

TEST_F(KernelBinding, EveryBindingOfTheExampleTrainStepsResolves) {
  llvm::StringSet<> seen;
  for (const char *example :
       {"gpt2-tiny.mlir", "llama-block.mlir", "vit-block.mlir", "mlp.mlir"}) {
    OwningOpRef<ModuleOp> module = load(example);
    ASSERT_TRUE(module) << example;
    PassManager pm(&context);
    pm.addNestedPass<func::FuncOp>(rtx::createRTXAutodiff());
    pm.addPass(rtx::createRTXOptimizer());
    ASSERT_TRUE(succeeded(pm.run(*module))) << example;
    for (const auto &name : resolveAll(*module))
      seen.insert(name.getKey());
  }
  OwningOpRef<ModuleOp> gpt2 = load("gpt2-tiny.mlir");
  ASSERT_TRUE(gpt2);
  PassManager pm(&context);
  rtx::DistributeOptions options;
  options.mesh = "tp:2";
  rtx::buildDistributePipeline(pm, options);
  ASSERT_TRUE(succeeded(pm.run(*gpt2)));
  for (const auto &name : resolveAll(*gpt2))
    seen.insert(name.getKey());
  // The walk saw the ops whose bindings matter most, forward and backward.
  for (const char *name :
       {"rtx.linear", "rtx.attention", "rtx.attention_grad", "rtx.layernorm",
        "rtx.layernorm_grad", "rtx.rmsnorm_grad", "rtx.swiglu",
        "rtx.unary_grad", "rtx.embedding", "rtx.embedding_grad",
        "rtx.vocab_logit_stats", "rtx.vocab_cross_entropy_grad",
        "rtx.adamw_update", "rtx.split", "rtx.reduce"})
    EXPECT_TRUE(seen.contains(name)) << name << " did not occur";
}

TEST_F(KernelBinding, WrongBindingsAreRefusedWithTheReason) {
  std::string error;
  rtx::KernelCall unknown("noSuchKernel");
  EXPECT_EQ(rtx::resolveKernel(unknown, 1, error), nullptr);
  EXPECT_NE(error.find("'noSuchKernel'"), std::string::npos) << error;

  rtx::KernelCall arity("softmax");
  arity.tensor(Value());
  EXPECT_EQ(rtx::resolveKernel(arity, 1, error), nullptr);
  EXPECT_NE(error.find("with 1 arguments, but it takes 2"), std::string::npos)
      << error;

  rtx::KernelCall kind("softmax");
  kind.tensor(Value()).real(1.0);
  EXPECT_EQ(rtx::resolveKernel(kind, 1, error), nullptr);
  EXPECT_NE(error.find("argument 1 of kind double, but the kernel takes int"),
            std::string::npos)
      << error;

  rtx::KernelCall results("softmax");
  results.tensor(Value()).integer(0);
  EXPECT_EQ(rtx::resolveKernel(results, 2, error), nullptr);
  EXPECT_NE(error.find("returns one tensor, for 2 results"), std::string::npos)
      << error;
  EXPECT_NE(rtx::resolveKernel(results, 1, error), nullptr);
}

} // namespace
