//===- TimeText.h - Durations in error messages -----------------*- C++ -*-===//

#ifndef FA_TRAIN_TIMETEXT_H
#define FA_TRAIN_TIMETEXT_H

#include <chrono>
#include <sstream>
#include <string>

namespace fa::train {

/// "0.3 s", "60 s": how long a rank waited, for messages.
inline std::string secondsText(std::chrono::milliseconds duration) {
  std::ostringstream text;
  text << static_cast<double>(duration.count()) / 1000 << " s";
  return text.str();
}

} // namespace fa::train

#endif // FA_TRAIN_TIMETEXT_H
