//===- ErrorReport.cpp ----------------------------------------------------===//

#include "ErrorReport.h"

#include "fa/runtime/Error.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <new>
#include <stdexcept>

namespace fa {

int runReportingErrors(const std::string &commandName,
                       const std::function<int()> &command, bool skipIfNoGpu,
                       std::ostream &errors) {
  const std::string doing = "running fa-run " + commandName;
  auto fail = [&](const std::string &message) {
    errors << "fa-run: " << message << "\n";
    return 1;
  };
  // fa::Error says what was being done; the others are named by what threw
  // them (the library or the system), most specific first.
  try {
    return command();
  } catch (const NoDeviceError &error) {
    fail(error.what());
    return skipIfNoGpu ? kSkippedExitCode : 1;
  } catch (const Error &error) {
    return fail(error.what());
  } catch (const std::bad_alloc &) {
    return fail("out of host memory while " + doing);
  } catch (const std::length_error &error) {
    // What std::vector and std::string throw for a size beyond max_size().
    return fail("out of host memory while " + doing +
                ": an allocation larger than any memory (" + error.what() +
                ")");
  } catch (const nlohmann::json::exception &error) {
    return fail("JSON error while " + doing + ": " + error.what());
  } catch (const CLI::Error &error) {
    return fail("command-line error while " + doing + ": " + error.what());
  } catch (const std::exception &error) {
    return fail("error while " + doing + ": " + error.what());
  } catch (...) {
    return fail("unknown error while " + doing);
  }
}

} // namespace fa
