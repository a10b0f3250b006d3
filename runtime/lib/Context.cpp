//===- Context.cpp --------------------------------------------------------===//

#include "fa/runtime/Context.h"

#include "fa/runtime/Driver.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/Nvtx.h"

namespace fa {
namespace {

int deviceCount() {
  int count = 0;
  checkCu(driver().cuDeviceGetCount(&count), "counting CUDA devices");
  if (count == 0)
    throw NoDeviceError("no CUDA device found");
  return count;
}

int deviceAttribute(CUdevice device, CUdevice_attribute attribute,
                    const char *what) {
  int value = 0;
  checkCu(driver().cuDeviceGetAttribute(&value, attribute, device),
          std::string("querying the ") + what + " of a CUDA device");
  return value;
}

DeviceInfo queryDevice(int ordinal) {
  const DriverApi &cu = driver();
  CUdevice device = 0;
  checkCu(cu.cuDeviceGet(&device, ordinal),
          "opening CUDA device " + std::to_string(ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  checkCu(cu.cuDeviceGetName(name, sizeof(name), device),
          "querying the name of CUDA device " + std::to_string(ordinal));
  info.name = name;
  info.computeMajor =
      deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                      "compute capability");
  info.computeMinor =
      deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                      "compute capability");
  info.multiprocessors = deviceAttribute(
      device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count");
  info.l2CacheBytes = static_cast<std::size_t>(
      deviceAttribute(device, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 size"));
  checkCu(cu.cuDeviceTotalMem(&info.memoryBytes, device),
          "querying the memory size of CUDA device " + std::to_string(ordinal));
  return info;
}

} // namespace

std::string DeviceInfo::smName() const {
  return "sm_" + std::to_string(computeMajor) + std::to_string(computeMinor);
}

std::vector<DeviceInfo> listDevices() {
  std::vector<DeviceInfo> devices;
  for (int ordinal = 0, count = deviceCount(); ordinal < count; ++ordinal)
    devices.push_back(queryDevice(ordinal));
  return devices;
}

Context::Context(int ordinal) {
  NvtxRange range{"CUDA context"};
  int count = deviceCount();
  if (ordinal < 0 || ordinal >= count)
    throw Error("CUDA device " + std::to_string(ordinal) +
                " was asked for, but the devices are 0.." +
                std::to_string(count - 1));
  info = queryDevice(ordinal);
  const DriverApi &cu = driver();
  checkCu(cu.cuDeviceGet(&deviceHandle, ordinal),
          "opening CUDA device " + std::to_string(ordinal));
  checkCu(cu.cuDevicePrimaryCtxRetain(&context, deviceHandle),
          "creating the context of CUDA device " + std::to_string(ordinal));
  CUresult result = cu.cuCtxSetCurrent(context);
  if (result != CUDA_SUCCESS) {
    cu.cuDevicePrimaryCtxRelease(deviceHandle);
    checkCu(result, "making the context of CUDA device " +
                        std::to_string(ordinal) + " current");
  }
}

Context::~Context() {
  // Errors cannot be reported from a destructor; releasing a context we
  // retained only fails if the driver is already shutting down.
  const DriverApi &cu = driver();
  cu.cuCtxSetCurrent(nullptr);
  cu.cuDevicePrimaryCtxRelease(deviceHandle);
}

} // namespace fa
