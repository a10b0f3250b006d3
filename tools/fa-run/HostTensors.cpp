//===- HostTensors.cpp ----------------------------------------------------===//

#include "HostTensors.h"

#include "fa/runtime/Npy.h"
#include "fa/runtime/Nvtx.h"
#include "fa/runtime/RandomFill.h"

#include <vector>

namespace fa {

HostTensor readInput(const std::string &path, DType dtype) {
  HostTensor tensor = readNpy(path);
  roundToDType(tensor.values, dtype);
  return tensor;
}

void writeOutput(const std::string &path, const HostTensor &tensor,
                 DType dtype) {
  writeNpy(path, tensor, dtype == DType::F16 ? DType::F16 : DType::F32);
}

void drawRandomInputs(std::uint64_t seed, const std::vector<RunInput> &inputs,
                      DType dtype, const Stream &stream) {
  NvtxRange range{"random inputs"};
  DeviceRandom random(seed);
  for (std::size_t index = 0; index < inputs.size(); ++index)
    random.fillNormal(inputs[index].device, dtype, index, stream);
  stream.synchronize();
}

void downloadInputs(const std::vector<RunInput> &inputs, DType dtype) {
  NvtxRange range{"download inputs"};
  for (const RunInput &input : inputs)
    input.host = download(input.device, input.shape, dtype);
}

void uploadInputs(const std::vector<RunInput> &inputs, DType dtype) {
  NvtxRange range{"upload inputs"};
  for (const RunInput &input : inputs)
    input.device.upload(encode(input.host.values, dtype));
}

std::vector<std::string>
writeOutputFiles(std::initializer_list<OutputFile> outputs) {
  std::vector<std::string> written;
  for (const OutputFile &output : outputs) {
    if (output.path.empty())
      continue;
    writeOutput(output.path, output.tensor, output.heldIn);
    written.push_back(output.path);
  }
  return written;
}

} // namespace fa
